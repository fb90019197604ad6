"""Batch-size strategies for GEPA: which minibatch size each iteration reflects on, and how.

- ``sequential``: gepa as published, minibatches of 3, one proposal call.
- ``naive``: minibatches of ``b``, one proposal call over all ``b`` records.
- ``combee``: minibatches of ``b``, shuffle + scan aggregation (:class:`CombeeReflection`).
- ``auto``: like ``combee``, through a :class:`ResizableBatchSampler` whose ``size`` a batch
  size controller may change between iterations from the timings of :class:`IterationTimer`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from combee.errors import ConfigError
from combee.methods.gepa.reflection import Grouping
from combee.methods.gepa.sampler import ResizableBatchSampler

GEPA_STRATEGIES = ("sequential", "naive", "combee", "auto")
SEQUENTIAL_MINIBATCH = 3
"""gepa's own default reflection minibatch size."""


@dataclass(frozen=True)
class GepaPlan:
    strategy: str
    minibatch_size: int
    grouping: Grouping


def plan_for(strategy: str, batch_size: int) -> GepaPlan:
    """The plan for a strategy name and the requested batch size ``b``."""
    if strategy not in GEPA_STRATEGIES:
        raise ConfigError(
            f"--strategy {strategy!r} is not available with --method gepa; "
            f"use one of {', '.join(GEPA_STRATEGIES)}"
        )
    if batch_size < 1:
        raise ConfigError(f"--batch-size must be at least 1 (got {batch_size})")
    if strategy == "sequential":
        return GepaPlan(strategy, SEQUENTIAL_MINIBATCH, "single")
    if strategy == "naive":
        return GepaPlan(strategy, batch_size, "single")
    return GepaPlan(strategy, batch_size, "combee")


@dataclass(frozen=True)
class IterationTiming:
    iteration: int
    batch_size: int
    seconds: float
    accepted: bool


class IterationTimer:
    """A gepa callback timing each iteration at the batch size it ran with.

    ``on_timing`` receives every :class:`IterationTiming` as the iteration ends. A batch size
    controller plugs in here: it reads the timings and sets ``sampler.size`` for the next
    iteration (the ``auto`` strategy runs at the requested size until one is attached).
    """

    def __init__(
        self,
        sampler: ResizableBatchSampler,
        on_timing: Callable[[IterationTiming], None] | None = None,
    ) -> None:
        self.sampler = sampler
        self.on_timing = on_timing
        self.timings: list[IterationTiming] = []
        self._started: float | None = None
        self._size = sampler.size

    def on_iteration_start(self, event: Any) -> None:
        self._started = time.perf_counter()
        self._size = self.sampler.size

    def on_iteration_end(self, event: Any) -> None:
        if self._started is None:
            return
        timing = IterationTiming(
            iteration=int(event["iteration"]),
            batch_size=self._size,
            seconds=time.perf_counter() - self._started,
            accepted=bool(event["proposal_accepted"]),
        )
        self._started = None
        self.timings.append(timing)
        if self.on_timing is not None:
            self.on_timing(timing)
