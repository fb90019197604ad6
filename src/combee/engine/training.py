"""A training run from start to end: :func:`train_async` resolves and checks its inputs,
connects, sets the run up (:mod:`combee.engine.setup`), runs it in its folder
(:mod:`combee.engine.fitting`) and closes what it opened; :mod:`combee.api` is its front door."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from combee.core.batch_schedule import BatchSchedule
from combee.core.executor import Executor
from combee.core.loop_observer import LoopObserver, ObserverGroup
from combee.core.types import Strategy
from combee.engine.fitting import recorded_run
from combee.engine.guards import check_pipeline, removed_on_refusal
from combee.engine.plan import plan_of
from combee.engine.prepare import prepared
from combee.engine.resolve import LLMArg, initial_text, llm_of, schedule_of, start_context
from combee.engine.results import TrainResult
from combee.engine.setup import learner_for, opened_run_dir, resume_of, run_config
from combee.progress import ProgressArg, progress_observer
from combee.runs import check_run_dir, missing_folders
from combee.sync import run_sync
from combee.tasks.base import Task


async def train_async(
    task: str | Task,
    *,
    method: Any = "ace",
    strategy: str | Strategy = "combee",
    batch_size: int | str | BatchSchedule = 40,
    llm: LLMArg = None,
    run_dir: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    observers: Sequence[LoopObserver] = (),
    progress: ProgressArg = None,
    executor: Executor | None = None,
    initial_context: Any = None,
    preflight: bool = True,
    record: dict[str, Any] | None = None,
    method_options: Mapping[str, Any] | None = None,
    **settings: Any,
) -> TrainResult:
    """Learn a context for ``task`` and score it on the task's test split.

    ``task``: a registered name (``formula``, ``finer``, ``jsonl:PATH``, a plugin's) or an
    object with ``load()`` and ``score()`` (e.g. :class:`combee.tasks.SampleTask`).
    ``method``: ``ace``, ``gepa``, a registered name, a :class:`combee.core.learner.Learner`,
    or an object implementing the Method contract (``rollout``, ``reflect``, ``curate``,
    ``merge``, ``tally``, ``apply``; give ``initial_context`` then). ``strategy``: ``sequential``,
    ``naive``, ``combee``, ``topk``, ``summarize``, ``hier-summarize``, a registered name or an
    object (``top_k``: ``topk``'s number of clusters, 8 by default). ``batch_size``: a size,
    ``"auto"`` (the batch size controller, bounded by ``max_batch_size`` and ``tau``) or a
    schedule.
    ``llm``: a :class:`combee.llm.Endpoint` or a model name (connected once every other
    setting is checked, closed at the end), or a client from :func:`combee.llm.connect` (the
    caller's to close). ``run_dir``: where config, metrics, context versions and
    results go (None: nothing is written). ``observers`` watch the run (see
    :class:`combee.LoopObserver`). ``progress``: None shows the run's progress where a person is
    watching (a terminal, a Jupyter notebook) and not elsewhere (a pipe, a log, CI); True or
    False to choose; an observer to show it your way. ``initial_context``: a file (``Path``), a
    text or a context object to start from. ``record`` adds entries to ``config.json``;
    ``method_options`` go to a named method's factory as they are (not into the config).
    ``settings``: the run's settings by name (``epochs``, ``seed``, ``token_budget``, ...), each
    declared once in :mod:`combee.settings` with its default, bounds and help (the table is in
    ``docs/settings.md``); a name that is not declared, a value out of bounds, or a setting of a
    method or strategy that this run's does not take is a :class:`combee.errors.ConfigError`
    naming it.
    """
    # Resolve: every setting, the task, method, strategy, samples and batch schedule, checked
    # before anything is connected or written.
    ready = prepared(
        task, method=method, strategy=strategy, given=settings, method_options=method_options
    )
    check_pipeline(ready.settings.pipeline, batch_size)
    shown = progress_observer(progress)
    watchers = ObserverGroup([*([] if shown is None else [shown]), *observers])
    schedule, batch_label = schedule_of(
        batch_size,
        ready.strategy,
        max_batch_size=ready.settings.max_batch_size,
        tau=ready.settings.tau,
        reprofile=ready.settings.reprofile,
        on_decision=watchers.on_batch_decision,
    )
    run_plan = plan_of(ready, batch_size, llm=llm, preflight=preflight)
    start = initial_text(initial_context)
    new_folders = [] if run_dir is None else missing_folders(run_dir)
    if run_dir is not None:
        check_run_dir(run_dir, overwrite=overwrite)  # before the client makes its cache there
    client, owned = llm_of(llm, seed=ready.settings.seed)
    try:
        # Prepare: the learner, its start, the config and the point to resume from. A new
        # folder that the run refuses to start in holds only the client's cache: it goes.
        with removed_on_refusal(new_folders):
            learner = learner_for(
                ready, client, batch_size=batch_size, run_dir=run_dir, given=settings
            )
            context = start_context(learner, start, initial_context)
            config = run_config(
                ready, task, learner, client, batch_size=batch_size, batch_label=batch_label,
                initial_context=initial_context, record=record,
            )  # fmt: skip
            resume = resume_of(run_dir, learner, config, overwrite=overwrite, ready=ready)
            watchers.on_plan(run_plan if resume is None else run_plan.resumed(resume.iteration))
            if preflight:
                await client.preflight()
        # Run, in a folder made only now that everything above is fine.
        out = opened_run_dir(run_dir, overwrite=overwrite, resume=resume, client=client)
        return await recorded_run(
            ready, learner, context, schedule=schedule, executor=executor, watchers=watchers,
            out=out, config=config, client=client, resume=resume,
        )  # fmt: skip
    finally:
        # Finish: a client this run connected is this run's to close.
        if owned:
            await client.aclose()


def train(task: str | Task, **settings: Any) -> TrainResult:
    """:func:`train_async` for synchronous callers (see it for the settings)."""
    return run_sync(train_async(task, **settings), async_name="combee.train_async")
