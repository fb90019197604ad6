"""``combee learn``: parse the flags, call :func:`combee.learn_async`, print the outcome."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from combee.cli import options as opt
from combee.cli.app import app, err, fail, run, stdout_console
from combee.cli.setting_options import settings_from_options, with_setting_options
from combee.cli.train import print_done, resume_run
from combee.core.batch_settings import AutoBatchSettings
from combee.core.loop_settings import SPLIT_SETTINGS, LoopSettings
from combee.declare import declared
from combee.methods.ace.settings import AceSettings
from combee.runs.layout import CACHE_FILE
from combee.settings import LEARN_SETTINGS
from combee.strategies.names import STRATEGY_HELP
from combee.strategies.settings import CombeeSettings, TopKSettings

if TYPE_CHECKING:
    from combee.engine.results import TrainResult

_GROUPS = (LoopSettings, AceSettings, CombeeSettings, TopKSettings, AutoBatchSettings)
_DECLARED = [item for group in _GROUPS for item in declared(group)]
REFUSED = [item for item in _DECLARED if item.name in SPLIT_SETTINGS]
"""Train settings that score a test or validation split, which traces lack: ``combee learn``
takes them only to say so (hidden from its help)."""
LEARN_RUN_SETTINGS = [item for item in _DECLARED if item.name not in SPLIT_SETTINGS]
"""The run settings a learn run takes (no task data or limits, no GEPA budget, nothing that
scores a split), declared in their groups as for ``combee train``."""


@app.command("learn")
@with_setting_options(REFUSED, hidden=True)
@with_setting_options(LEARN_RUN_SETTINGS)
@with_setting_options(LEARN_SETTINGS)
@opt.with_endpoint_options()
def learn_command(
    traces: Annotated[
        list[Path] | None,
        typer.Option(
            "--traces", help="Trace files or folders (repeatable).", rich_help_panel="Traces"
        ),
    ] = None,
    strategy: Annotated[str, typer.Option(help=STRATEGY_HELP)] = "combee",
    batch_size: Annotated[
        str, typer.Option(help="Traces per iteration, or auto: profile sizes, pick one.")
    ] = "40",
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not cache responses.")] = False,
    out: Annotated[Path, typer.Option(help="Run directory.")] = Path("runs/learn"),
    overwrite: Annotated[bool, typer.Option(help="Reuse an --out holding a finished run.")] = False,
    resume: opt.Resume = None,
    track: opt.Track = None,
    experiment: opt.Experiment = "combee",
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Print the run's plan (calls by role, tokens, cost) and stop."
        ),
    ] = False,
    **options: Any,
) -> None:
    """Learn a playbook from recorded agent trajectories, without re-running anything."""
    from combee.engine.learn import learn_async
    from combee.progress import ConsoleProgress
    from combee.runs.run_dir import check_run_dir

    progress = ConsoleProgress(err)
    if resume is not None:
        return resume_run(resume, progress)
    if not traces:
        raise fail("give --traces FILE_OR_FOLDER (repeatable), or --resume RUN_DIR")
    size = opt.batch_size_value(batch_size)
    if dry_run:
        return print_learn_plan(traces, strategy=strategy, batch_size=size, options=options)

    async def learn() -> TrainResult:
        check_run_dir(out, overwrite=overwrite)  # before the cache is made inside it
        cache = None if no_cache else out / CACHE_FILE
        llm = opt.endpoint_of(options, cache=cache, seed=options["seed"])
        settings = settings_from_options([*LEARN_SETTINGS, *LEARN_RUN_SETTINGS, *REFUSED], options)
        tracked = opt.trackers(track, out, settings["tracking_uri"], experiment)
        try:
            return await learn_async(
                [str(t) for t in traces], strategy=strategy, batch_size=size, llm=llm,
                run_dir=out, overwrite=overwrite, progress=progress, observers=tracked,
                **settings,
            )  # fmt: skip
        finally:
            progress.close()

    result = run(learn())
    print_done(result.summary, out)


def print_learn_plan(
    traces: list[Path], *, strategy: str, batch_size: int | str, options: dict[str, Any]
) -> None:
    """``--dry-run``: the plan of the learn run the flags describe, printed; no call is made."""
    from combee.engine.learn import learn_plan
    from combee.engine.plan import RunPlan

    async def planned() -> RunPlan:
        llm = opt.endpoint_of(options, cache=None, seed=options["seed"])
        settings = settings_from_options([*LEARN_SETTINGS, *LEARN_RUN_SETTINGS, *REFUSED], options)
        return learn_plan(
            [str(t) for t in traces], strategy=strategy, batch_size=batch_size, llm=llm,
            **settings,
        )  # fmt: skip

    lines = run(planned()).lines()
    stdout_console().print("\n".join(lines), highlight=False, markup=False, soft_wrap=True)
