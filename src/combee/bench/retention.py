"""The retention benchmark: how many specific lessons survive one aggregation.

A set of N synthetic reflections (:mod:`combee.bench.lessons`), each teaching one rule tied to a
unique name, is aggregated once by each strategy into an empty ACE playbook. Per strategy and N:
the share of names that survive in the playbook, the updates applied, the playbook's size, the
LLM calls per role and the wall time. Runs on any endpoint and on the embedded model.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from combee.bench.lessons import make_lessons, retained
from combee.core.types import Reflection
from combee.declare import offered
from combee.engine.resolve import LLMArg, llm_of
from combee.errors import CombeeError
from combee.llm.client import LLM
from combee.llm.types import DEFAULT_MAX_TOKENS
from combee.methods.ace import AceMethod, AceUpdate, Playbook
from combee.methods.ace.settings import REPAIRS, AceSettings
from combee.strategies.registry import STRATEGIES
from combee.strategies.settings import CombeeSettings
from combee.tasks.base import Sample, Score

PROGRESS_EVERY_S = 30.0
"""How often a strategy still aggregating reports the calls it has made."""


@dataclass(frozen=True)
class RetentionProgress:
    """Where one (strategy, N) aggregation stands: LLM calls finished so far, per role."""

    strategy: str
    lessons: int
    llm_calls: dict[str, int]
    elapsed_s: float


@dataclass
class RetentionRow:
    strategy: str
    lessons: int
    retained: int
    updates_applied: int
    playbook_bullets: int
    playbook_tokens: int
    wall_s: float
    llm_calls: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    lost: list[str] = field(default_factory=list)
    curated_operations: list[int] = field(default_factory=list)
    """Operations each curator call proposed, in call order."""
    merges: list[dict[str, Any]] = field(default_factory=list)
    """Per merge call: operations in, operations out, and ``source`` (``merge`` or
    ``merge-fallback``: the union of its inputs was kept)."""
    dropped: dict[str, int] = field(default_factory=dict)
    """Lessons left out on the way to the playbook, by reason."""
    groups: dict[str, Any] | None = None
    """How ``combee`` chose its level-1 group count (rule, count, fan_in, reason)."""
    lost_where: dict[str, int] = field(default_factory=dict)
    """Lost lessons by where they were lost: ``not written`` (no curator operation named
    it), ``left out by a merge`` (written, but not in the last merge's update) or ``refused
    on apply`` (in the final update, not in the playbook)."""

    @property
    def label(self) -> str:
        """The strategy, with ``combee``'s group rule and count: ``combee (capacity, 23)``."""
        if not self.groups:
            return self.strategy
        return f"{self.strategy} ({self.groups['rule']}, {self.groups['count']} groups)"

    @property
    def share(self) -> float:
        return self.retained / self.lessons if self.lessons else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "share": round(self.share, 4)}


class _TracedAce(AceMethod):
    """ACE that records what each curator and merge call produced, so that a row says where the
    lessons it lost were lost."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.curated: list[int] = []
        self.merges: list[dict[str, Any]] = []
        self.written = ""
        """Every operation a curator call wrote, as text."""
        self.merged: str | None = None
        """The operations of the last merge's update, as text (None: no merge)."""

    async def curate(self, context: Playbook, reflections: Sequence[Reflection]) -> AceUpdate:
        update = await super().curate(context, reflections)
        self.curated.append(len(update.operations))
        self.written += json.dumps(update.operations).casefold()
        return update

    async def merge(self, context: Playbook, updates: Sequence[AceUpdate]) -> AceUpdate:
        merged = await super().merge(context, updates)
        given = sum(len(update.operations) for update in updates)
        self.merges.append({"in": given, "out": len(merged.operations), "source": merged.source})
        self.merged = json.dumps(merged.operations).casefold()
        return merged

    def where_lost(self, names: Sequence[str]) -> dict[str, int]:
        """How many of the lost ``names`` were lost at each step."""
        found: Counter[str] = Counter()
        for name in names:
            folded = name.casefold()
            if folded not in self.written:
                found["not written"] += 1
            elif self.merged is not None and folded not in self.merged:
                found["left out by a merge"] += 1
            else:
                found["refused on apply"] += 1
        return dict(found)


def _no_score(prediction: str, sample: Sample) -> Score:
    return Score(False, 0, 1)  # nothing is generated in this benchmark


def _calls(
    now: Mapping[str, Any], before: Mapping[str, Any], field: str = "calls"
) -> dict[str, int]:
    delta = {
        role: getattr(u, field) - (getattr(before[role], field) if role in before else 0)
        for role, u in now.items()
    }
    return {role: n for role, n in delta.items() if n}


async def _report_progress(
    client: LLM,
    before: Mapping[str, Any],
    started: float,
    where: tuple[str, int],
    on_progress: Callable[[RetentionProgress], None],
    every_s: float,
) -> None:
    while True:
        await asyncio.sleep(every_s)
        calls = _calls(client.usage(), before)
        on_progress(RetentionProgress(*where, calls, round(time.perf_counter() - started, 1)))


