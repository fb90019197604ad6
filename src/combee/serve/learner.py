"""Learning rounds: the store's newly scored traces folded into the next playbook version.

A round takes the traces whose feedback arrived after the namespace's watermark, learns from
them with :func:`combee.engine.learn.learn_traces_async` (what ``combee learn`` runs) starting
from the active playbook, and stores the result as the next version, with the traces each new bullet
was learned from. The version, its activation and the new watermark are one transaction.

Activation: ``always`` serves the new version at once; ``checked`` first holds out a share of the
round's traces and compares next-action accuracy (:func:`combee.evaluate_next_actions_async`)
with the new playbook against the active one (or none). On a drop, the bullets the round added
or changed are narrowed down and those that lower the accuracy are left out
(:mod:`combee.serve.round_gate`); the rest is served if it does not drop. A version of which
nothing is kept stays out (``refused``), and so does one whose check could not be made.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from combee.core.loop_observer import LoopObserver
from combee.core.loop_reports import IterationReport
from combee.errors import CombeeError
from combee.methods.ace.playbook import Playbook
from combee.serve.records import Feedback, PlaybookVersion
from combee.serve.round_gate import gate_version, round_bullets
from combee.serve.settings import ServeSettings
from combee.serve.store import TraceStore
from combee.serve.store_writes import add_version, ensure_first, set_watermark
from combee.serve.trace_form import trace_of

logger = logging.getLogger(__name__)

ROUNDS_FOLDER = "rounds"


@dataclass
class RoundResult:
    """What a round did. ``version`` is None when nothing was learned (``skipped`` says why)."""

    namespace: str
    traces: int = 0
    version: int | None = None
    activated: bool = False
    check: Mapping[str, Any] | None = None
    seconds: float = 0.0
    skipped: str = ""
    bullets: int = 0
    run_dir: Path | None = None

    def line(self) -> str:
        """One line for a person watching the gateway."""
        if self.version is None:
            return f"learning round [{self.namespace}]: nothing learned ({self.skipped})"
        state = "active" if self.activated else "refused by the offline check"
        check = ""
        if self.check is not None:
            check = f"; check: {self.check.get('summary', '')}"
        return (
            f"learning round [{self.namespace}]: {self.traces} trace(s) folded -> playbook "
            f"v{self.version} ({self.bullets} bullets, {state}) in {self.seconds:.1f} s{check}"
        )


@dataclass
class _Provenance(LoopObserver):
    """Which traces each new bullet was learned from: among the samples of the iteration that
    added it, those whose lesson it restates (most words in common with its text), else all of
    them."""

    before: set[str]
    taught: dict[str, list[str]] = field(default_factory=dict)

    def on_iteration_end(self, report: IterationReport[Any, Any]) -> None:
        context = report.context
        bullets = {b.id: b for b in (context.bullets if isinstance(context, Playbook) else ())}
        lessons = [
            (r.sample_id, _words(" ".join(str(v) for v in r.fields.values())))
            for r in report.reflections
        ]
        for new in set(bullets) - self.before - set(self.taught):
            self.taught[new] = _sources(_words(bullets[new].content), lessons)
        self.before |= set(bullets)


_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _sources(bullet: set[str], lessons: Sequence[tuple[str, set[str]]]) -> list[str]:
    """The samples whose lesson shares the most of ``bullet``'s words (a tie keeps them all;
    none sharing a third of them: every sample of the iteration)."""
    scored = [(len(bullet & words) / max(1, len(bullet)), sample) for sample, words in lessons]
    best = max((score for score, _ in scored), default=0.0)
    if best < 1 / 3:
        return sorted({sample for _, sample in scored})
    return sorted({sample for score, sample in scored if score == best})


async def learn_round(
    store: TraceStore,
    namespace: str,
    *,
    llm: Any,
    settings: ServeSettings,
    learn_settings: Mapping[str, Any] | None = None,
    seed: int = 0,
    initial: str = "",
) -> RoundResult:
    """One round for ``namespace`` (see the module's docstring); ``llm`` is the learner's
    endpoint or client, ``learn_settings`` those of ``combee learn`` (strategy, batch size,
    ...), ``initial`` the starting playbook (version 1, when the namespace has none yet)."""
    from combee.engine.learn import learn_traces_async
    from combee.engine.offline_eval import evaluate_next_actions_async
    from combee.methods.ace import Playbook

    started = time.perf_counter()
    options = dict(learn_settings or {})
    seed = options.pop("seed", seed)
    watermark = store.watermark(namespace)
    rows = await asyncio.to_thread(store.feedback_after, namespace, watermark)
    result = RoundResult(namespace)
    if not rows:
        result.skipped = "no new feedback"
        return result
    last = rows[-1][0]
    outcomes = latest_outcomes(feedback for _, feedback in rows)
    traces = [
        trace
        for trace_id, feedback in outcomes.items()
        if (trace := trace_of(store.exchanges(trace_id), feedback)) is not None
    ]
    result.traces = len(traces)
    if not traces:
        await store.write_async(set_watermark(namespace, last))
        result.skipped = "the feedback names no conversation with a reply"
        return result
    await store.write_async(ensure_first(namespace, initial))
    active = store.active(namespace)
    learn_set, check_set = list(traces), list[Any]()
    if settings.activate == "checked":
        learn_set, check_set = _held_out(traces, settings.check_share, seed)
    number = len(store.versions(namespace)) + 1
    run_dir = store.folder / ROUNDS_FOLDER / namespace / f"v{number:04d}"
    start = Playbook.parse(active.text) if active is not None else Playbook()
    provenance = _Provenance({b.id for b in start.bullets})
    options.setdefault("batch_size", min(len(learn_set), 40))
    learned = await learn_traces_async(
        learn_set,
        llm=llm,
        seed=seed,
        initial_context=start,
        run_dir=run_dir,
        overwrite=True,
        observers=[provenance],
        progress=False,  # a round in the background of the gateway
        **options,
    )
    activate = True
    text = learned.text
    check: dict[str, Any] | None = None
    if settings.activate == "checked":
        check = await _check(evaluate_next_actions_async, check_set, text, active, llm, seed)
        if not check["passed"] and "new" in check:
            text, check = await _gated(
                evaluate_next_actions_async, check_set, start, text, llm, seed, check
            )
        activate = bool(check.get("passed"))
    kept_ids = {bullet.id for bullet in Playbook.parse(text).bullets}
    version = PlaybookVersion(
        namespace=namespace,
        version=0,
        text=text,
        created=time.time(),
        status="refused" if not activate else "active",
        parent=None if active is None else active.version,
        traces=[t.id for t in learn_set],
        provenance={b: t for b, t in provenance.taught.items() if b in kept_ids},
        check=check,
        note=f"learned from {len(learn_set)} trace(s) in {run_dir.relative_to(store.folder)}",
    )
    result.version = await store.write_async(
        add_version(version, activate=activate, watermark=last)
    )
    result.activated = activate
    result.check = check
    result.bullets = len(kept_ids)
    result.run_dir = run_dir
    result.seconds = time.perf_counter() - started
    return result


async def _check(
    evaluate: Callable[..., Any],
    traces: Sequence[Any],
    text: str,
    active: PlaybookVersion | None,
    llm: Any,
    seed: int,
) -> dict[str, Any]:
    """Next-action accuracy (tool and arguments) on ``traces`` with the new playbook against
    the active one (without one when none is active); passed when it does not drop."""
    try:
        new = await evaluate(traces, playbook=text, llm=llm, seed=seed)
        old_rate = new.arguments["without_playbook"]
        if active is not None and active.text.strip():
            old = await evaluate(traces, playbook=active.text, llm=llm, seed=seed)
            old_rate = old.arguments["with_playbook"]
    except CombeeError as problem:
        return {"passed": False, "summary": f"not made: {problem}"}
    new_rate = new.arguments["with_playbook"]
    passed = new_rate.rate >= old_rate.rate
    return {
        "passed": passed,
        "new": {"correct": new_rate.correct, "n": new_rate.n},
        "active": {"correct": old_rate.correct, "n": old_rate.n},
        "summary": f"next action right {new_rate.correct}/{new_rate.n} with it, "
        f"{old_rate.correct}/{old_rate.n} with the active playbook "
        f"({'kept' if passed else 'a drop: not activated'})",
    }


async def _gated(
    evaluate: Callable[..., Any],
    traces: Sequence[Any],
    start: Playbook,
    text: str,
    llm: Any,
    seed: int,
    check: dict[str, Any],
) -> tuple[str, dict[str, Any]]:
    """The round's playbook ``text``, which ``check`` found lowers next-action accuracy,
    without the bullets of the round that lower it (:mod:`combee.serve.round_gate`), and the
    check of what is kept: passed when something of the round is kept and the accuracy does
    not drop."""
    active = check["active"]
    floor = active["correct"] / active["n"] if active["n"] else 0.0

    async def rate(candidate: str) -> float:
        result = await evaluate(traces, playbook=candidate, llm=llm, seed=seed)
        return float(result.arguments["with_playbook"].rate)

    try:
        gated = await gate_version(start, Playbook.parse(text), rate, floor)
        kept = gated.playbook.render()
        kept_rate = gated.rate if gated.rate is not None else await rate(kept)
    except CombeeError as problem:
        return text, {**check, "summary": f"{check['summary']}; the gate not made: {problem}"}
    if not gated.left_out:
        return text, check
    learned_something = bool(round_bullets(start, gated.playbook))
    passed = learned_something and kept_rate >= floor
    summary = (
        f"{check['summary']}; {len(gated.left_out)} bullet(s) that lowered it left out "
        f"({gated.scorings} scoring(s)): next action right {kept_rate:.0%} with the rest"
        + ("" if passed else ", still not activated")
    )
    return (kept if passed else text), {
        **check,
        "passed": passed,
        "gated": gated.left_out,
        "kept_rate": round(kept_rate, 4),
        "summary": summary,
    }


def latest_outcomes(feedback: Any) -> dict[str, Feedback]:
    """One outcome per trace: the latest report's reward, flag and text, each falling back to
    an earlier report's when the latest leaves it out. Untrusted text never replaces trusted
    text: an agent cannot overwrite what the operator said."""
    found: dict[str, Feedback] = {}
    for item in feedback:
        before = found.get(item.trace_id)
        if before is not None:
            text_kept = not item.text or (before.trusted and not item.trusted)
            item = Feedback(
                trace_id=item.trace_id,
                namespace=item.namespace,
                reward=item.reward if item.reward is not None else before.reward,
                success=item.success if item.success is not None else before.success,
                text=before.text if text_kept else item.text,
                created=item.created,
                trusted=before.trusted if text_kept else item.trusted,
            )
        found[item.trace_id] = item
    return found


def _held_out(traces: Sequence[Any], share: float, seed: int) -> tuple[list[Any], list[Any]]:
    order = list(traces)
    random.Random(seed).shuffle(order)
    count = max(1, round(len(order) * share)) if len(order) > 1 else 0
    return order[count:], order[:count]


@contextlib.asynccontextmanager
async def _on_thread(held: AbstractContextManager[bool]) -> AsyncIterator[bool]:
    """``held`` entered and left on a worker thread (taking a database lock blocks)."""
    value = await asyncio.to_thread(held.__enter__)
    try:
        yield value
    finally:
        await asyncio.to_thread(held.__exit__, None, None, None)


class RoundBusy(CombeeError):
    """Another process holds the namespace's learning round."""


class ContinuousLearner:
    """Runs :func:`learn_round` in the background: when a namespace has ``learn_every`` traces
    with new feedback, and every ``learn_interval`` seconds to catch what another process
    wrote. One round at a time; a failed round is logged and retried at the next look."""

    def __init__(
        self,
        store: TraceStore,
        *,
        llm: Any,
        settings: ServeSettings,
        learn_settings: Mapping[str, Any] | None = None,
        on_round: Callable[[RoundResult], None] | None = None,
        initial: str = "",
    ) -> None:
        self.store = store
        self.llm = llm
        self.settings = settings
        self.learn_settings = dict(learn_settings or {})
        self.on_round = on_round
        self.initial = initial
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    def poke(self, namespace: str = "") -> None:
        """New feedback arrived: look now."""
        self._wake.set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def run_now(self, namespace: str) -> RoundResult:
        """One round now, whatever the count (``POST /v1/learn``, ``combee serve learn``);
        :class:`RoundBusy` while another process (a replica) runs one of ``namespace``."""
        async with self._lock, _on_thread(self.store.round_lock(namespace)) as held:
            if not held:
                raise RoundBusy(f"a learning round of namespace {namespace!r} is running elsewhere")
            result = await learn_round(
                self.store,
                namespace,
                llm=self.llm,
                settings=self.settings,
                learn_settings=self.learn_settings,
                initial=self.initial,
            )
        if self.on_round is not None:
            self.on_round(result)
        return result

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.settings.learn_interval)
            self._wake.clear()
            for namespace in await asyncio.to_thread(self._due_namespaces):
                try:
                    await self.run_now(namespace)
                except asyncio.CancelledError:
                    raise
                except RoundBusy:  # another replica learns from these traces
                    continue
                except Exception as problem:  # the gateway keeps serving
                    logger.error("learning round [%s] failed: %s", namespace, problem)

    def _due_namespaces(self) -> list[str]:
        """The namespaces with ``learn_every`` traces of new feedback (one grouped read, on a
        worker thread, whatever the number of namespaces)."""
        if not self.settings.learn_every:
            return []
        waiting = self.store.traces_with_new_feedback()
        return [ns for ns, traces in waiting.items() if traces >= self.settings.learn_every]
