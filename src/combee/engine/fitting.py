"""A set-up run's course in its folder: the baseline, the learner's fit, the test of the best
context, and the results written and returned."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from combee.core.batch_schedule import BatchSchedule, ProfiledSchedule
from combee.core.episodes import (
    BASELINE_TEST_EPISODES_FILE,
    TEST_EPISODES_FILE,
    episode_lines,
    episode_summary,
    has_episodes,
    invalid_steps,
    paired_outcomes,
)
from combee.core.evaluate import Evaluation
from combee.core.executor import AsyncioExecutor, Executor
from combee.core.learner import Learner, ReportsIterations
from combee.core.loop_observer import LoopObserver, ObserverGroup
from combee.core.loop_settings import LoopSettings
from combee.core.loop_state import LoopState
from combee.core.types import Strategy
from combee.engine.evaluation import observed_evaluation
from combee.engine.guards import check_evaluation, held
from combee.engine.prepare import Prepared
from combee.engine.results import TrainResult, usage_summary
from combee.errors import RunFailedError
from combee.files import UnwritableRunDir
from combee.llm.client import LLM
from combee.runs import CONFIG_FILE, RESULTS_FILE, ProfileRecorder, RunDir, RunRecorder, logging_to
from combee.runs.kept import saying_what_is_kept
from combee.tasks.agent import AgentTask
from combee.tasks.base import Sample

logger = logging.getLogger(__name__)

Splits = tuple[list[Sample], list[Sample], list[Sample]]
"""The samples a run trains on, validates on and tests on."""


async def recorded_run(
    ready: Prepared,
    learner: Learner[Any],
    context: Any,
    *,
    schedule: BatchSchedule,
    executor: Executor | None,
    watchers: ObserverGroup,
    out: RunDir | None,
    config: dict[str, Any],
    client: LLM,
    resume: LoopState[Any] | None,
) -> TrainResult:
    """The run of ``learner`` from ``context`` on ``ready``'s samples, with its folder held
    and logged to, its ``config`` written, and the observers told of its start and its end (an
    end without a summary when it stopped: it may be resumed)."""
    if out is not None and isinstance(schedule, ProfiledSchedule):
        watchers.observers.append(ProfileRecorder(out, schedule.profile))
    with logging_to(out), held(out), saying_what_is_kept(out, learner.context_file):
        if resume is not None and out is not None:
            logger.info("resuming %s after iteration %d", out.path, resume.iteration)
        if out is not None:
            out.write_json(CONFIG_FILE, config)
        watchers.on_run_start(
            config if resume is None else {**config, "resumed_after": resume.iteration}
        )
        try:
            ended = await _fit_and_test(
                learner,
                context,
                (ready.train, ready.val, ready.test),
                strategy=ready.strategy,
                schedule=schedule,
                executor=executor or AsyncioExecutor(),
                watchers=watchers,
                out=out,
                config=ready.settings,
                episodes=isinstance(ready.task, AgentTask),
                client=client,
                resume=resume,
            )
        except BaseException:
            watchers.on_run_end(None)  # stopped: it may be resumed
            raise
        watchers.on_run_end(ended.summary)
        return ended


async def _fit_and_test(
    learner: Learner[Any],
    context: Any,
    splits: Splits,
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
    summary: dict[str, Any] = {}
    before: Evaluation | None = None
    if config.baseline and test_set:
        before = await _baseline_test(
            learner, context, test_set, executor, watchers, config, out, summary
        )
    recorder = _recorder(learner, client, watchers, out)
    observer: LoopObserver = watchers if recorder is None else recorder
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
            try:
                out.write_text(learner.context_file, learner.render(recorder.latest_context))
            except UnwritableRunDir as unsaved:  # the error that stopped the run is the news
                if not isinstance(error, UnwritableRunDir):
                    logger.warning("%s", unsaved)
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
        baseline_lost = [] if before is None else before.failures
        summary["train_invalid_steps"] = invalid_steps(outcome.failures)
        summary["invalid_steps"] = invalid_steps(
            [*outcome.failures, *test.failures, *baseline_lost]
        )
    if has_episodes(test):
        summary.update(episode_summary("test", test))
        if out is not None:
            out.write_text(TEST_EPISODES_FILE, episode_lines(test))
        if before is not None:
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


async def _baseline_test(
    learner: Learner[Any],
    context: Any,
    test_set: list[Sample],
    executor: Executor,
    watchers: ObserverGroup,
    config: LoopSettings,
    out: RunDir | None,
    summary: dict[str, Any],
) -> Evaluation:
    """The starting context scored on the test samples (``summary`` gets its figures)."""
    before: Evaluation = await observed_evaluation(
        learner, context, test_set, executor, watchers, "baseline test"
    )
    check_evaluation(before, "baseline test", config.max_failed_share, out)
    summary["baseline_test_accuracy"] = before.accuracy()
    if has_episodes(before):
        summary.update(episode_summary("baseline_test", before))
        if out is not None:
            out.write_text(BASELINE_TEST_EPISODES_FILE, episode_lines(before))
    return before


def _recorder(
    learner: Learner[Any], client: LLM, watchers: ObserverGroup, out: RunDir | None
) -> RunRecorder | None:
    """What records each iteration in the run's folder, before telling ``watchers``."""
    if out is None:
        return None
    return RunRecorder(
        out,
        usage=client.usage,
        render=learner.render,
        stats=learner.iteration_stats if isinstance(learner, ReportsIterations) else learner.stats,
        inner=watchers,
        dump=learner.dump_context if learner.resumable else None,
        run_id=client.origin,
    )
