"""``combee train``: parse the flags, call :func:`combee.train_async`, print the outcome."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from combee.cli import options as opt
from combee.cli.app import app, err, fail, run, stdout_console
from combee.cli.setting_options import settings_from_options, with_setting_options
from combee.errors import ConfigError
from combee.runs.layout import CACHE_FILE
from combee.settings import SETTINGS
from combee.strategies.names import STRATEGY_HELP

if TYPE_CHECKING:
    from combee.engine.results import TrainResult
    from combee.progress import ConsoleProgress


@app.command("train")
@with_setting_options(SETTINGS)
@opt.with_endpoint_options()
def train_command(
    ctx: typer.Context,
    task: opt.Task = "formula",
    attack: Annotated[
        str | None,
        typer.Option(
            help="agentdojo tasks: plant one of AgentDojo's attacks (important_instructions, "
            "direct, ...) in tool outputs; the run counts planted text that reached a lesson."
        ),
    ] = None,
    method: Annotated[str, typer.Option(help="ace (playbook) | gepa (system prompt).")] = "ace",
    strategy: Annotated[
        str,
        typer.Option(help=STRATEGY_HELP),
    ] = "combee",
    batch_size: Annotated[
        str, typer.Option(help="Samples per iteration, or auto: profile sizes, pick one.")
    ] = "40",
    initial_playbook: Annotated[
        Path | None, typer.Option(help="Start from this playbook (gepa: this system prompt).")
    ] = None,
    cache: Annotated[
        Path | None, typer.Option(help="SQLite response cache (default: in --out).")
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not cache responses.")] = False,
    out: Annotated[Path, typer.Option(help="Run directory.")] = Path("runs/latest"),
    overwrite: Annotated[bool, typer.Option(help="Reuse an --out holding a finished run.")] = False,
    executor: opt.ExecutorName = "asyncio",
    ray_address: opt.RayAddress = None,
    resume: opt.Resume = None,
    track: opt.Track = None,
    tracking_uri: opt.TrackingUri = None,
    experiment: opt.Experiment = "combee",
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Print the run's plan (calls by role, tokens, cost) and stop."
        ),
    ] = False,
    **settings: Any,
) -> None:
    """Learn a playbook (or a GEPA system prompt) on a task and evaluate it on the test slice.

    Before its first call the run prints its plan: the calls it will make by role, the
    completion tokens they may write and, with --price-prompt/--price-completion, what those
    cost. With --train-limit alone, validation and test take as many samples; with no limit
    the run takes the task's whole splits (formula: 500 train, 300 val, 200 test)."""
    # What a run needs is imported once it starts, so that the help comes up at once.
    from combee.api import train_async
    from combee.progress import ConsoleProgress
    from combee.runs.run_dir import check_run_dir
    from combee.tasks.registry import with_attack

    progress = ConsoleProgress(err)
    if resume is not None:
        given = [
            "--" + name.replace("_", "-")
            for name in ctx.params
            if name != "resume" and _on_command_line(ctx, name)
        ]
        if given:
            raise fail(
                f"--resume continues the run with the settings its config.json records; "
                f"{', '.join(given)} would be ignored. Drop {'it' if len(given) == 1 else 'them'}, "
                "or start a new run in another --out"
            )
        return resume_run(resume, progress)
    size = opt.batch_size_value(batch_size)
    if dry_run:
        return print_plan(task, attack, method=method, strategy=strategy, batch_size=size,
                          settings=settings)  # fmt: skip

    async def train() -> TrainResult:
        the_task = with_attack(task, attack)
        check_run_dir(out, overwrite=overwrite)  # before the cache is made inside it
        cache_path = None if no_cache else (cache or out / CACHE_FILE)
        llm = opt.endpoint_of(settings, cache=cache_path, seed=settings["seed"])
        tracked = opt.trackers(track, out, tracking_uri, experiment)
        try:
            with opt.executor(executor, ray_address) as pool:
                return await train_async(
                    the_task, method=method, strategy=strategy, batch_size=size, llm=llm,
                    run_dir=out, overwrite=overwrite, progress=progress, observers=tracked,
                    initial_context=initial_playbook, executor=pool,
                    **settings_from_options(SETTINGS, settings),
                )  # fmt: skip
        finally:
            progress.close()

    result = run(train())
    print_done(result.summary, out)


def print_plan(task: str, attack: str | None, *, settings: dict[str, Any], **chosen: Any) -> None:
    """``--dry-run``: the plan of the run the flags describe, printed; no call is made."""
    from combee.engine.plan import RunPlan, plan
    from combee.tasks.registry import with_attack

    async def planned() -> RunPlan:
        llm = opt.endpoint_of(settings, cache=None, seed=settings["seed"])
        given = settings_from_options(SETTINGS, settings)
        return plan(with_attack(task, attack), llm=llm, **chosen, **given)

    lines = run(planned()).lines()
    stdout_console().print("\n".join(lines), highlight=False, markup=False, soft_wrap=True)


def print_done(summary: dict[str, Any], out: Path) -> None:
    agent = "invalid_steps" in summary  # an agent run: its episodes, said in words below
    keys = (
        ("planted_in_lessons", "train_seconds", "llm_calls")
        if agent
        else ("baseline_test_accuracy", "test_accuracy", "train_seconds", "llm_calls")
    )
    line = ", ".join(f"{k}={summary[k]}" for k in keys if k in summary)
    lines = [f"done: {line}", *(agent_results(summary) if agent else []), f"run directory: {out}"]
    stdout_console().print("\n".join(lines), highlight=False, markup=False)


def agent_results(summary: dict[str, Any]) -> list[str]:
    """An agent run's outcome in words: the success rate on the test split with its 95%
    interval (and the baseline's), tasks gained and lost, invalid steps and, under an attack,
    how often the planted text was obeyed."""
    from combee.core.episodes import BASELINE_TEST_EPISODES_FILE, TEST_EPISODES_FILE
    from combee.progress import success_text

    lines = []
    for prefix, label in (("baseline_test", "baseline test"), ("test", "test")):
        if summary.get(f"{prefix}_success_rate") is not None:
            lines.append(f"{label}: {success_text(summary, prefix)}")
    paired = summary.get("test_paired")
    if paired is not None:
        lines.append(
            f"test tasks gained {paired['gained']}, lost {paired['lost']} "
            f"(see {BASELINE_TEST_EPISODES_FILE} and {TEST_EPISODES_FILE})"
        )
    lines.append(
        f"invalid steps: {summary['invalid_steps']} (training {summary['train_invalid_steps']})"
    )
    for prefix, label in (("baseline_test", "baseline test"), ("test", "test")):
        attack = summary.get(f"{prefix}_attack_success_rate")
        if attack is not None:
            attacked = summary[f"{prefix}_attacked_episodes"]
            lines.append(f"{label}: attack success {attack:.3f} on {attacked} attacked episodes")
    return lines


def _on_command_line(ctx: typer.Context, name: str) -> bool:
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def resume_run(folder: Path, progress: ConsoleProgress) -> None:
    """``--resume FOLDER``: continue the run there with its recorded settings, then print."""
    from combee.engine.resume import resume_async
    from combee.runs.tracking import MlflowTracker

    async def go() -> TrainResult:
        try:
            tracker = MlflowTracker.continuing(folder)  # a tracked run goes on in its MLflow run
            observers = [] if tracker is None else [tracker]
            return await resume_async(folder, progress=progress, observers=observers)
        except ConfigError as error:
            if error.setting != "run_dir":
                raise
            raise ConfigError(error.problem, setting="resume") from None  # the folder given
        finally:
            progress.close()

    print_done(run(go()).summary, folder)
