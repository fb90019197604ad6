"""Live progress on the terminal (stderr) while a run goes on."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from combee.core.loop import IterationReport, LoopObserver


class ProgressDisplay(LoopObserver):
    """One bar for the epoch's samples, one line per finished iteration."""

    def __init__(self, console: Console, *, total_samples: int, epochs: int) -> None:
        self.console = console
        self.epochs = epochs
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self.task: TaskID = self.progress.add_task("train", total=total_samples * epochs)
        self.phase = ""
        self.iteration = 0

    def __enter__(self) -> ProgressDisplay:
        self.progress.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.progress.stop()

    def _describe(self) -> None:
        self.progress.update(self.task, description=f"iteration {self.iteration}: {self.phase}")

    def on_iteration_start(self, epoch: int, iteration: int, batch_size: int) -> None:
        self.iteration = iteration
        self.phase = f"epoch {epoch}/{self.epochs}, batch {batch_size}"
        self._describe()

    def on_sample_done(self) -> None:
        self.progress.advance(self.task)

    def on_phase(self, phase: str) -> None:
        self.phase = phase
        self._describe()

    def on_iteration_end(self, report: IterationReport[Any, Any]) -> None:
        correct = sum(1 for t in report.trajectories if t.score.correct)
        levels = "+".join(str(len(level)) for level in report.trace.levels) or "0"
        val = "" if report.val_accuracy is None else f"  val {report.val_accuracy:.3f}"
        failed = f"  [yellow]{len(report.failures)} failed[/]" if report.failures else ""
        self.console.print(
            f"iter {report.iteration:>3}  batch {report.batch_size:>3}  {report.wall_s:6.1f}s  "
            f"train {correct}/{len(report.trajectories)}  reduce calls {levels}{val}{failed}"
        )


class CountingDisplay:
    """A bar for an evaluation pass."""

    def __init__(self, console: Console, description: str, total: int) -> None:
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self.task = self.progress.add_task(description, total=total)

    def __enter__(self) -> CountingDisplay:
        self.progress.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.progress.stop()

    def advance(self) -> None:
        self.progress.advance(self.task)
