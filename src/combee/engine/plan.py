"""A run's plan: the LLM calls it will make, by role and phase, its completion tokens and, with
prices, what they cost, counted before any call.

:func:`plan` counts them for the same arguments as :func:`combee.train` (without connecting to
the model); the run engine counts them again from what it resolved and shows them to its
observers before its first call (``combee train`` prints them; ``--dry-run`` stops there).

The counts assume every call succeeds and every reflection is kept: a retry or a re-ask is
another attempt of the same call, and a reply the response cache holds is not sent. Where a
count is only set at run time (combee's group count under the ``capacity`` rule, a merge a
method may skip, the iterations of ``batch_size="auto"``) the plan gives its bounds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from combee.core.batch_schedule import BatchSchedule
from combee.core.call_counts import NONE, CallRange, MethodCalls, PlansReduce, total
from combee.core.gate import gate_credit, gate_samples, held_out_share
from combee.core.types import Named, Strategy
from combee.engine.prepare import Prepared, prepared
from combee.engine.resolve import LLMArg, schedule_of
from combee.llm.accounting import Prices
from combee.llm.client import LLM
from combee.llm.connect import Endpoint
from combee.methods.registry import calls_of, gated
from combee.tasks.base import Task

PREFLIGHT_ROLE = "preflight"


@dataclass(frozen=True)
class RunPlan:
    """The calls a run will make and what they may spend."""

    samples: Mapping[str, int]
    """Samples per split after the limits: ``train``, ``val``, ``test``."""
    phases: Mapping[str, Mapping[str, CallRange]]
    """Calls by phase (``training``, ``validation``, ``test``, ...) and role."""
    unknown: tuple[str, ...] = ()
    """What the plan cannot count in advance, in words (an agent's steps, GEPA's own loop)."""
    iterations: CallRange | None = None
    """Training iterations (None: not known in advance)."""
    max_tokens: int = 0
    """The completion tokens one call may write."""
    prices: Prices | None = None
    notes: tuple[str, ...] = ()
    """What else the reader should know (a resumed run repeats no finished iteration)."""

    @property
    def calls(self) -> dict[str, CallRange]:
        """Calls by role over every phase."""
        found: dict[str, CallRange] = {}
        for by_role in self.phases.values():
            total(by_role, found)
        return found

    @property
    def completion_tokens(self) -> int:
        """The most completion tokens the counted calls may write (``max_tokens`` each)."""
        return sum(calls.most for calls in self.calls.values()) * self.max_tokens

    @property
    def completion_cost(self) -> float | None:
        """The most the counted calls' completions may cost, in USD (None: no prices)."""
        if self.prices is None:
            return None
        return self.prices.cost(0, self.completion_tokens)

    def resumed(self, iteration: int) -> RunPlan:
        """This plan for a run resumed after ``iteration``: it counts the whole run."""
        note = (
            f"the whole run's calls: resumed after iteration {iteration}, it makes those "
            "iterations' calls no more"
        )
        return dataclasses.replace(self, notes=(*self.notes, note))

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON data."""
        return {
            "samples": dict(self.samples),
            "iterations": None if self.iterations is None else _range(self.iterations),
            "calls": {role: _range(calls) for role, calls in self.calls.items()},
            "phases": {
                phase: {role: _range(calls) for role, calls in by_role.items()}
                for phase, by_role in self.phases.items()
            },
            "unknown": list(self.unknown),
            "notes": list(self.notes),
            "max_completion_tokens": self.completion_tokens,
            "max_completion_cost_usd": self.completion_cost,
        }

    def lines(self) -> list[str]:
        """The plan in words: the samples and iterations, the calls by role, then tokens."""
        sizes = ", ".join(f"{self.samples[split]:,} {split}" for split in ("train", "val", "test"))
        if self.iterations is not None:
            count = self.iterations
            sizes += f"; {count} iteration{'' if count.most == 1 else 's'}"
        lines = [f"plan: {sizes}", f"plan: calls {self.calls_text()}"]
        lines.extend(f"plan: not counted: {what}" for what in self.unknown)
        lines.extend(f"plan: {note}" for note in self.notes)
        lines.append(f"plan: {spend_text(self.completion_tokens, self.max_tokens, self.prices)}")
        return lines

    def calls_text(self) -> str:
        """The calls by role in words, each with its phases when it has several."""
        roles = ", ".join(
            f"{role} {calls}{self._by_phase(role)}" for role, calls in self.calls.items()
        )
        if any(not calls.exact for calls in self.calls.values()):
            roles += " (a range: set at run time)"
        return roles or "none counted"

    def _by_phase(self, role: str) -> str:
        parts = [
            f"{phase} {by_role[role]}" for phase, by_role in self.phases.items() if role in by_role
        ]
        return f" ({', '.join(parts)})" if len(parts) > 1 else ""


def spend_text(tokens: int, max_tokens: int, prices: Prices | None) -> str:
    """What ``tokens`` completion tokens of at most ``max_tokens`` a call may cost, in words."""
    spend = f"completions at most {tokens:,} tokens ({max_tokens:,} a call)"
    if prices is not None:
        spend += f", at most ${prices.cost(0, tokens):,.2f}"
    return spend + "; prompt tokens are not known before the run"


def _range(calls: CallRange) -> dict[str, int]:
    return {"least": calls.least, "most": calls.most}


@dataclass(frozen=True)
class Shape:
    """What a plan is counted from: the resolved sizes and settings of a run."""

    samples: Mapping[str, int]
    batch_sizes: Sequence[int] | None
    """One epoch's batch sizes in order (None: chosen at run time)."""
    epochs: int
    val_every: int
    baseline: bool
    preflight: bool
    max_tokens: int
    prices: Prices | None = None
    gate: bool = False
    """Whether the run's updates are gated (:mod:`combee.core.gate`)."""
    gate_samples: int = 0
    gate_share: float = 0.0
    method_name: str = "the method"
    strategy_name: str = "the strategy"
    unknown: list[str] = field(default_factory=list)


