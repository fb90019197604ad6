"""A training run from start to end: :func:`train_async` resolves and checks its inputs, plans
it, connects, trains (resuming a run its folder holds), evaluates and records; :mod:`combee.api`
is its front door."""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

from combee.core.batch_schedule import BatchSchedule, ProfiledSchedule
from combee.core.executor import AsyncioExecutor, Executor
from combee.core.learner import Learner, ReportsIterations
from combee.core.loop_observer import LoopObserver, ObserverGroup
from combee.core.loop_settings import LoopSettings
from combee.core.loop_state import LoopState
from combee.core.types import Named, Strategy
from combee.engine.episodes import (
    BASELINE_TEST_EPISODES_FILE,
    TEST_EPISODES_FILE,
    episode_lines,
    episode_summary,
    has_episodes,
    invalid_steps,
    paired_outcomes,
)
from combee.engine.evaluation import observed_evaluation
from combee.engine.guards import (
    absolute_spec,
    check_evaluation,
    data_digest,
    held,
    removed_on_refusal,
)
from combee.engine.plan import plan_of
from combee.engine.prepare import prepared
from combee.engine.resolve import (
    LLMArg,
    changed_by_user,
    initial_text,
    learner_of,
    llm_of,
    method_options_of,
    schedule_of,
    start_context,
    widen_for,
)
from combee.engine.results import TrainResult, usage_summary
from combee.errors import ConfigError, RunFailedError
from combee.llm.client import LLM
from combee.progress import ProgressArg, progress_observer
from combee.runs import (
    CONFIG_FILE,
    RESULTS_FILE,
    ProfileRecorder,
    RunDir,
    RunRecorder,
    check_run_dir,
    keep_iterations_up_to,
    logging_to,
    missing_folders,
    resume_point,
    saved_run_id,
    saved_usage,
)
from combee.sync import run_sync
from combee.tasks.agent import AgentTask
from combee.tasks.base import Sample, Task

T = TypeVar("T")


logger = logging.getLogger(__name__)


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
    given = settings
    ready = prepared(
        task, method=method, strategy=strategy, given=given, method_options=method_options
    )
    settings_, the_task, the_strategy = ready.settings, ready.task, ready.strategy
    method, method_options = ready.method, ready.method_options
    if settings_.pipeline and not isinstance(batch_size, int):
        raise ConfigError(
            f"needs a fixed batch size (got batch_size={batch_size!r}): the next batch is drawn "
            "before this one's time is known",
            setting="pipeline",
        )
    seed = settings_.seed
    shown = progress_observer(progress)
    watchers = ObserverGroup([*([] if shown is None else [shown]), *observers])
    schedule, batch_label = schedule_of(
        batch_size,
        the_strategy,
        max_batch_size=settings_.max_batch_size,
        tau=settings_.tau,
        reprofile=settings_.reprofile,
        on_decision=watchers.on_batch_decision,
    )
    splits = ready.splits
    train_set, val_set, test_set = ready.train, ready.val, ready.test
    run_plan = plan_of(ready, batch_size, llm=llm, preflight=preflight)
    start = initial_text(initial_context)
    new_folders = [] if run_dir is None else missing_folders(run_dir)
    if run_dir is not None:
        check_run_dir(run_dir, overwrite=overwrite)  # before the client makes its cache there
    client, owned = llm_of(llm, seed=seed)
    try:
        largest = settings_.max_batch_size if batch_size == "auto" else batch_size
        batch = min(largest, len(train_set)) if isinstance(largest, int) else 0
        widen_for(client, max(batch, len(val_set), len(test_set)))
        options = method_options_of(settings_)
        # A new folder that the run refuses to start in holds only the client's cache.
        with removed_on_refusal(new_folders):
            # Not settings (never in config.json): the task's samples, whose shared wording the
            # copy screen allows (the whole train and val splits, whatever the limits).
            engine_given = {
                "task_samples": [*splits.train, *splits.val],
                "seed": seed,
                "run_dir": None if run_dir is None else Path(run_dir),
            }
            learner = learner_of(
                method,
                client,
                the_task.score,
                {**options, **engine_given, **(method_options or {})},
                insist=changed_by_user(given, options),
            )
            context = start_context(learner, start, initial_context)
            config = {
                "task": the_task.name if isinstance(the_task, Named) else str(task),
                "task_spec": absolute_spec(task) if isinstance(task, str) else None,
                "method": learner.name,
                "strategy": the_strategy.name
                if isinstance(the_strategy, Named)
                else type(the_strategy).__name__,
                "batch_size": batch_size if isinstance(batch_size, int | str) else batch_label,
                "effective_batch_size": batch_label,
                **asdict(settings_),
                "data": None if settings_.data is None else os.path.abspath(settings_.data),
                "data_sha256": data_digest(the_task),
                "initial_context": _describe(initial_context),
                "samples": {"train": len(train_set), "val": len(val_set), "test": len(test_set)},
                "endpoint": dict(client.settings),
                **(record or {}),
            }
            resume = None
            if run_dir is not None and not overwrite and learner.resumable:
                resume = resume_point(Path(run_dir), config, learner.load_context, len(train_set))
            if resume is not None:
                run_plan = run_plan.resumed(resume.iteration)
            watchers.on_plan(run_plan)  # before the first call
            if preflight:
                await client.preflight()
        # The run directory is made only once every setting, the method, its start and the
        # endpoint are fine.
        out = None
        if run_dir is not None:
            out = RunDir(run_dir, overwrite=overwrite, resume=resume is not None)
            if resume is not None:
                client.absorb(saved_usage(out.path))  # the whole run's spend, not this attempt's
                keep_iterations_up_to(out, resume.iteration)
            # Replies this run paid for after its last checkpoint are replayed from the cache
            # on resume; the run's id tells them from replies another run paid for.
            earlier = saved_run_id(out.path) if resume is not None else None
            client.origin = earlier or uuid.uuid4().hex
        if out is not None and isinstance(schedule, ProfiledSchedule):
            watchers.observers.append(ProfileRecorder(out, schedule.profile))
        with logging_to(out), held(out):
            if resume is not None:
                logger.info("resuming %s after iteration %d", run_dir, resume.iteration)
            if out is not None:
                out.write_json(CONFIG_FILE, config)
            watchers.on_run_start(
                config if resume is None else {**config, "resumed_after": resume.iteration}
            )
            try:
                ended = await _run(
                    learner,
                    context,
                    (train_set, val_set, test_set),
                    strategy=the_strategy,
                    schedule=schedule,
                    executor=executor or AsyncioExecutor(),
                    watchers=watchers,
                    out=out,
                    config=settings_,
                    episodes=isinstance(the_task, AgentTask),
                    client=client,
                    resume=resume,
                )
            except BaseException:
                watchers.on_run_end(None)  # stopped: it may be resumed
                raise
            watchers.on_run_end(ended.summary)
            return ended
    finally:
        if owned:
            await client.aclose()


