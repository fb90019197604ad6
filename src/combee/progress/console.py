"""Live progress on a console (the terminal's stderr, or a log) while a run goes on."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from combee.core.controller import BatchDecision
from combee.core.episodes import episode_summary, has_episodes, invalid_steps
from combee.core.evaluate import Evaluation, SampleFailure
from combee.core.loop_observer import VALIDATE, LoopObserver
from combee.core.loop_reports import IterationReport

LOG_EVERY_S = 10.0
"""Off a terminal, at most one progress line this often (slow samples, such as an agent's
episodes on a local model, still show each one)."""


def bar(console: Console, *, live: bool = True) -> Progress:
    """The bar ``ConsoleProgress`` shows; ``live=False``: counted but never drawn by Rich (its
    owner draws it)."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not live,
    )


class ConsoleProgress(LoopObserver):
    """A bar for each evaluation and for training, one line per finished iteration, each batch
    size decision and each evaluation's accuracy (an agent's: its success rate). The bar goes
    when the run ends (:meth:`close` takes it away sooner)."""

    def __init__(self, console: Console, *, evaluation_lines: bool = True) -> None:
        self.console = console
        self.evaluation_lines = evaluation_lines
        """Print each evaluation's result (off where the command prints it itself)."""
        self.epochs = 1
        self.total = 0
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._training = False
        self.phase = ""
        self.iteration = 0
        self._label, self._done, self._total = "", 0, 0
        self._started = self._printed = time.monotonic()
        self._paused: tuple[int, float] | None = None
        """The training bar's count and start while a validation has its own bar."""

    def _start(self, description: str, total: int) -> None:
        self.close()
        self._label, self._done, self._total = description, 0, total
        self._started = self._printed = time.monotonic()
        self._progress = self._new_bar()
        self._task = self._progress.add_task(description, total=total)
        self._progress.start()
        self._redraw(now=True)

    def _new_bar(self) -> Progress:
        return bar(self.console)

    def _redraw(self, *, now: bool = False) -> None:
        """After the bar changed. On a console Rich's live display redraws it by itself;
        ``now``: a change to show at once (a start, a new description, the end)."""

    @property
    def live(self) -> bool:
        """Whether the bar is shown as it moves (else a line now and then says how far it got)."""
        return self.console.is_terminal

    def close(self) -> None:
        if self._progress is not None:
            self._redraw(now=True)
            self._progress.stop()
        self._progress, self._task, self._training = None, None, False

    def on_plan(self, plan: Any) -> None:
        for line in plan.lines():
            self.console.print(escape(line), highlight=False, soft_wrap=True)

    def on_run_start(self, config: Mapping[str, Any]) -> None:
        self.epochs = int(config.get("epochs", 1))
        samples = config.get("samples", {})
        self.total = int(samples.get("train", 0)) * self.epochs
        endpoint = config.get("endpoint", {})
        self.console.print(
            f"[bold]combee {'learn' if 'traces' in config else 'train'}[/] "
            + escape(
                f"task={config.get('task')} method={config.get('method')} "
                f"strategy={config.get('strategy')} batch={config.get('batch_size')} "
                f"train={samples.get('train')} val={samples.get('val')} "
                f"test={samples.get('test')} model={endpoint.get('model')}"
            ),
            highlight=False,
        )
        imported = config.get("trace_import")
        if isinstance(imported, Mapping) and imported.get("summary"):
            self.console.print(escape(f"traces: {imported['summary']}"), highlight=False)
        if config.get("resumed_after"):
            done = int(config["resumed_after"])
            self.console.print(
                f"resumed after iteration {done}: the run directory's checkpoint", highlight=False
            )

    def _describe(self) -> None:
        if self._progress is not None and self._task is not None:
            description = f"iteration {self.iteration}: {self.phase}"
            self._progress.update(self._task, description=description)
            self._redraw(now=True)

    def on_iteration_start(self, epoch: int, iteration: int, batch_size: int) -> None:
        if not self._training:
            self._start("train", self.total)
            self._training = True
        self.iteration = iteration
        self.phase = f"epoch {epoch}/{self.epochs}, batch {batch_size}"
        self._describe()

    def on_sample_done(self) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task)
            self._redraw()
        self._done += 1
        now = time.monotonic()
        if self.live or now - self._printed < LOG_EVERY_S:
            return
        # No live bar off a terminal (a log file, CI): a line now and then instead.
        self._printed = now
        self.console.print(
            f"{self._label}: {self._done}/{self._total} done ({now - self._started:.0f}s)",
            highlight=False,
        )

    def on_phase(self, phase: str) -> None:
        self.phase = phase
        self._describe()

    def on_iteration_end(self, report: IterationReport[Any, Any]) -> None:
        correct = sum(1 for t in report.trajectories if t.score.correct)
        levels = "+".join(str(len(level)) for level in report.trace.levels) or "0"
        val = "" if report.val_accuracy is None else f"  val {report.val_accuracy:.3f}"
        failed = (
            f"  [yellow]{len(report.failures)} failed{_invalid(report.failures)}[/]"
            if report.failures
            else ""
        )
        extra = escape("".join(f"  {k}={_compact(v)}" for k, v in report.extra.items()))
        self.console.print(
            f"iter {report.iteration:>3}  batch {report.batch_size:>3}  {report.wall_s:6.1f}s  "
            f"train {correct}/{len(report.trajectories)}  reduce calls {levels}{val}{failed}"
            f"{extra}",
            highlight=False,
        )

    def on_evaluation_start(self, label: str, samples: int) -> None:
        # A validation pauses training; any other evaluation (the test) comes after it.
        self._paused = (self._done, self._started) if self._training and label == VALIDATE else None
        self._start(label, samples)
        if self._paused is not None:
            self._describe()  # "iteration N: validate"

    def on_evaluation_end(self, label: str, evaluation: Evaluation, seconds: float) -> None:
        self.close()
        if self._paused is not None:  # a validation: its accuracy is on the iteration's line
            (done, started), self._paused = self._paused, None
            self._start("train", self.total)
            self._training, self._done, self._started = True, done, started
            if self._progress is not None and self._task is not None:
                self._progress.update(self._task, completed=done)
            self._describe()  # redraws
            return
        if not evaluation.samples or not self.evaluation_lines:
            return  # nothing was scored (learning from traces has no test split)
        failures = evaluation.failures
        failed = f", {len(failures)} failed{_invalid(failures)}" if failures else ""
        if has_episodes(evaluation):
            scored = success_text(episode_summary("split", evaluation), "split")
        else:
            scored = f"accuracy {evaluation.accuracy():.3f} on {evaluation.samples} samples"
        self.console.print(
            f"{label}: {scored}{failed} ({seconds:.1f}s)", highlight=False, markup=False
        )

    def on_run_end(self, summary: Mapping[str, Any] | None) -> None:
        self.close()

    def on_batch_decision(self, decision: BatchDecision) -> None:
        measured = ", ".join(
            f"b={m.batch_size}: {m.t_iter_s:.2f}s/iter, epoch~{m.epoch_time_s:.1f}s"
            for m in decision.measurements
        )
        self.console.print(
            f"[bold]batch size[/] epoch {decision.epoch}: {measured} -> chose "
            f"[bold]{decision.chosen}[/] ({escape(decision.why)})",
            highlight=False,
        )


def success_text(summary: Mapping[str, Any], prefix: str) -> str:
    """``success 0.750 (95% interval 0.409-0.929) on 8 episodes``, from the ``{prefix}_...``
    figures of :func:`combee.core.episodes.episode_summary`."""
    low, high = summary[f"{prefix}_success_interval_95"]
    return (
        f"success {summary[f'{prefix}_success_rate']:.3f} (95% interval {low:.3f}-{high:.3f}) "
        f"on {summary[f'{prefix}_episodes']} episodes"
    )


def _invalid(failures: Sequence[SampleFailure]) -> str:
    """`` (N invalid steps)`` when some of ``failures`` were agent steps with no valid action."""
    count = invalid_steps(failures)
    return f" ({count} invalid step{'' if count == 1 else 's'})" if count else ""


def _compact(value: object) -> str:
    """A metric for the iteration line: a mapping as ``(key=value ...)``."""
    if isinstance(value, Mapping):
        return "(" + " ".join(f"{k}={v}" for k, v in value.items()) + ")"
    return str(value)