def fixed_batches(train: int, size: int) -> list[int]:
    """One epoch's batch sizes at a fixed ``size``: full batches, then what remains."""
    full, rest = divmod(train, size)
    return [size] * full + ([rest] if rest else [])


def count_plan(shape: Shape, calls: MethodCalls | None, strategy: object) -> RunPlan:
    """The plan of a run of ``shape`` whose method makes ``calls`` (None: not known) and whose
    strategy is ``strategy`` (its reduce steps counted when it can say them,
    :class:`~combee.core.call_counts.PlansReduce`)."""
    train, val, test = (shape.samples[split] for split in ("train", "val", "test"))
    unknown = list(shape.unknown)
    phases: dict[str, dict[str, CallRange]] = {}
    if shape.preflight:
        phases["preflight"] = {PREFLIGHT_ROLE: CallRange.exactly(1)}
    evaluations = _evaluations(shape)
    if calls is None:
        unknown.append(f"the calls of {shape.method_name} (it does not say them)")
    elif calls.rollout is None:
        unknown.append(f"the steps of {shape.method_name}'s episodes (as many as each needs)")
    if calls is not None:
        training: dict[str, CallRange] = {}
        rollouts = CallRange.exactly(train * shape.epochs)
        gated, held = _gate_rollouts(shape, unknown)
        total(_each(calls.rollout or {}, rollouts), training)
        total(_each(calls.reflect, CallRange.exactly(train * shape.epochs - held)), training)
        if gated.most:
            phases["gate"] = _each(calls.rollout or {}, gated)
        reduce = _reduce_steps(shape, strategy)
        if shape.batch_sizes is None:
            unknown.append("the reduce calls (the batch sizes are chosen at run time)")
        elif reduce is None:
            unknown.append(f"the reduce calls of {shape.strategy_name} (it does not say them)")
        else:
            for step, count in reduce.items():
                role, least, most = calls.steps.get(step, (step, 1, 1))
                total({role: count.times(least, most)}, training)
        phases["training"] = training
        evaluated = {
            "baseline test": CallRange.exactly(test if shape.baseline else 0),
            "validation": evaluations.times(val),
            "test": CallRange.exactly(test),
        }
        for phase, samples in evaluated.items():
            if samples.most:
                phases[phase] = _each(calls.rollout or {}, samples)
    return RunPlan(
        samples=dict(shape.samples),
        phases={phase: by_role for phase, by_role in phases.items() if by_role},
        unknown=tuple(unknown),
        iterations=None
        if shape.batch_sizes is None
        else CallRange.exactly(len(shape.batch_sizes) * shape.epochs),
        max_tokens=shape.max_tokens,
        prices=shape.prices,
    )


