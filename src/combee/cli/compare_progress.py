"""What ``combee compare`` prints while its grid trains: a line as each cell starts and ends."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from combee.cli.flags import cli_message
from combee.errors import CombeeError
from combee.progress import ConsoleProgress
from combee.report import Cell, CellResult, CompareObserver


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
        return f"{name}: skipped (already finished: {figures or 'final_results.json exists'})"
    return f"{name}: finished in {result.seconds:.1f}s ({figures})"
