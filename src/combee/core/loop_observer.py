"""The training loop's hooks for progress display and run recording."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from combee.core.controller import BatchDecision
from combee.core.evaluate import Evaluation
from combee.core.loop_reports import IterationReport
from combee.core.loop_state import LoopState

VALIDATE = "validate"
"""The label of the loop's validation, as a phase and as an evaluation."""


class LoopObserver:
    """Hooks for progress display and run recording; every hook is optional.

    The training loop calls the iteration hooks, and the evaluation hooks around each validation
    (label :data:`VALIDATE`, between an iteration's start and end); the run engine
    (:mod:`combee.api`) also calls the run-level ones (test evaluations, batch size decisions).
    """

    def on_run_start(self, config: Mapping[str, Any]) -> None:
        """The run's settings, as ``config.json`` records them, once they are all resolved."""
        return None

    def on_plan(self, plan: Any) -> None:
        """The run's plan (:class:`combee.engine.plan.RunPlan`): the calls it will make, before the
        first."""
        return None

    def on_iteration_start(self, epoch: int, iteration: int, batch_size: int) -> None:
        return None

    def on_sample_done(self) -> None:
        return None

    def on_phase(self, phase: str) -> None:
        return None

    def on_iteration_end(self, report: IterationReport[Any, Any]) -> None:
        return None

    def on_evaluation_start(self, label: str, samples: int) -> None:
        return None

    def on_evaluation_end(self, label: str, evaluation: Evaluation, seconds: float) -> None:
        return None

    def on_batch_decision(self, decision: BatchDecision) -> None:
        return None

    def on_checkpoint(self, state: LoopState[Any]) -> None:
        """Where the loop stands after an iteration (its metrics already reported)."""
        return None

    def on_run_end(self, summary: Mapping[str, Any] | None) -> None:
        """The run's final results (``final_results.json``), once written; None when the run
        stopped on an error or an interrupt (it may be resumed)."""
        return None


class ObserverGroup(LoopObserver):
    """Several observers as one, called in order."""

    def __init__(self, observers: Sequence[LoopObserver]) -> None:
        self.observers = list(observers)

    def on_run_start(self, config: Mapping[str, Any]) -> None:
        for observer in self.observers:
            observer.on_run_start(config)

    def on_plan(self, plan: Any) -> None:
        for observer in self.observers:
            observer.on_plan(plan)

    def on_iteration_start(self, epoch: int, iteration: int, batch_size: int) -> None:
        for observer in self.observers:
            observer.on_iteration_start(epoch, iteration, batch_size)

    def on_sample_done(self) -> None:
        for observer in self.observers:
            observer.on_sample_done()

    def on_phase(self, phase: str) -> None:
        for observer in self.observers:
            observer.on_phase(phase)

    def on_iteration_end(self, report: IterationReport[Any, Any]) -> None:
        for observer in self.observers:
            observer.on_iteration_end(report)

    def on_evaluation_start(self, label: str, samples: int) -> None:
        for observer in self.observers:
            observer.on_evaluation_start(label, samples)

    def on_evaluation_end(self, label: str, evaluation: Evaluation, seconds: float) -> None:
        for observer in self.observers:
            observer.on_evaluation_end(label, evaluation, seconds)

    def on_batch_decision(self, decision: BatchDecision) -> None:
        for observer in self.observers:
            observer.on_batch_decision(decision)

    def on_checkpoint(self, state: LoopState[Any]) -> None:
        for observer in self.observers:
            observer.on_checkpoint(state)

    def on_run_end(self, summary: Mapping[str, Any] | None) -> None:
        for observer in self.observers:
            observer.on_run_end(summary)
