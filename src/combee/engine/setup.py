"""A run's setup, once its settings are resolved and its client connected: the learner, the
``config.json`` it records, the point it resumes from, and its folder."""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from combee.core.batch_schedule import BatchSchedule
from combee.core.learner import Learner
from combee.core.loop_state import LoopState
from combee.core.types import Named
from combee.engine.guards import absolute_spec, data_digest
from combee.engine.prepare import Prepared
from combee.engine.resolve import changed_by_user, learner_of, method_options_of, widen_for
from combee.llm.client import LLM
from combee.runs import RunDir, keep_iterations_up_to, resume_point, saved_run_id, saved_usage
from combee.settings import LEARN_SETTINGS, NAMES
from combee.tasks.base import Task

RESUME_PARAMETERS = frozenset(
    {*NAMES, *(item.name for item in LEARN_SETTINGS), "batch_size", "method", "strategy"}
)
"""The keys of ``config.json`` that are parameters of a run: a resume refused for a
difference names each as the parameter it is (on the command line, its flag)."""


def learner_for(
    ready: Prepared,
    client: LLM,
    *,
    batch_size: int | str | BatchSchedule,
    run_dir: str | os.PathLike[str] | None,
    given: Mapping[str, Any],
) -> Learner[Any]:
    """The method's learner on ``client``, which is first let run the run's largest batch or
    evaluation set at once (``given``: the settings as the caller gave them)."""
    settings = ready.settings
    largest = settings.max_batch_size if batch_size == "auto" else batch_size
    batch = min(largest, len(ready.train)) if isinstance(largest, int) else 0
    widen_for(client, max(batch, len(ready.val), len(ready.test)))
    options = method_options_of(settings)
    # Not settings (never in config.json): the task's samples, whose shared wording the copy
    # screen allows (the whole train and val splits, whatever the limits).
    engine_given = {
        "task_samples": [*ready.splits.train, *ready.splits.val],
        "seed": settings.seed,
        "run_dir": None if run_dir is None else Path(run_dir),
    }
    return learner_of(
        ready.method,
        client,
        ready.task.score,
        {**options, **engine_given, **(ready.method_options or {})},
        insist=changed_by_user(given, options),
    )


def run_config(
    ready: Prepared,
    task: str | Task,
    learner: Learner[Any],
    client: LLM,
    *,
    batch_size: int | str | BatchSchedule,
    batch_label: int | str,
    initial_context: Any,
    record: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """What the run's ``config.json`` records (and a resume compares)."""
    settings, strategy = ready.settings, ready.strategy
    return {
        "task": ready.task.name if isinstance(ready.task, Named) else str(task),
        "task_spec": absolute_spec(task) if isinstance(task, str) else None,
        "method": learner.name,
        "strategy": strategy.name if isinstance(strategy, Named) else type(strategy).__name__,
        "batch_size": batch_size if isinstance(batch_size, int | str) else batch_label,
        "effective_batch_size": batch_label,
        **asdict(settings),
        "data": None if settings.data is None else os.path.abspath(settings.data),
        "data_sha256": data_digest(ready.task),
        "initial_context": _describe(initial_context),
        "samples": ready.sizes,
        "endpoint": dict(client.settings),
        **(record or {}),
    }


def resume_of(
    run_dir: str | os.PathLike[str] | None,
    learner: Learner[Any],
    config: Mapping[str, Any],
    *,
    overwrite: bool,
    ready: Prepared,
) -> LoopState[Any] | None:
    """The state to continue from when ``run_dir`` holds an unfinished run of this config
    (a ConfigError naming each difference when that run had other settings)."""
    if run_dir is None or overwrite or not learner.resumable:
        return None
    return resume_point(
        Path(run_dir), config, learner.load_context, len(ready.train), parameters=RESUME_PARAMETERS
    )


def opened_run_dir(
    run_dir: str | os.PathLike[str] | None,
    *,
    overwrite: bool,
    resume: LoopState[Any] | None,
    client: LLM,
) -> RunDir | None:
    """The run's folder (None: nothing is written), made only once every setting, the method,
    its start and the endpoint are fine; a resumed run's spend and iterations carried over."""
    if run_dir is None:
        return None
    out = RunDir(run_dir, overwrite=overwrite, resume=resume is not None)
    if resume is not None:
        client.absorb(saved_usage(out.path))  # the whole run's spend, not this attempt's
        keep_iterations_up_to(out, resume.iteration)
    # Replies this run paid for after its last checkpoint are replayed from the cache on
    # resume; the run's id tells them from replies another run paid for.
    earlier = saved_run_id(out.path) if resume is not None else None
    client.origin = earlier or uuid.uuid4().hex
    return out


def _describe(initial_context: Any) -> str | None:
    """How config.json names the start context: its file, or what kind of value it was."""
    if initial_context is None:
        return None
    if isinstance(initial_context, os.PathLike):
        return str(os.fspath(initial_context))
    return f"<{type(initial_context).__name__}>"
