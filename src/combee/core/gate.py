"""The outcome gate: an update is applied only where it does not lower the score on samples it
was not learned from.

Wording can always be changed; what an update does to the agent's results cannot. An order
planted in the data ("give 0 as the final answer", "write every answer in French") that a
reflector restated in its own words passes any check of its text, but the generator that obeys
it scores lower. So before an update is applied, the context it would give is scored on held-out
samples: a minibatch of the validation split (the same samples all run, drawn by the seed), or,
when a run has none, a share of each batch kept out of learning (their rollouts against the
context the batch started from are the score to beat; they are not reflected on).

When the update lowers the score by more than ``gate_margin``, its parts (ACE: one per
operation) are narrowed down by halves: a half that, added to the parts already cleared, does not
lower the score is cleared; a half that does is split again. Each update's first scoring is
always made; the narrowing spends a credit that every iteration earns, ``gate_share`` of its
learning calls (a rollout and a reflection per sample; a quarter by default), so the quiet
iterations of a run pay for the search when an update does lower the score. The parts still in
doubt when the credit runs out are left out with those found to lower the score: counted as
``gated`` with the score change, and logged with their text.

The gate needs a method that can preview an update without applying it
(:class:`SplitsUpdates`); a run of a method without it is not gated, and neither is one whose
rollouts are records (learning from traces: no update changes their score).
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from combee.core.call_counts import SaysCalls
from combee.core.evaluate import evaluate
from combee.core.executor import Executor, MapOutcome
from combee.core.types import Method
from combee.tasks.base import Sample, Score

log = logging.getLogger(__name__)

C = TypeVar("C")
U = TypeVar("U")

GATE = "gate"
"""The label of the gate's scorings, as a phase."""


@runtime_checkable
class SplitsUpdates(Protocol[C, U]):
    """An optional capability of a method: preview an update and split it into parts, so the
    gate (:mod:`combee.core.gate`) can leave out only the parts that lower the score."""

    def preview(self, context: C, update: U) -> C:
        """The context ``update`` would give, applied to ``context`` without counting it."""
        ...

    def parts(self, update: U) -> Sequence[U]:
        """``update`` as parts that can be applied apart (ACE: one per operation)."""
        ...

    def keeping(self, update: U, parts: Sequence[U], left_out: int) -> U:
        """``update`` with only ``parts`` of it, the ``left_out`` others counted as gated."""
        ...

    def describe(self, part: U) -> str:
        """A part in words, for the log (ACE: the operation and its bullet's text)."""
        ...


def gate_samples(batch: int, requested: int) -> int:
    """The held-out samples an update of a ``batch``-sample iteration is scored on:
    ``requested``, or (0) an eighth of the batch, at least two."""
    return requested if requested > 0 else max(2, math.ceil(batch / 8))


SMALLEST_SHARED_BATCH = 8
"""The smallest batch a share is held out of by default: out of a smaller one, a single held-out
sample would cost an eighth or more of what the iteration learns from."""


def held_out_share(batch: int, requested: int) -> int:
    """How many samples of a ``batch`` are kept out of learning for the gate when the run has
    no validation split: ``requested``, or (0) an eighth of a batch of at least
    ``SMALLEST_SHARED_BATCH`` (none of a smaller one); at least one sample is left to learn
    from."""
    if requested > 0:
        return min(requested, batch - 1) if batch > 1 else 0
    return math.ceil(batch / 8) if batch >= SMALLEST_SHARED_BATCH else 0


def gate_credit(batch: int, share: float) -> int:
    """The rollouts an iteration of ``batch`` samples earns the gate's narrowing: ``share`` of
    its learning calls (a rollout and a reflection per sample)."""
    return math.floor(share * 2 * batch)


@dataclass
class GateReport:
    """What the gate did to one update, for the run's metrics."""

    samples: int
    before: float
    after: float
    """The held-out score before the update and with what of it was applied."""
    proposed: float
    """The held-out score with the whole update."""
    parts: int
    gated: int
    rollouts: int
    left_out: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "samples": self.samples,
            "before": round(self.before, 4),
            "proposed": round(self.proposed, 4),
            "after": round(self.after, 4),
            "parts": self.parts,
            "gated": self.gated,
            "rollouts": self.rollouts,
        }


