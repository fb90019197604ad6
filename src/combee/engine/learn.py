"""``combee.learn``: a playbook from recorded agent trajectories, without re-running anything.

The traces are a task whose samples are the records; the reflector reads each trace instead of
a fresh attempt, and everything after it (strategies, batch sizes, the controller, the run
directory) is :func:`combee.train`'s. The settings of learning from traces are declared once in
:class:`combee.tasks.traces.settings.LearnSettings`.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Iterable, Sequence
from typing import Any

from combee.core.loop_settings import SPLIT_SETTINGS, LoopSettings
from combee.declare import build, declared
from combee.engine.plan import RunPlan, plan
from combee.engine.results import TrainResult
from combee.engine.training import train_async
from combee.errors import ConfigError
from combee.mlflow_store import shown_uri
from combee.sync import run_sync
from combee.tasks.traces import Trace, TraceTask, read_traces, render_transcript
from combee.tasks.traces.formats.trace_import import TraceImport
from combee.tasks.traces.settings import READ_SETTINGS, LearnSettings

logger = logging.getLogger(__name__)

_SPLITS_OFF = {
    item.name: item.default for item in declared(LoopSettings) if item.name in SPLIT_SETTINGS
}
"""The settings that score a test or validation split, which traces lack, at their defaults
(off)."""


async def learn_async(
    traces: Iterable[str | os.PathLike[str]], *, seed: int = 0, **settings: Any
) -> TrainResult:
    """Learn an ACE playbook from the trace files ``traces`` (files or folders).

    The settings of learning from traces (see ``docs/settings.md``): ``format``: ``auto``
    (detected per file) or one of :data:`combee.tasks.traces.FORMATS`. ``holdout_tasks``: task
    ids, chosen by ``seed``, whose traces stay out of learning (named in ``config.json`` as
    ``held_out_tasks``). ``limit``: learn from only that many traces, spread over the tasks by
    ``seed``. ``contrast``: show a trace beside a recorded trace of the same task with the other
    outcome. ``transcript_tokens``: the trajectory's share of the reflector's prompt; longer
    traces are cut by a rule that keeps the decisions, the errors and the end (see
    :mod:`combee.tasks.traces.transcript`). ``mlflow:EXPERIMENT`` in ``traces`` reads that
    experiment's traces from the MLflow server at ``tracking_uri`` (default
    ``MLFLOW_TRACKING_URI``), those after the ISO time ``since``. Other settings are
    :func:`combee.train_async`'s (``strategy``, ``batch_size``, ``llm``, ``run_dir``, ...), but
    ``baseline`` and ``val_every``, a ConfigError: traces have no test or validation split.
    """
    chosen = _learn_settings(settings)
    paths = [os.fspath(path) for path in traces]
    imported = _imported(paths, chosen)
    loaded = imported.traces
    budget = chosen.transcript_tokens
    cut = sum(1 for t in loaded if render_transcript(t.messages, max_tokens=budget).cuts)
    summary = imported.summary(cut=cut, budget=budget)
    logger.info("traces: %s", summary)
    record = {
        "trace_import": {**imported.record(), "cut": cut, "summary": summary},
        "traces": paths,
        **(settings.pop("record", None) or {}),
    }
    return await _learn(loaded, chosen, seed=seed, record=record, settings=settings)


def learn_plan(
    traces: Iterable[str | os.PathLike[str]], *, seed: int = 0, **settings: Any
) -> RunPlan:
    """The plan of :func:`learn_async` with these arguments: the calls it would make by role
    and what they may spend, counted from the traces read (no model is connected, no call made)."""
    chosen = _learn_settings(settings)
    imported = _imported([os.fspath(path) for path in traces], chosen)
    task, keywords = _trace_run(imported.traces, chosen, seed=seed, settings=settings)
    return plan(task, **keywords)


def _imported(paths: list[str], chosen: LearnSettings) -> TraceImport:
    return read_traces(
        paths, format=chosen.format, tracking_uri=chosen.tracking_uri, since=chosen.since
    )


async def learn_traces_async(
    traces: Sequence[Trace],
    *,
    seed: int = 0,
    record: dict[str, Any] | None = None,
    **settings: Any,
) -> TrainResult:
    """Learn an ACE playbook from loaded :class:`combee.tasks.traces.Trace` objects (for
    example a gateway's store; see :func:`learn_async` for the settings, but those that say
    how files are read: ``format``, ``since``, ``tracking_uri``)."""
    chosen = _learn_settings(settings)
    for name in READ_SETTINGS:
        if getattr(chosen, name) != getattr(LearnSettings, name):
            raise ConfigError(
                "says how trace files are read; these traces are loaded already",
                setting=name,
            )
    return await _learn(traces, chosen, seed=seed, record=record or {}, settings=settings)


def _learn_settings(settings: dict[str, Any]) -> LearnSettings:
    """The settings of learning from traces, taken out of ``settings`` and checked against
    their declarations (the rest are :func:`combee.train`'s)."""
    names = [field.name for field in dataclasses.fields(LearnSettings)]
    given = {name: settings.pop(name) for name in names if name in settings}
    chosen: LearnSettings = build(LearnSettings, given, where="combee.learn")
    return chosen


async def _learn(
    traces: Sequence[Trace],
    chosen: LearnSettings,
    *,
    seed: int,
    record: dict[str, Any],
    settings: dict[str, Any],
) -> TrainResult:
    task, keywords = _trace_run(traces, chosen, seed=seed, settings=settings)
    uri = chosen.tracking_uri
    record = {
        **record,
        **dataclasses.asdict(chosen),
        "tracking_uri": shown_uri(uri) if uri else None,  # never a password
        "held_out_tasks": task.held_out,
    }
    return await train_async(task, record=record, **keywords)


def _trace_run(
    traces: Sequence[Trace], chosen: LearnSettings, *, seed: int, settings: dict[str, Any]
) -> tuple[TraceTask, dict[str, Any]]:
    """The trace task and the :func:`combee.train` keywords of learning from ``traces``."""
    for name, off in _SPLITS_OFF.items():
        if settings.get(name, off) != off:
            raise ConfigError(
                f"does not apply to learning from traces (got {settings[name]!r}): they have no "
                "test or validation samples to score; judge the playbook on held-out tasks with "
                "combee.evaluate_next_actions (combee eval-traces --run RUN_DIR)",
                setting=name,
            )
    task = TraceTask(
        list(traces), holdout_tasks=chosen.holdout_tasks, seed=seed, limit=chosen.limit
    )
    keywords = {
        "method": settings.pop("method", "ace-traces"),
        "seed": seed,
        "method_options": {
            "traces": [t for t in traces if t.task_id not in task.held_out],
            "contrast": chosen.contrast,
            "transcript_tokens": chosen.transcript_tokens,
        },
        **settings,
    }
    return task, keywords


def learn(traces: Iterable[str | os.PathLike[str]], **settings: Any) -> TrainResult:
    """:func:`learn_async` for synchronous callers (see it for the settings)."""
    return run_sync(learn_async(traces, **settings), async_name="combee.learn_async")