async def _aggregate(
    client: LLM,
    strategy_name: str,
    size: int,
    *,
    seed: int,
    options: Mapping[str, Any],
    on_progress: Callable[[RetentionProgress], None] | None = None,
    progress_every_s: float = PROGRESS_EVERY_S,
) -> RetentionRow:
    lessons = make_lessons(size, seed=seed)
    method = _TracedAce(
        client,
        _no_score,
        ace=AceSettings(
            token_budget=options.get("token_budget"),
            **dict.fromkeys(REPAIRS, bool(options.get("repairs", True))),
        ),
        max_tokens=int(options.get("max_tokens", DEFAULT_MAX_TOKENS)),
    )
    strategy = STRATEGIES.create(strategy_name, seed=seed, **offered([options["strategy"]]))
    before = client.usage()
    calls_before = len(client.calls)
    started = time.perf_counter()
    playbook, applied, error = Playbook(), 0, None
    dropped: Counter[str] = Counter()
    groups: dict[str, Any] | None = None
    reflections = [lesson.reflection for lesson in lessons]
    reporter = None
    if on_progress is not None:
        reporter = asyncio.create_task(
            _report_progress(
                client, before, started, (strategy_name, size), on_progress, progress_every_s
            )
        )
    try:
        # A strategy that never batches (sequential) meets its lessons one at a time.
        batches = [[r] for r in reflections] if strategy.batch_size(2) == 1 else [reflections]
        for batch in batches:
            trace = await strategy.reduce(method, playbook, batch)
            groups = trace.groups
            if trace.update is not None:
                playbook = method.apply(playbook, trace.update)
                if method.last_apply is not None:
                    applied += len(method.last_apply.applied)
                    dropped.update(method.last_apply.dropped)
    except CombeeError as failure:
        error = str(failure)
    finally:
        if reporter is not None:
            reporter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reporter
    failed = _calls(client.usage(), before, "failed_calls")
    if error is None and failed:  # a failed curate call is skipped: the row says so
        error = ", ".join(f"{role} {n} call(s) failed" for role, n in failed.items())
        why = next((c.error for c in client.calls[calls_before:] if c.error), None)
        error += f" ({why})" if why else ""
    text = playbook.render()
    kept = retained(lessons, text)
    lost = [lesson.name for lesson in lessons if lesson.name not in kept]
    return RetentionRow(
        strategy=strategy_name,
        lessons=size,
        retained=len(kept),
        updates_applied=applied,
        playbook_bullets=len(playbook),
        playbook_tokens=playbook.token_count(),
        wall_s=round(time.perf_counter() - started, 3),
        llm_calls=_calls(client.usage(), before),
        error=error,
        lost=lost,
        lost_where=method.where_lost(lost),
        curated_operations=method.curated,
        merges=method.merges,
        dropped=dict(dropped),
        groups=groups,
    )


async def retention_async(
    *,
    llm: LLMArg,
    strategies: Sequence[str],
    sizes: Sequence[int],
    seed: int = 0,
    duplication: int = CombeeSettings.duplication,
    fan_in: int = CombeeSettings.fan_in,
    groups: str = CombeeSettings.groups,
    token_budget: int | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    repairs: bool = True,
    on_row: Callable[[RetentionRow], None] | None = None,
    on_progress: Callable[[RetentionProgress], None] | None = None,
    progress_every_s: float = PROGRESS_EVERY_S,
) -> list[RetentionRow]:
    """Aggregate ``sizes`` lessons once with each strategy; one row per (strategy, size).

    ``groups`` is ``combee``'s level-1 group rule (``capacity`` or ``sqrt``). ``repairs``: ACE's
    repairs all on (the default) or all off (:data:`~combee.methods.ace.settings.REPAIRS`; with
    no feedback to copy, the merge's overruled drops are the one that acts). ``on_row`` gets
    each row as it ends; ``on_progress``, every ``progress_every_s`` seconds
    while a row is still aggregating, the calls it has made so far."""
    for name in strategies:
        STRATEGIES.factory(name)  # an unknown name fails before any call
    client, owned = llm_of(llm, seed=seed)
    options = {
        "token_budget": token_budget,
        "max_tokens": max_tokens,
        "repairs": repairs,
        "strategy": CombeeSettings(duplication=duplication, fan_in=fan_in, groups=groups),
    }
    rows: list[RetentionRow] = []
    try:
        for size in sizes:
            for name in strategies:
                row = await _aggregate(
                    client, name, size, seed=seed, options=options,
                    on_progress=on_progress, progress_every_s=progress_every_s,
                )  # fmt: skip
                rows.append(row)
                if on_row is not None:
                    on_row(row)
    finally:
        if owned:
            await client.aclose()
    return rows


def calls_text(llm_calls: Mapping[str, int]) -> str:
    """LLM calls per role as one line: ``curator 4, merge 1``."""
    return ", ".join(f"{role} {n}" for role, n in sorted(llm_calls.items()))


def markdown_table(rows: Sequence[RetentionRow]) -> str:
    """The rows as a Markdown table (the form docs/quality.md shows)."""
    lines = [
        "| strategy | N | retained | share | updates applied | bullets | playbook tokens | "
        "LLM calls | wall s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    for row in rows:
        calls = calls_text(row.llm_calls)
        note = f" (error: {row.error[:60]})" if row.error else ""
        lines.append(
            f"| {row.label} | {row.lessons} | {row.retained} | {row.share:.0%} | "
            f"{row.updates_applied} | {row.playbook_bullets} | {row.playbook_tokens} | "
            f"{calls}{note} | {row.wall_s:.1f} |"
        )
    return "\n".join(lines) + "\n"