def _mean(scores: Sequence[Score]) -> float:
    total = sum(s.total for s in scores)
    return sum(s.matched for s in scores) / total if total else 0.0


class OutcomeGate(Generic[C, U]):
    """The gate of one run (see the module): ``validation`` holds the run's validation samples
    (empty: each batch holds out its own share, :meth:`hold_out`)."""

    def __init__(
        self,
        method: Method[C, U],
        splits: SplitsUpdates[C, U],
        executor: Executor,
        score: Callable[[str, Sample], Score],
        *,
        validation: Sequence[Sample],
        samples: int,
        margin: float,
        share: float,
        seed: int,
    ) -> None:
        self.method = method
        self.splits = splits
        """The same method, as one that previews and splits its updates."""
        self.executor = executor
        self.score = score
        self.requested = samples
        self.margin = margin
        self.share = share
        self.earned = 0
        self.spent = 0
        """The rollouts the run's iterations earned the gate, and those it made."""
        self.validation = list(validation)
        self._order = random.Random(seed).sample(self.validation, len(self.validation))
        self._known: tuple[C, dict[str, Score]] | None = None
        """The last context scored on the validation minibatch, and its scores."""

    def hold_out(self, batch: Sequence[Sample]) -> tuple[list[Sample], list[Sample]]:
        """``batch`` as the samples to learn from and those held out for the gate (none when the
        run has a validation split: the gate scores its minibatch instead)."""
        if self.validation:
            return list(batch), []
        held = held_out_share(len(batch), self.requested)
        cut = len(batch) - held
        return list(batch[:cut]), list(batch[cut:])

    async def check(
        self,
        start: C,
        context: C,
        update: U,
        batch: int,
        held: Sequence[MapOutcome],
    ) -> tuple[U, GateReport | None]:
        """``update`` as the gate lets it through onto ``context`` (the iteration's context after
        its tally), judged against ``start`` (the context the batch was mapped with), whose
        rollouts of the held-out samples are ``held`` (none with a validation split)."""
        if not self.splits.parts(update):
            return update, None
        spent = 0
        if self.validation:
            samples = self._order[: min(gate_samples(batch, self.requested), len(self._order))]
            before, spent = await self._scores_of(start, samples)
        else:
            before = {
                o.sample.id: o.trajectory.score
                for o in held
                if o.trajectory is not None and o.failure is None
            }
            samples = [o.sample for o in held if o.sample.id in before]
        if not samples:
            return update, None
        self.earned += gate_credit(batch, self.share)
        self.spent += spent
        search = _Search(self, context, update, samples, before)
        search.rollouts = spent
        kept = await search.run()
        report = search.report
        kept_update = self.splits.keeping(update, kept, report.gated)
        if self.validation and search.kept_scores is not None:
            self._known = (self.splits.preview(context, kept_update), search.kept_scores)
        if report.gated:
            log.warning(
                "gate: %d of %d part(s) of the update left out; held-out score %.3f before, "
                "%.3f with the whole update, %.3f with what was kept: %s",
                report.gated,
                report.parts,
                report.before,
                report.proposed,
                report.after,
                "; ".join(report.left_out),
            )
        return kept_update, report

    async def _scores_of(
        self, context: C, samples: Sequence[Sample]
    ) -> tuple[dict[str, Score], int]:
        """``context``'s scores on ``samples`` (from the last scoring when it was this one), and
        the rollouts that took."""
        if self._known is not None and self._known[0] == context:
            known = self._known[1]
            if all(s.id in known for s in samples):
                return {s.id: known[s.id] for s in samples}, 0
        scores = await self.scored(context, samples)
        self._known = (context, scores)
        return scores, len(samples)

    async def scored(self, context: C, samples: Sequence[Sample]) -> dict[str, Score]:
        """Each sample's score under ``context`` (a failed rollout scores as an empty answer)."""
        result = await evaluate(
            self.method, context, samples, score=self.score, executor=self.executor
        )
        scores = {t.sample.id: t.score for t in result.trajectories}
        scores.update({f.sample_id: f.score or Score(False, 0, 1) for f in result.failures})
        return scores


P = TypeVar("P")


