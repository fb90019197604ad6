"""``combee.evaluate``: score a context on a split of a task, through the same pieces as a run."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from combee.core.executor import AsyncioExecutor, Executor
from combee.core.learner import Learner
from combee.core.loop_observer import LoopObserver, ObserverGroup
from combee.engine.resolve import (
    LLMArg,
    initial_text,
    learner_of,
    limited,
    llm_of,
    start_context,
    task_of,
    whole,
    widen_for,
)
from combee.engine.results import EvalResult, usage_summary
from combee.errors import ConfigError
from combee.llm.types import DEFAULT_MAX_TOKENS
from combee.sync import run_sync
from combee.tasks.base import Sample, Splits, Task
from combee.tasks.sample_size import DEFAULT_MAX_SAMPLE_CHARS, check_sample_sizes

SPLITS = ("train", "val", "test", "all")
"""What :func:`evaluate` scores: one split of the task, or ``all`` of them together."""


def split_samples(splits: Splits, split: str) -> list[Sample]:
    """The samples of ``split`` (one of :data:`SPLITS`); ``all``: train, val, then test."""
    if split == "all":
        return [*splits.train, *splits.val, *splits.test]
    return list(getattr(splits, split))


async def observed_evaluation(
    learner: Learner[Any],
    context: Any,
    samples: Sequence[Sample],
    executor: Executor,
    watchers: ObserverGroup,
    label: str,
) -> Any:
    """``learner``'s evaluation of ``context`` on ``samples``, announced to ``watchers``."""
    watchers.on_evaluation_start(label, len(samples))
    started = time.perf_counter()
    result = await learner.evaluate(
        context, samples, executor=executor, on_done=watchers.on_sample_done
    )
    watchers.on_evaluation_end(label, result, time.perf_counter() - started)
    return result


async def evaluate_async(
    task: str | Task,
    *,
    context: Any = None,
    method: Any = "ace",
    llm: LLMArg = None,
    split: str = "test",
    limit: int | None = None,
    executor: Executor | None = None,
    observers: Sequence[LoopObserver] = (),
    data: str | None = None,
    scorer: str = "exact",
    seed: int = 0,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    preflight: bool = True,
    max_sample_chars: int = DEFAULT_MAX_SAMPLE_CHARS,
) -> EvalResult:
    """Score ``context`` (a file ``Path``, a text, a context object, or None for the method's
    empty one) on a split of ``task``: ``train``, ``val``, ``test``, or ``all`` (the three
    together: every line of a JSONL file, which a run splits 60/20/20). A sample of more than
    ``max_sample_chars`` characters is refused, naming its file and line."""
    if split not in SPLITS:
        raise ConfigError(f"must be train, val, test or all (got {split!r})", setting="split")
    the_task = task_of(task, data=data, scorer=scorer, seed=seed)
    if limit is not None:
        whole(limit, "limit", least=0)
    whole(max_sample_chars, "max_sample_chars", least=1)
    samples = limited(split_samples(the_task.load(), split), limit)
    check_sample_sizes(samples, max_sample_chars, the_task.name)
    start = initial_text(context, setting="context")
    client, owned = llm_of(llm, seed=seed)
    widen_for(client, len(samples))
    try:
        learner = learner_of(method, client, the_task.score, {"max_tokens": max_tokens})
        begin = start_context(learner, start, context, setting="context")
        if preflight:
            await client.preflight()
        started = time.perf_counter()
        evaluation = await observed_evaluation(
            learner, begin, samples, executor or AsyncioExecutor(), ObserverGroup(observers), split
        )
        return EvalResult(
            task=the_task.name,
            split=split,
            evaluation=evaluation,
            seconds=time.perf_counter() - started,
            usage=usage_summary(client.usage()),
        )
    finally:
        if owned:
            await client.aclose()


def evaluate(task: str | Task, **settings: Any) -> EvalResult:
    """:func:`evaluate_async` for synchronous callers (see it for the settings)."""
    return run_sync(evaluate_async(task, **settings), async_name="combee.evaluate_async")
