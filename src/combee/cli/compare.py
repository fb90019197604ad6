"""``combee compare``: a grid of strategies × batch sizes × seeds, from flags or a TOML spec;
each cell a run directory under --out, then the report. Parses, calls
:func:`combee.report.compare_async`, prints."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from combee.cli import options as opt
from combee.cli.app import app, err, fail, run, stdout_console
from combee.cli.compare_settings import merged
from combee.cli.report import guarded, print_report
from combee.cli.setting_options import with_setting_options
from combee.llm.connect import Endpoint
from combee.report.spec import load_spec
from combee.runs.layout import CACHE_FILE
from combee.settings import SETTINGS

if TYPE_CHECKING:
    from combee.report import Cell, CompareResult


CELL_SETTINGS = tuple(item for item in SETTINGS if item.name != "seed")
"""The settings every cell takes, one flag each as ``combee train`` has them; each cell's seed
comes from ``--seeds``."""


@app.command("compare")
@with_setting_options(CELL_SETTINGS)
@opt.with_endpoint_options()
def compare_command(
    ctx: typer.Context,
    spec: Annotated[
        Path | None,
        typer.Option(
            help="TOML grid: strategies, batch_sizes, seeds, task, out, an endpoint table, any "
            "combee.train setting. Flags given here win over it."
        ),
    ] = None,
    strategies: Annotated[str, typer.Option(help="Comma-separated strategies.")] = "naive,combee",
    batch_sizes: Annotated[
        str, typer.Option(help="Comma-separated batch sizes (numbers or auto).")
    ] = "4,8",
    seeds: Annotated[str, typer.Option(help="Comma-separated seeds.")] = "0",
    task: opt.Task = "formula",
    method: Annotated[str, typer.Option(help="ace (playbook) | gepa (system prompt).")] = "ace",
    initial_playbook: Annotated[
        Path | None, typer.Option(help="Start every cell from this playbook (gepa: prompt).")
    ] = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="No response cache (default: one per cell).")
    ] = False,
    cache: Annotated[
        Path | None,
        typer.Option(
            help="One response cache for every cell: a cell replays the calls another made "
            "with the same prompt (the first batch's rollouts at one batch size, the test "
            "questions against an empty playbook)."
        ),
    ] = None,
    out: Annotated[Path, typer.Option(help="One run directory per cell in here.")] = Path(
        "runs/compare"
    ),
    overwrite: Annotated[
        bool,
        typer.Option(help="Train every cell again, finished ones too (their files replaced)."),
    ] = False,
    track: opt.Track = None,
    tracking_uri: opt.TrackingUri = None,
    experiment: opt.Experiment = "combee",
    report: Annotated[bool, typer.Option(help="Write the report when the grid is done.")] = True,
    title: Annotated[str | None, typer.Option(help="The report's title.")] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Print each cell's plan (calls by role, tokens, cost) and stop."
        ),
    ] = False,
    **options: Any,
) -> None:
    """Train strategies × batch sizes × seeds, one run per cell, then write the report."""
    from combee.cli.compare_progress import CellProgress, cell_line
    from combee.progress import ConsoleProgress
    from combee.report import compare_async

    if cache is not None and no_cache:
        raise fail("--cache and --no-cache contradict each other: give one")
    flags = {
        **{
            k: v
            for k, v in locals().items()
            if k not in ("ctx", "spec", "options", "cache", "dry_run")
        },
        **options,
    }
    grid_spec = guarded(lambda: load_spec(spec)) if spec is not None else None
    settings = merged(ctx, flags, grid_spec, CELL_SETTINGS)
    endpoint: dict[str, Any] = settings["endpoint"]
    if dry_run:
        return print_grid_plan(settings, Endpoint(**endpoint), overwrite=overwrite)
    progress = ConsoleProgress(err)

    def observers_for(cell: Cell, run_dir: Path) -> list[Any]:
        # Each cell is its own MLflow run, named after the cell.
        return [progress, *opt.trackers(track, run_dir, tracking_uri, experiment)]

    def llm_for(cell: Cell, run_dir: Path) -> Endpoint:
        shared = cache if cache is not None else run_dir / CACHE_FILE
        return Endpoint(**endpoint, cache=None if no_cache else shared, seed=cell.seed)

    async def grid() -> CompareResult:
        Endpoint(**endpoint)  # a bad endpoint setting stops the grid before any cell
        opt.trackers(track, settings["out"], tracking_uri, experiment)  # and a bad --track
        try:
            return await compare_async(
                settings["task"], strategies=settings["strategies"],
                batch_sizes=settings["batch_sizes"], seeds=settings["seeds"],
                out=settings["out"], llm=llm_for, report=report, title=title, overwrite=overwrite,
                progress=CellProgress(err, progress), observers=observers_for,
                **settings["train"],
            )  # fmt: skip
        finally:
            progress.close()

    result = run(grid())
    console = stdout_console()
    for cell in result.cells:
        console.print(cell_line(cell), highlight=False, markup=False, soft_wrap=True)
    counts = {status: len(result.with_status(status)) for status in ("finished", "skipped")}
    console.print(
        f"cells: {counts['finished']} trained, {counts['skipped']} skipped, "
        f"{len(result.failed)} failed; run directories in {result.out}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    if result.report is not None:
        print_report(result.report, console)
    if result.failed:
        names = ", ".join(c.cell.name for c in result.failed)
        raise fail(f"{len(result.failed)} of {len(result.cells)} cells failed: {names}")


def print_grid_plan(settings: dict[str, Any], endpoint: Endpoint, *, overwrite: bool) -> None:
    """``--dry-run``: the plan of every cell the flags describe, printed; no call is made."""
    from combee.report.compare_plan import GridPlan, compare_plan

    async def planned() -> GridPlan:
        return compare_plan(
            settings["task"], strategies=settings["strategies"],
            batch_sizes=settings["batch_sizes"], seeds=settings["seeds"], out=settings["out"],
            llm=endpoint, overwrite=overwrite, **settings["train"],
        )  # fmt: skip

    lines = run(planned()).lines()
    stdout_console().print("\n".join(lines), highlight=False, markup=False, soft_wrap=True)