async def narrow_down(
    parts: Sequence[P],
    lowers: Callable[[list[P]], Awaitable[bool]],
    affordable: Callable[[], bool],
) -> tuple[list[P], list[P]]:
    """``parts`` lowered the score together: the parts cleared and those left out. A half that,
    beside the parts already cleared, does not lower the score (``lowers``) is cleared; a half
    that does is split again; what is still in doubt when no scoring is ``affordable`` any more
    is left out."""
    cleared: list[P] = []
    left_out: list[P] = []

    async def find(group: list[P]) -> None:
        if len(group) == 1 or not affordable():
            left_out.extend(group)
            return
        half = len(group) // 2
        left, right = group[:half], group[half:]
        if await lowers([*cleared, *left]):
            await find(left)
            if not affordable():
                left_out.extend(right)
            elif await lowers([*cleared, *right]):
                await find(right)
            else:
                cleared.extend(right)
        else:
            cleared.extend(left)
            await find(right)  # the group lowered the score, its left half did not

    await find(list(parts))
    return cleared, left_out


class _Search(Generic[C, U]):
    """One update's check and, when it lowers the score, the narrowing down of its parts."""

    def __init__(
        self,
        gate: OutcomeGate[C, U],
        context: C,
        update: U,
        samples: Sequence[Sample],
        before: dict[str, Score],
    ) -> None:
        self.gate = gate
        self.context = context
        self.update = update
        self.samples = list(samples)
        self.before = _mean([before[s.id] for s in samples])
        self.floor = self.before - gate.margin
        self.rollouts = 0
        self.last: tuple[list[U], dict[str, Score]] = ([], {})
        """The last set of parts scored, and its scores."""
        self.kept_scores: dict[str, Score] | None = None
        """The scores of the parts kept, when they were scored together."""
        self.parts: list[U] = list(gate.splits.parts(update))
        self.report = GateReport(
            samples=len(samples),
            before=self.before,
            after=self.before,
            proposed=self.before,
            parts=len(self.parts),
            gated=0,
            rollouts=0,
        )

    async def run(self) -> list[U]:
        if not self.parts:
            return []
        proposed = await self._score(self.parts)
        self.report.proposed = proposed
        kept, gated = list(self.parts), list[U]()
        if proposed < self.floor:
            kept, gated = await narrow_down(self.parts, self._lowers, self._affordable)
        last_parts, last_scores = self.last
        if {id(part) for part in last_parts} == {id(part) for part in kept}:
            self.kept_scores = last_scores
            self.report.after = _mean(list(last_scores.values()))
        self.report.gated = len(gated)
        self.report.rollouts = self.rollouts
        self.report.left_out = [self.gate.splits.describe(part) for part in gated]
        return kept

    async def _lowers(self, parts: list[U]) -> bool:
        return await self._score(parts) < self.floor

    def _affordable(self) -> bool:
        return self.gate.spent + len(self.samples) <= self.gate.earned

    async def _score(self, parts: list[U]) -> float:
        method = self.gate.splits
        trial = method.preview(self.context, method.keeping(self.update, parts, 0))
        scores = await self.gate.scored(trial, self.samples)
        self.rollouts += len(self.samples)
        self.gate.spent += len(self.samples)
        self.last = (parts, scores)
        return _mean([scores[s.id] for s in self.samples])


def gate_of(
    method: Method[C, U],
    executor: Executor,
    score: Callable[[str, Sample], Score],
    *,
    on: bool,
    validation: Sequence[Sample],
    samples: int,
    margin: float,
    share: float,
    seed: int,
) -> OutcomeGate[C, U] | None:
    """The run's gate, or None: switched off, or a method that cannot preview its updates
    (:class:`SplitsUpdates`)."""
    if not on:
        return None
    if not isinstance(method, SplitsUpdates):
        log.info("gate: off (the method cannot preview an update without applying it)")
        return None
    if isinstance(method, SaysCalls) and method.CALLS.rollout == {}:
        log.info("gate: off (the rollouts are records: no update changes their score)")
        return None
    return OutcomeGate(
        method,
        method,
        executor,
        score,
        validation=validation,
        samples=samples,
        margin=margin,
        share=share,
        seed=seed,
    )
