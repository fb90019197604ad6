"""What the training loop reports: each iteration's figures, and the run's outcome."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from combee.core.evaluate import SampleFailure
from combee.core.types import ReduceTrace, Reflection, Trajectory

C = TypeVar("C")
U = TypeVar("U")


@dataclass
class IterationReport(Generic[C, U]):
    epoch: int
    iteration: int
    batch_size: int
    wall_s: float
    trajectories: list[Trajectory]
    reflections: list[Reflection]
    failures: list[SampleFailure]
    trace: ReduceTrace[U]
    context: C
    val_accuracy: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Method-specific figures for the run's metrics (GEPA: candidates, acceptance)."""


@dataclass
class LoopOutcome(Generic[C]):
    final_context: C
    best_context: C
    best_val_accuracy: float | None
    iterations: int
    train_seconds: float
    failures: list[SampleFailure] = field(default_factory=list)