def _gate_rollouts(shape: Shape, unknown: list[str]) -> tuple[CallRange, int]:
    """The gate's rollouts (none when an update has nothing to check; at most each update's
    first scoring and the narrowing credit the iterations earn) and the training samples it
    holds out of reflection (when the run has no validation split)."""
    if not shape.gate:
        return NONE, 0
    if shape.batch_sizes is None:
        unknown.append("the gate's rollouts (the batch sizes are chosen at run time)")
        return NONE, 0
    val = shape.samples["val"]
    most = held = 0
    for size in shape.batch_sizes:
        if val:  # the context before the update scored too, when it was not the last one scored
            first = 2 * min(gate_samples(size, shape.gate_samples), val)
        else:
            first = held_out_share(size, shape.gate_samples)
            held += first
        most += first + gate_credit(size, shape.gate_share) if first else 0
    return CallRange(0, most * shape.epochs), held * shape.epochs


def _each(per_call: Mapping[str, int], count: CallRange) -> dict[str, CallRange]:
    return {role: count.times(times) for role, times in per_call.items() if times}


def _reduce_steps(shape: Shape, strategy: object) -> dict[str, CallRange] | None:
    if shape.batch_sizes is None or not isinstance(strategy, PlansReduce):
        return None
    steps: dict[str, CallRange] = {}
    for size in shape.batch_sizes:
        total(strategy.reduce_calls(size), steps)
    return {step: count.times(shape.epochs) for step, count in steps.items()}


def _evaluations(shape: Shape) -> CallRange:
    """How many times the validation set is scored: after every ``val_every``-th iteration and
    at the end of each epoch."""
    if shape.samples["val"] == 0 or shape.samples["train"] == 0:
        return NONE
    if shape.val_every == 0:
        return CallRange.exactly(shape.epochs)
    if shape.batch_sizes is None:  # between one iteration an epoch and one per sample
        most_iterations = shape.samples["train"] * shape.epochs
        return CallRange(shape.epochs, shape.epochs + most_iterations // shape.val_every)
    per_epoch = len(shape.batch_sizes)
    count = 0
    for iteration in range(1, per_epoch * shape.epochs + 1):
        if iteration % shape.val_every == 0 or iteration % per_epoch == 0:
            count += 1
    return CallRange.exactly(count)


def plan(
    task: str | Task,
    *,
    method: Any = "ace",
    strategy: str | Strategy = "combee",
    batch_size: int | str | BatchSchedule = 40,
    llm: LLMArg = None,
    preflight: bool = True,
    method_options: Mapping[str, Any] | None = None,
    **settings: Any,
) -> RunPlan:
    """The plan of :func:`combee.train` with these arguments (see it for them): the calls it
    would make by role and phase, and what they may spend, counted without connecting to the
    model or making any call. Its settings are checked as the run checks them."""
    ready = prepared(
        task, method=method, strategy=strategy, given=settings, method_options=method_options
    )
    run = ready.settings
    schedule_of(  # the batch size checked as the run checks it
        batch_size,
        ready.strategy,
        max_batch_size=run.max_batch_size,
        tau=run.tau,
        reprofile=run.reprofile,
        on_decision=lambda decision: None,
    )
    return plan_of(ready, batch_size, llm=llm, preflight=preflight)


def plan_of(
    ready: Prepared, batch_size: int | str | BatchSchedule, *, llm: LLMArg, preflight: bool
) -> RunPlan:
    """The plan of a run resolved as ``ready`` at ``batch_size`` on ``llm``."""
    run = ready.settings
    fixed = isinstance(batch_size, int) and not isinstance(batch_size, bool)
    shape = Shape(
        samples=ready.sizes,
        batch_sizes=fixed_batches(len(ready.train), ready.strategy.batch_size(batch_size))
        if isinstance(batch_size, int) and fixed
        else None,
        epochs=run.epochs,
        val_every=run.val_every,
        baseline=run.baseline,
        preflight=preflight,
        max_tokens=run.max_tokens,
        prices=prices_of(llm),
        gate=run.gate and gated(ready.method),
        gate_samples=run.gate_samples,
        gate_share=run.gate_share,
        method_name=_name(ready.method),
        strategy_name=_name(ready.strategy),
    )
    return count_plan(shape, calls_of(ready.method), ready.strategy)


def prices_of(llm: object) -> Prices | None:
    """The prices an endpoint or a client was given (None: none)."""
    if isinstance(llm, Endpoint):
        raw: object = llm.prices
    elif isinstance(llm, LLM):
        raw = llm.settings.get("prices")
    else:
        return None
    if isinstance(raw, Prices) or raw is None:
        return raw
    if isinstance(raw, tuple | list) and len(raw) == 2:
        return Prices(float(raw[0]), float(raw[1]))
    return None


def _name(thing: object) -> str:
    if isinstance(thing, str):
        return thing
    return thing.name if isinstance(thing, Named) else type(thing).__name__
