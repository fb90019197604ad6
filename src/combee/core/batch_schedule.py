"""How many samples each iteration takes: a fixed size, or a schedule that learns from how
long iterations took (the batch size controller, :mod:`combee.core.controller`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from combee.errors import ConfigError
from combee.tasks.base import Sample


@runtime_checkable
class BatchSchedule(Protocol):
    """Chooses each iteration's batch size and learns from how long iterations took."""

    def next_size(self, *, epoch: int, remaining: int) -> int: ...

    def record(self, *, size: int, wall_s: float) -> None: ...


@runtime_checkable
class ProfiledSchedule(BatchSchedule, Protocol):
    """A schedule that profiles batch sizes (the controller): what it measured and chose, for
    the run's profile file and results; optional."""

    decisions: Sequence[Any]

    @property
    def chosen(self) -> int | None: ...

    def profile(self) -> dict[str, Any]: ...


@dataclass
class FixedBatchSize:
    size: int

    def next_size(self, *, epoch: int, remaining: int) -> int:
        return min(self.size, remaining)

    def record(self, *, size: int, wall_s: float) -> None:
        return None


def next_batch_size(schedule: BatchSchedule, epoch: int, order: Sequence[Sample], at: int) -> int:
    """The size ``schedule`` asks for at position ``at`` of the epoch's ``order``, checked."""
    size = schedule.next_size(epoch=epoch, remaining=len(order) - at)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ConfigError(
            f"schedule {type(schedule).__name__} asked for {size!r} samples; "
            "a batch needs a whole number of at least 1",
            setting="batch_size",
        )
    return size
