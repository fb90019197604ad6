"""``combee compare``: a grid of strategies × batch sizes × seeds, from flags or a TOML spec;
each cell a run directory under --out, then the report. Parses, calls
:func:`combee.report.compare_async`, prints."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from combee.cli import options as opt
from combee.cli.app import app, err, fail, run
from combee.cli.compare_settings import merged
from combee.cli.flags import cli_message
from combee.cli.progress import ConsoleProgress
from combee.cli.report import guarded, print_report
from combee.core.controller import DEFAULT_MAX_BATCH_SIZE, DEFAULT_TAU
from combee.errors import CombeeError
from combee.llm.connect import Endpoint
from combee.llm.types import DEFAULT_MAX_TOKENS
from combee.report import Cell, CellResult, CompareObserver, CompareResult, compare_async
from combee.report.spec import load_spec
from combee.runs import CACHE_FILE


class CellProgress(CompareObserver):
    """One line per cell on stderr, and the usual live progress while a cell trains."""

    def __init__(self, console: Console, inner: ConsoleProgress) -> None:
        self.console = console
        self.inner = inner

    def on_cell_start(self, cell: Cell, index: int, total: int) -> None:
        self.console.print(
            f"[bold]\\[{index}/{total}] {escape(cell.name)}[/]: training (strategy "
            f"{escape(cell.strategy)}, batch size {cell.batch_size}, seed {cell.seed})",
            highlight=False,
        )

    def on_cell_end(self, result: CellResult, index: int, total: int) -> None:
        self.inner.close()
        self.console.print(
            f"[{index}/{total}] {cell_line(result)}", highlight=False, markup=False, soft_wrap=True
        )


def cell_line(result: CellResult) -> str:
    name = result.cell.name
    if result.status == "failed":
        error = result.exception
        message = cli_message(error) if isinstance(error, CombeeError) else result.error
        return f"{name}: failed: {message}"
    summary = result.summary or {}
    figures = ", ".join(
        f"{key}={summary[key]}" for key in ("test_accuracy", "train_seconds") if key in summary
    )
    if result.status == "skipped":
        note = f"; {result.note}" if result.note else ""
        return f"{name}: skipped (already finished: {figures or 'final_results.json exists'}){note}"
    return f"{name}: finished in {result.seconds:.1f}s ({figures})"


@app.command("compare")
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
    epochs: Annotated[int, typer.Option()] = 1,
    train_limit: Annotated[int | None, typer.Option(help="First N training samples.")] = None,
    val_limit: Annotated[int | None, typer.Option(help="First N validation samples.")] = None,
    test_limit: Annotated[int | None, typer.Option(help="First N test samples.")] = None,
    val_every: Annotated[int, typer.Option(help="Validate every N iterations (0: per epoch).")] = 0,
    duplication: Annotated[int, typer.Option(help="Copies p of each reflection (combee).")] = 2,
    fan_in: Annotated[int, typer.Option(help="Most updates one merge call sees.")] = 32,
    max_batch_size: Annotated[
        int, typer.Option(help="auto: the largest batch size it may choose.")
    ] = DEFAULT_MAX_BATCH_SIZE,
    tau: Annotated[float, typer.Option(help="auto: the marginal epoch-time gain.")] = DEFAULT_TAU,
    token_budget: Annotated[int, typer.Option(help="Playbook token cap (0: none).")] = 8000,
    temperature: Annotated[float, typer.Option()] = 0.0,
    max_tokens: Annotated[
        int, typer.Option(help="Completion tokens per call.")
    ] = DEFAULT_MAX_TOKENS,
    max_metric_calls: Annotated[int, typer.Option(help="gepa: budget of rollouts.")] = 200,
    data: opt.Data = None,
    scorer: opt.Scorer = "exact",
    initial_playbook: Annotated[
        Path | None, typer.Option(help="Start every cell from this playbook (gepa: prompt).")
    ] = None,
    baseline: Annotated[bool, typer.Option(help="Also score the start context on test.")] = False,
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
    report: Annotated[bool, typer.Option(help="Write the report when the grid is done.")] = True,
    title: Annotated[str | None, typer.Option(help="The report's title.")] = None,
    **options: Any,
) -> None:
    """Train strategies × batch sizes × seeds, one run per cell, then write the report."""
    if cache is not None and no_cache:
        raise fail("--cache and --no-cache contradict each other: give one")
    flags = {
        **{k: v for k, v in locals().items() if k not in ("ctx", "spec", "options", "cache")},
        **options,
    }
    grid_spec = guarded(lambda: load_spec(spec)) if spec is not None else None
    settings = merged(ctx, flags, grid_spec)
    endpoint: dict[str, Any] = settings["endpoint"]
    progress = ConsoleProgress(err)

    def llm_for(cell: Cell, run_dir: Path) -> Endpoint:
        shared = cache if cache is not None else run_dir / CACHE_FILE
        return Endpoint(**endpoint, cache=None if no_cache else shared, seed=cell.seed)

    async def grid() -> CompareResult:
        Endpoint(**endpoint)  # a bad endpoint setting stops the grid before any cell
        try:
            return await compare_async(
                settings["task"], strategies=settings["strategies"],
                batch_sizes=settings["batch_sizes"], seeds=settings["seeds"],
                out=settings["out"], llm=llm_for, report=report, title=title,
                progress=CellProgress(err, progress), observers=[progress], **settings["train"],
            )  # fmt: skip
        finally:
            progress.close()

    result = run(grid())
    console = Console()
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
