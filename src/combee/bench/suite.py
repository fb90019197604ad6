"""The benchmark suite: sequential, naive and combee against one simulated server process."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from combee.bench.plan import PRESETS, BenchPlan, BenchSettings, parse_configs
from combee.bench.report import plot, print_report, write_json
from combee.bench.runner import installed_extras, run_plan
from combee.errors import ConfigError
from combee.sim.config import SimConfig
from combee.sim.extra import require as require_sim


@dataclass(frozen=True)
class BenchOptions:
    preset: str | None
    configs: str | None
    client: str
    train_limit: int
    epochs: int
    seed: int
    concurrency: int | None
    timeout_s: float | None
    max_retries: int | None
    tau: float
    max_batch_size: int
    dedup: bool | None
    """Near-duplicate folding (None: on when the ``embed`` extra is installed)."""
    redact: bool
    screen: bool
    server: dict[str, Any]
    """SimConfig fields given on the command line (None: the preset's or the default)."""
    out: Path


def _plan(options: BenchOptions, preset_name: str | None) -> BenchPlan:
    preset = PRESETS[preset_name] if preset_name else None
    given = {k: v for k, v in options.server.items() if v is not None}
    server_fields = {**(preset.server if preset else {}), **given, "seed": options.seed}
    try:
        server = SimConfig(**server_fields)
    except TypeError as error:
        raise ConfigError(f"combee bench: bad server setting: {error}") from None
    configs_text = options.configs or (preset.configs if preset else None)
    if configs_text is None:
        raise ConfigError("combee bench: give --preset or --configs")
    if options.train_limit < 1:
        raise ConfigError(f"--train-limit must be at least 1 (got {options.train_limit})")
    # An option left at None takes the preset's value, else the plan's default.
    settings: dict[str, Any] = dict(preset.options) if preset else {}
    for item in dataclasses.fields(BenchSettings):
        if (value := getattr(options, item.name)) is not None:
            settings[item.name] = value
    return BenchPlan(
        configs=parse_configs(configs_text, default_client=options.client),
        server=server,
        title=f"combee bench {preset_name or 'custom'}: "
        + (preset.description if preset else f"Formula {options.train_limit}"),
        **settings,
    )


def run_bench(options: BenchOptions, console: Console) -> list[dict[str, Any]]:
    """Run one preset (or ``all`` of them, or a custom plan); write JSON and the plot."""
    if options.preset == "all":
        names: list[str | None] = list(PRESETS)
    elif options.preset is None or options.preset in PRESETS:
        names = [options.preset]
    else:
        raise ConfigError(f"--preset {options.preset!r}: choose one of {', '.join(PRESETS)} or all")
    plans = [(name, _plan(options, name)) for name in names]
    require_sim("combee bench (it runs the scripted server)")
    reports: list[dict[str, Any]] = []
    for name, plan in plans:
        console.print(f"[bold]{plan.title}[/]: {len(plan.configs)} configurations", highlight=False)
        console.print(
            describe_setup(plan.dedup, redact=plan.redact, screen=plan.screen), highlight=False
        )

        def progress(result: dict[str, Any]) -> None:
            console.print(
                f"  {result['name']}: {result['train_seconds']:.2f} s, "
                f"{result['llm_calls']} calls, {result['cpu_ms_per_call']} ms CPU/call, "
                f"idle {100 * result['server_idle_fraction']:.1f}% at the server "
                f"({100 * result['idle_fraction']:.1f}% from the client's records)",
                highlight=False,
            )

        report = run_plan(plan, on_result=progress)
        report["options"] = {
            k: str(v) if isinstance(v, Path) else v for k, v in dataclasses.asdict(options).items()
        }
        json_path = options.out / f"{name or 'bench'}.json"
        write_json(report, json_path)
        for result in report["results"]:
            if result.get("batch_profile"):
                safe = result["name"].replace(":", "_").replace("@", "-")
                profile_path = options.out / f"{name or 'bench'}-{safe}-batch_profile.json"
                write_json(result["batch_profile"], profile_path)
        print_report(report, console)
        console.print(f"wrote {json_path}", highlight=False)
        reports.append(report)
    png = options.out / "bench.png"
    if plot(reports, png):
        console.print(f"wrote {png}", highlight=False)
    else:
        console.print("matplotlib is not installed: no plot (pip install 'combee[bench]')")
    return reports


def describe_setup(dedup: bool | None, *, redact: bool = True, screen: bool = True) -> str:
    """One line: the extras installed, whether near-duplicate folding runs, and the guards."""
    extras = installed_extras()
    have = ", ".join(name for name, present in extras.items() if present) or "none"
    if dedup is None:
        folding = "on (embed installed)" if extras["embed"] else "off (embed not installed)"
    else:
        folding = "on" if dedup else "off"
    guards = f"redaction {'on' if redact else 'off'}, lesson screen {'on' if screen else 'off'}"
    return f"extras installed: {have}; near-duplicate folding: {folding}; {guards}"
