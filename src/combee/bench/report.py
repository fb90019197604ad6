"""The benchmark's outputs: a terminal table, a JSON file and a PNG plot."""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

_ROLE_SHORT = {"generator": "gen", "reflector": "refl", "curator": "cur", "merge": "merge"}


def batch_label(result: Mapping[str, Any]) -> str:
    spec = result["spec"]
    if spec["strategy"] == "sequential":
        return "1"
    if spec["batch_size"] is None:
        profile = result.get("batch_profile") or {}
        return f"auto->{profile.get('chosen')}"
    return str(spec["batch_size"])


def _calls(result: Mapping[str, Any]) -> str:
    roles = result["roles"]
    parts = "/".join(str(roles[r]["calls"]) for r in _ROLE_SHORT if r in roles)
    return f"{result['llm_calls']} ({parts})"


def _tokens(result: Mapping[str, Any]) -> str:
    roles = result["roles"].values()
    prompt = sum(u["prompt_tokens"] for u in roles)
    completion = sum(u["completion_tokens"] for u in roles)
    return f"{prompt / 1000:.0f}k/{completion / 1000:.0f}k"


def _retries(result: Mapping[str, Any]) -> str:
    kinds = result["retries_by_kind"]
    return " ".join(f"{k}={v}" for k, v in kinds.items()) or "-"


def _idle(result: Mapping[str, Any]) -> str:
    """The endpoint's idle share from the server's log, then from the client's records."""
    server = result.get("server_idle_fraction")
    client = f"{100 * result['idle_fraction']:.1f}"
    return client if server is None else f"{100 * server:.1f}/{client}"


def table(report: Mapping[str, Any]) -> Table:
    grid = Table(title=f"{report['title']} (server: {report['server_command']})")
    for column in (
        "config",
        "batch",
        "train s",
        "speedup",
        "calls (g/r/c/m)",
        "tokens p/c",
        "CPU ms/call",
        "peak MB",
        "idle % srv/cli",
        "retries",
        "failed",
        "load",
    ):
        grid.add_column(
            column, justify="left" if column.startswith(("config", "calls")) else "right"
        )
    for result in report["results"]:
        speedup = result.get("speedup_vs_sequential")
        cpu = result.get("cpu_ms_per_call")
        grid.add_row(
            result["name"],
            batch_label(result),
            f"{result['train_seconds']:.2f}",
            "-" if speedup is None else f"{speedup:.1f}x",
            _calls(result),
            _tokens(result),
            "-" if cpu is None else f"{cpu:.2f}",
            f"{result['peak_rss_mb']:.0f}",
            _idle(result),
            _retries(result),
            str(result["failed_samples"]),
            ",".join(f"{x:g}" for x in result.get("load_before", [])[:1]),
        )
    return grid


def print_report(report: Mapping[str, Any], console: Console) -> None:
    console.print(table(report))
    for result in report["results"]:
        profile = result.get("batch_profile")
        if profile and profile.get("why"):
            console.print(f"[bold]{result['name']}[/]: {profile['why']}", highlight=False)
        ratio, best = result.get("chosen_vs_best_fixed"), result.get("best_fixed")
        if ratio is not None and best is not None:
            console.print(
                f"  fixed at the chosen size: {result['chosen_fixed_seconds']:.2f} s, "
                f"{100 * (ratio - 1):+.1f}% against the best fixed size {best['batch_size']} "
                f"({best['seconds']:.2f} s)",
                highlight=False,
            )


def write_json(report: Mapping[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


def _epoch_seconds(result: Mapping[str, Any]) -> float:
    epochs = result["epoch_seconds"]
    return float(sum(epochs) / len(epochs)) if epochs else float(result["train_seconds"])


def plot(reports: Sequence[Mapping[str, Any]], path: Path) -> bool:
    """Epoch time against batch size, one panel per report; False when matplotlib is missing."""
    try:
        matplotlib = importlib.import_module("matplotlib")
        matplotlib.use("Agg")
        plt = importlib.import_module("matplotlib.pyplot")
    except ImportError:
        return False
    figure, axes = plt.subplots(1, len(reports), figsize=(6.5 * len(reports), 4.8), squeeze=False)
    for axis, report in zip(axes[0], reports, strict=True):
        _panel(axis, report)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return True


def _panel(axis: Any, report: Mapping[str, Any]) -> None:
    results = report["results"]
    fixed: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for result in results:
        spec = result["spec"]
        if spec["strategy"] == "sequential":
            axis.scatter([1], [_epoch_seconds(result)], marker="s", color="black", zorder=3)
            axis.annotate(
                "sequential",
                (1, _epoch_seconds(result)),
                textcoords="offset points",
                xytext=(6, 0),
                fontsize=8,
            )
        elif spec["batch_size"] is not None:
            key = (spec["strategy"], spec["client"])
            fixed.setdefault(key, []).append((spec["batch_size"], _epoch_seconds(result)))
    for (strategy, client), points in sorted(fixed.items()):
        points.sort()
        style = "-o" if strategy == "combee" else ":^"
        axis.plot(
            [b for b, _ in points],
            [t for _, t in points],
            style,
            label=f"{strategy} fixed ({client})",
        )
    for result in results:
        spec = result["spec"]
        profile = result.get("batch_profile")
        if spec["batch_size"] is not None or not profile or not profile.get("decisions"):
            continue
        decision = profile["decisions"][0]
        chosen = decision["chosen"]
        axis.scatter(
            [chosen],
            [_epoch_seconds(result)],
            marker="*",
            s=220,
            zorder=4,
            label=f"auto ({spec['client']}): chose {chosen}, whole epoch",
        )
        sizes = [m["batch_size"] for m in decision["measurements"]]
        estimates = [m["epoch_time_s"] for m in decision["measurements"]]
        axis.scatter(sizes, estimates, marker="x", zorder=3, label="auto profile: T(b) estimates")
        fit = decision.get("fit")
        if fit and sizes:
            top = min(decision["max_batch_size"], decision["epoch_samples"])
            low, high = min(sizes), max(top, max(sizes))
            grid = [low * (high / low) ** (i / 40) for i in range(41)] if high > low else [low]
            axis.plot(
                grid,
                [fit["a"] * b ** -fit["alpha"] for b in grid],
                "--",
                linewidth=1,
                label=f"fit A*b^-{fit['alpha']:.2f}",
            )
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel("batch size")
    axis.set_ylabel("epoch time (s)")
    server = report["server"]
    axis.set_title(
        f"{str(report['title']).split(':')[0]}\nttft {server['ttft_s']:g}s, "
        f"{server['decode_tokens_per_s'] or 'inf'} tok/s, capacity {server['capacity']}",
        fontsize=9,
    )
    axis.grid(True, which="both", alpha=0.3)
    axis.legend(fontsize=7)
