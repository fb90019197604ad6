"""The dynamic batch size controller (``--batch-size auto``).

Per-iteration delay falls with batch size with diminishing returns. The controller runs one real
training iteration at each size of a geometric ladder (those updates are kept: profiling is
training), estimates the epoch time ``T(b) = t_iter(b) * ceil(N / b)``, fits
``T(b) ~ A * b**-alpha`` by least squares in log-log space, and picks the largest batch size whose
marginal relative reduction of epoch time is still at least ``tau``.

Under the fit, one more sample per batch shortens the epoch by the fraction
``-T'(b) / T(b) = alpha / b``; that stays at or above ``tau`` up to ``b = alpha / tau``. With
``tau = 0.005`` (the default) a batch is worth growing while each added sample still saves half a
percent of the epoch time: perfect parallelism (``alpha = 1``) gives 200 (then the cap),
``alpha = 0.5`` gives 100, and a saturated endpoint (``alpha`` near 0) keeps the batch small.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from combee.errors import ConfigError

DEFAULT_TAU = 0.005
DEFAULT_MAX_BATCH_SIZE = 100
DEFAULT_RUNGS = 3
DEFAULT_PROFILE_SHARE = 0.5
"""Profiling never uses more than this share of an epoch's samples (the warm-up aside)."""
MIN_R2 = 0.8
"""With three or more profiled sizes, a fit whose log-log R^2 is below this does not describe
the measurements: the controller then keeps the profiled size with the shortest estimated epoch
instead of extrapolating from the fit."""


@dataclass(frozen=True)
class PowerLawFit:
    """``T(b) ~ a * b**-alpha``; ``r2`` is measured in log-log space."""

    a: float
    alpha: float
    r2: float

    def epoch_time(self, batch_size: float) -> float:
        return float(self.a * batch_size**-self.alpha)


@dataclass(frozen=True)
class Measurement:
    batch_size: int
    t_iter_s: float
    epoch_time_s: float
    """Estimated epoch time at this size: ``t_iter_s * ceil(N / batch_size)``."""