async def _run(
    learner: Learner[Any],
    context: Any,
    splits: tuple[list[Sample], list[Sample], list[Sample]],
    *,
    strategy: Strategy,
    schedule: BatchSchedule,
    executor: Executor,
    watchers: ObserverGroup,
    out: RunDir | None,
    config: LoopSettings,
    episodes: bool,
    client: LLM,
    resume: LoopState[Any] | None = None,
) -> TrainResult:
    train_set, val_set, test_set = splits
    baseline = config.baseline
    summary: dict[str, Any] = {}
    if baseline and test_set:
        before = await observed_evaluation(
            learner, context, test_set, executor, watchers, "baseline test"
        )
        check_evaluation(before, "baseline test", config.max_failed_share, out)
        summary["baseline_test_accuracy"] = before.accuracy()
        if has_episodes(before):
            summary.update(episode_summary("baseline_test", before))
            if out is not None:
                out.write_text(BASELINE_TEST_EPISODES_FILE, episode_lines(before))
    observer: LoopObserver = watchers
    recorder: RunRecorder | None = None
    if out is not None:
        dump = learner.dump_context if learner.resumable else None
        recorder = RunRecorder(
            out,
            usage=client.usage,
            render=learner.render,
            stats=(
                learner.iteration_stats if isinstance(learner, ReportsIterations) else learner.stats
            ),
            inner=watchers,
            dump=dump,
            run_id=client.origin,
        )
        observer = recorder
    stem = Path(learner.context_file)
    try:
        outcome = await learner.fit(
            context,
            train_set,
            val_set,
            strategy=strategy,
            schedule=schedule,
            executor=executor,
            observer=observer,
            config=config,
            **({} if resume is None else {"resume": resume}),
        )
    except BaseException as error:
        # Never lose finished work: the latest context is saved before the error surfaces.
        if out is not None and recorder is not None and recorder.latest_context is not None:
            out.write_text(learner.context_file, learner.render(recorder.latest_context))
        if isinstance(error, RunFailedError) and out is not None:
            raise RunFailedError(
                f"{error}. Finished iterations are saved in {out.path}; no results were written"
            ) from None
        raise
    text = learner.render(outcome.best_context)
    if out is not None:
        out.write_text(learner.context_file, text)
        out.write_text(f"{stem.stem}_last{stem.suffix}", learner.render(outcome.final_context))
    started = time.perf_counter()
    test = await observed_evaluation(
        learner, outcome.best_context, test_set, executor, watchers, "test"
    )
    check_evaluation(test, "test", config.max_failed_share, out)
    summary.update(
        {
            "test_accuracy": test.accuracy() if test_set else None,
            "test_samples": len(test_set),
            "test_failed_samples": len(test.failures),
            "test_seconds": round(time.perf_counter() - started, 3),
            "best_val_accuracy": outcome.best_val_accuracy,
            "train_seconds": round(outcome.train_seconds, 3),
            "iterations": outcome.iterations,
            "train_failed_samples": len(outcome.failures),
            **learner.stats(outcome.best_context),
            **learner.results(),
            **usage_summary(client.usage()),
        }
    )
    if episodes:  # an agent run: its steps that never gave a valid action
        baseline_lost = before.failures if baseline and test_set else []
        summary["train_invalid_steps"] = invalid_steps(outcome.failures)
        summary["invalid_steps"] = invalid_steps(
            [*outcome.failures, *test.failures, *baseline_lost]
        )
    if has_episodes(test):
        summary.update(episode_summary("test", test))
        if out is not None:
            out.write_text(TEST_EPISODES_FILE, episode_lines(test))
        if baseline and test_set:
            summary["test_paired"] = paired_outcomes(before, test)
    if isinstance(schedule, ProfiledSchedule) and schedule.decisions:
        summary["chosen_batch_size"] = schedule.chosen
    if out is not None:
        out.write_json(RESULTS_FILE, summary)
    return TrainResult(
        context=outcome.best_context,
        final_context=outcome.final_context,
        text=text,
        summary=summary,
        run_dir=None if out is None else out.path,
        failures=list(outcome.failures),
    )


def train(task: str | Task, **settings: Any) -> TrainResult:
    """:func:`train_async` for synchronous callers (see it for the settings)."""
    return run_sync(train_async(task, **settings), async_name="combee.train_async")


def _describe(initial_context: Any) -> str | None:
    """How config.json names the start context: its file, or what kind of value it was."""
    if initial_context is None:
        return None
    if isinstance(initial_context, os.PathLike):
        return str(os.fspath(initial_context))
    return f"<{type(initial_context).__name__}>"