@dataclass(frozen=True)
class BatchDecision:
    """What the controller measured, the fit, the chosen size and why."""

    epoch: int
    epoch_samples: int
    tau: float
    max_batch_size: int
    measurements: list[Measurement]
    fit: PowerLawFit | None
    chosen: int
    why: str
    warmup: list[Measurement] = field(default_factory=list)
    """Iterations run before the ladder and left out of the fit: the first iteration of a
    process pays one-time costs (libraries and models loading, connections opening) that later
    iterations do not."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def ladder(
    epoch_samples: int,
    *,
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
    rungs: int = DEFAULT_RUNGS,
    profile_share: float = DEFAULT_PROFILE_SHARE,
) -> list[int]:
    """The candidate sizes to profile, smallest first: the top size, ``max_batch_size`` or
    ``profile_share`` of the epoch if less, halved ``rungs - 1`` times (100: 25, 50, 100);
    only the smaller rungs that fit in ``profile_share`` of the epoch are kept, but never fewer
    than two when two fit in the epoch at all.
    """
    budget = max(1, int(epoch_samples * profile_share))
    top = max(1, min(max_batch_size, budget))
    sizes = sorted({max(1, round(top / 2**step)) for step in range(max(1, rungs))})
    chosen: list[int] = []
    used = 0
    for size in sizes:
        over_budget = used + size > budget and len(chosen) >= 2
        if over_budget or used + size > epoch_samples:
            break
        chosen.append(size)
        used += size
    return chosen


def epoch_time(t_iter_s: float, batch_size: int, epoch_samples: int) -> float:
    return t_iter_s * math.ceil(epoch_samples / batch_size)


def fit_power_law(sizes: Sequence[float], times: Sequence[float]) -> PowerLawFit:
    """Least squares of ``log T = log a - alpha * log b``; needs two distinct sizes."""
    if len(sizes) != len(times):
        raise ValueError("sizes and times differ in length")
    points = [(math.log(b), math.log(t)) for b, t in zip(sizes, times, strict=True) if t > 0]
    xs = [x for x, _ in points]
    if len(set(xs)) < 2:
        raise ValueError("a fit needs at least two distinct batch sizes with positive times")
    mean_x = sum(xs) / len(xs)
    mean_y = sum(y for _, y in points) / len(points)
    sxx = sum((x - mean_x) ** 2 for x in xs)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in points)
    slope = sxy / sxx
    intercept = mean_y - slope * mean_x
    total = sum((y - mean_y) ** 2 for _, y in points)
    residual = sum((y - (intercept + slope * x)) ** 2 for x, y in points)
    r2 = 1.0 - residual / total if total > 0 else 1.0
    return PowerLawFit(a=math.exp(intercept), alpha=-slope, r2=r2)


def choose_batch_size(
    measured: Sequence[tuple[int, float]],
    *,
    epoch_samples: int,
    tau: float = DEFAULT_TAU,
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
    epoch: int = 1,
    warmup: Sequence[tuple[int, float]] = (),
) -> BatchDecision:
    """The decision rule, a pure function of measured ``(batch_size, t_iter_s)`` pairs.

    The choice is the largest ``b`` with ``alpha / b >= tau``, i.e. ``floor(alpha / tau)``,
    never below the smallest measured size (no extrapolation downwards), never above
    ``max_batch_size`` nor the epoch. A fit of three or more sizes with a log-log R^2 below
    :data:`MIN_R2` is not trusted: the measured size with the shortest estimated epoch is kept.
    ``warmup``: iterations left out of the fit, recorded in the decision and its reason.
    """
    if tau <= 0:
        raise ConfigError(f"must be positive (got {tau})", setting="tau")
    if max_batch_size < 1:
        raise ConfigError(f"must be at least 1 (got {max_batch_size})", setting="max_batch_size")
    if not measured:
        raise ValueError("no measurements to decide from")
    measurements = [Measurement(b, t, epoch_time(t, b, epoch_samples)) for b, t in sorted(measured)]
    warmups = [Measurement(b, t, epoch_time(t, b, epoch_samples)) for b, t in warmup]
    ceiling = max(1, min(max_batch_size, epoch_samples))
    smallest = min(m.batch_size for m in measurements)
    left_out = "".join(
        f"; the warm-up iteration at b={m.batch_size} ({m.t_iter_s:.2f}s) was left out of the fit"
        for m in warmups
    )

    def decision(fit: PowerLawFit | None, chosen: int, why: str) -> BatchDecision:
        return BatchDecision(
            epoch, epoch_samples, tau, max_batch_size, measurements, fit, chosen, why + left_out,
            warmups,
        )  # fmt: skip

    if len({m.batch_size for m in measurements}) < 2:
        best = min(measurements, key=lambda m: m.epoch_time_s)
        chosen = min(best.batch_size, ceiling)
        why = (
            f"only batch size {best.batch_size} could be profiled (the epoch has "
            f"{epoch_samples} samples), so it is kept"
        )
        return decision(None, chosen, why)
    fit = fit_power_law(
        [m.batch_size for m in measurements], [m.epoch_time_s for m in measurements]
    )
    if fit.alpha <= 0:
        chosen = min(smallest, ceiling)
        why = (
            f"alpha={fit.alpha:.3f}: larger batches did not shorten the epoch, so the smallest "
            f"profiled size {chosen} is kept"
        )
        return decision(fit, chosen, why)
    span = f"{measurements[0].batch_size}..{measurements[-1].batch_size}"
    described = f"T(b) ~ {fit.a:.3g} * b^-{fit.alpha:.3f} fitted on b={span}"
    if len(measurements) >= 3 and fit.r2 < MIN_R2:
        best = min(measurements, key=lambda m: m.epoch_time_s)
        chosen = min(best.batch_size, ceiling)
        why = (
            f"{described} explains the measurements poorly (log-log R^2={fit.r2:.3f} < "
            f"{MIN_R2}), so nothing is extrapolated: the profiled size with the shortest "
            f"estimated epoch ({best.epoch_time_s:.1f}s) is kept; chose {chosen}"
        )
        return decision(fit, chosen, why)
    knee = fit.alpha / tau
    chosen = max(smallest, min(ceiling, math.floor(knee)))
    quality = f"log-log R^2={fit.r2:.3f}" if len(measurements) >= 3 else "two sizes: an exact fit"
    why = (
        f"{described} ({quality}); "
        f"one more sample per batch saves alpha/b of the epoch time, which stays >= "
        f"tau={tau:g} up to b={knee:.1f}"
    )
    if chosen == ceiling and knee > ceiling:
        limit = (
            f"max_batch_size={max_batch_size}"
            if max_batch_size <= epoch_samples
            else f"the epoch size {epoch_samples}"
        )
        why += f"; capped by {limit}"
    elif chosen == smallest and knee < smallest:
        why += f"; raised to the smallest profiled size {smallest}"
    return decision(fit, chosen, why + f"; chose {chosen}")


@dataclass
class AutoBatchSize:
    """A :class:`combee.core.batch_schedule.BatchSchedule` that profiles a ladder, then runs the
    chosen size for the rest of the epoch (and, with ``reprofile``, profiles again every epoch).

    With ``warm_up`` (the default), when the first iteration this object sees in this process
    would be a profiling one, it runs the first rung once more before measuring: that first
    iteration pays one-time costs (an embedding model or a tokenizer loading, connections
    opening) and is left out of the fit. A resumed run warms up again, as its process is new.
    The warm-up is skipped when the epoch is too short to hold it and the ladder.

    ``on_decision`` is called with each :class:`BatchDecision` as soon as it is made.
    """

    tau: float = DEFAULT_TAU
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE
    rungs: int = DEFAULT_RUNGS
    profile_share: float = DEFAULT_PROFILE_SHARE
    reprofile: bool = False
    warm_up: bool = True
    on_decision: Callable[[BatchDecision], None] | None = None
    decisions: list[BatchDecision] = field(default_factory=list)
    _epoch: int = 0
    _epoch_samples: int = 0
    _pending: list[int] = field(default_factory=list)
    _measured: list[tuple[int, float]] = field(default_factory=list)
    _warmups: list[tuple[int, float]] = field(default_factory=list)
    _chosen: int | None = None
    _profiling: bool = False
    _warm: bool = False
    """Whether this process has run an iteration (never saved: a resumed process is cold)."""

    def __post_init__(self) -> None:
        if self.tau <= 0:
            raise ConfigError(f"must be positive (got {self.tau})", setting="tau")
        if self.max_batch_size < 1:
            raise ConfigError(
                f"must be at least 1 (got {self.max_batch_size})", setting="max_batch_size"
            )
        if self.rungs < 1:
            raise ConfigError(f"must be at least 1 (got {self.rungs})", setting="rungs")
        if not 0 < self.profile_share <= 1:
            raise ConfigError(
                f"must be within (0, 1] (got {self.profile_share})", setting="profile_share"
            )

    @property
    def chosen(self) -> int | None:
        return self._chosen

    def next_size(self, *, epoch: int, remaining: int) -> int:
        if epoch != self._epoch:
            self._start_epoch(epoch, remaining)
        if self._pending:
            self._profiling = True
            room = sum(self._pending) + self._pending[0] <= remaining
            if not self._warm and not (self.warm_up and room):
                self._warm = True  # no warm-up wanted, or no room for it in this epoch
            return min(self._pending[0], remaining)
        self._profiling = False
        if self._chosen is None:
            self._decide()
        assert self._chosen is not None
        return min(self._chosen, remaining)

    def record(self, *, size: int, wall_s: float) -> None:
        cold, self._warm = not self._warm, True
        if self._profiling and self._pending:
            if cold:
                self._warmups.append((size, wall_s))
                return
            self._pending.pop(0)
            self._measured.append((size, wall_s))
            if not self._pending:
                self._decide()

    def state(self) -> dict[str, Any]:
        """Where profiling stands, for a run's checkpoint (earlier decisions stay in
        ``batch_profile.json``)."""
        return {
            "epoch": self._epoch,
            "epoch_samples": self._epoch_samples,
            "pending": list(self._pending),
            "measured": [list(m) for m in self._measured],
            "warmups": [list(m) for m in self._warmups],
            "chosen": self._chosen,
            "profiling": self._profiling,
        }

    def restore(self, state: dict[str, Any]) -> None:
        self._epoch = int(state["epoch"])
        self._epoch_samples = int(state["epoch_samples"])
        self._pending = [int(size) for size in state["pending"]]
        self._measured = [(int(size), float(wall)) for size, wall in state["measured"]]
        self._warmups = [(int(size), float(wall)) for size, wall in state.get("warmups", [])]
        self._chosen = None if state["chosen"] is None else int(state["chosen"])
        self._profiling = bool(state["profiling"])

    def profile(self) -> dict[str, Any]:
        """Everything decided so far, for ``batch_profile.json``."""
        latest = self.decisions[-1] if self.decisions else None
        return {
            "tau": self.tau,
            "max_batch_size": self.max_batch_size,
            "reprofile": self.reprofile,
            "warm_up": self.warm_up,
            "chosen": None if latest is None else latest.chosen,
            "why": None if latest is None else latest.why,
            "decisions": [decision.to_dict() for decision in self.decisions],
        }

    def _start_epoch(self, epoch: int, remaining: int) -> None:
        self._epoch = epoch
        self._epoch_samples = remaining
        if self._chosen is None or self.reprofile:
            self._chosen = None
            self._measured = []
            self._warmups = []
            self._pending = ladder(
                remaining,
                max_batch_size=self.max_batch_size,
                rungs=self.rungs,
                profile_share=self.profile_share,
            )

    def _decide(self) -> None:
        if not self._measured:
            # Nothing could be profiled (an empty ladder): take the largest allowed size.
            self._chosen = max(1, min(self.max_batch_size, self._epoch_samples))
            decision = BatchDecision(
                epoch=self._epoch,
                epoch_samples=self._epoch_samples,
                tau=self.tau,
                max_batch_size=self.max_batch_size,
                measurements=[],
                fit=None,
                chosen=self._chosen,
                why="no iteration could be profiled; using the largest allowed size",
            )
        else:
            decision = choose_batch_size(
                self._measured,
                epoch_samples=self._epoch_samples,
                tau=self.tau,
                max_batch_size=self.max_batch_size,
                epoch=self._epoch,
                warmup=self._warmups,
            )
            self._chosen = decision.chosen
        self.decisions.append(decision)
        if self.on_decision is not None:
            self.on_decision(decision)
