"""``combee.resume``: continue an interrupted run from its folder alone.

Rerunning the same ``train`` or ``learn`` call into the same folder continues a run (see
:mod:`combee.runs.checkpoint`); this reads the settings back from the folder's ``config.json``
instead, so only the folder needs naming.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from combee.engine.learn import learn_async
from combee.engine.results import TrainResult
from combee.engine.training import train_async
from combee.errors import ConfigError
from combee.llm.connect import CLIENTS, Endpoint
from combee.runs import CACHE_FILE, CHECKPOINT_FILE, RESULTS_FILE, read_config
from combee.runs.checkpoint import earlier_behaviour
from combee.settings import LEARN_SETTINGS, NAMES
from combee.sync import run_sync

TRAIN_SETTINGS = ("method", "strategy", "batch_size", *NAMES)
"""Settings of ``config.json`` that :func:`combee.train` takes under the same name."""

LEARN_NAMES = ("traces", *(item.name for item in LEARN_SETTINGS))
"""Settings of a learn run's ``config.json`` that :func:`combee.learn` takes besides."""


def saved_settings(run_dir: str | os.PathLike[str]) -> tuple[str, dict[str, Any]]:
    """``("train" | "learn", settings)`` to continue the unfinished run in ``run_dir``; a
    ConfigError when it cannot be continued from the folder alone."""
    folder = Path(run_dir)
    if (folder / RESULTS_FILE).exists():
        raise ConfigError(f"{folder} holds a finished run: nothing to resume", setting="resume")
    if not (folder / CHECKPOINT_FILE).exists():
        raise ConfigError(
            f"{folder} holds no checkpoint: it is not a run, or it stopped before finishing its "
            "first iteration (start it again)",
            setting="resume",
        )
    recorded = read_config(folder, setting="resume")
    config = {**earlier_behaviour(recorded, {}), **recorded}
    if config.get("initial_context") is not None:
        raise ConfigError(
            f"{folder} started from {config['initial_context']}, which the folder does not hold: "
            "rerun the original command (with its initial playbook) to continue it",
            setting="resume",
        )
    if not isinstance(config.get("batch_size"), int | str):
        raise ConfigError(f"{folder} used a batch schedule object: resume it from Python")
    settings = {key: config[key] for key in TRAIN_SETTINGS if key in config}
    if "traces" in config:
        settings.pop("method", None)
        settings.update({name: config[name] for name in LEARN_NAMES if name in config})
        return "learn", settings
    task = config.get("task_spec")
    if not isinstance(task, str):
        raise ConfigError(
            f"{folder} trained on a task object, not a task name: resume it from Python by "
            "calling combee.train with the same task and run_dir",
            setting="resume",
        )
    return "train", {"task": task, **settings}


def saved_endpoint(run_dir: str | os.PathLike[str], **overrides: Any) -> Endpoint:
    """The endpoint the run in ``run_dir`` used, as its ``config.json`` recorded it (every
    field of :class:`Endpoint` it holds, prices included; never a key), with ``overrides``."""
    config = read_config(run_dir)
    saved = config.get("endpoint") or {}
    names = {field.name for field in dataclasses.fields(Endpoint)} - {"cache", "seed", "prices"}
    fields: dict[str, Any] = {name: saved[name] for name in names if saved.get(name) is not None}
    if fields.get("client") not in CLIENTS:  # "embedded": the local model needs no client
        fields.pop("client", None)
    prices = saved.get("prices")
    return Endpoint(
        **{
            **fields,
            "cache": _cache(Path(run_dir), saved.get("cache")),
            "seed": config.get("seed", 0),
            "prices": tuple(prices) if isinstance(prices, list) and len(prices) == 2 else None,
            **overrides,
        }
    )


def _cache(folder: Path, recorded: Any) -> Path | None:
    """The run's response cache: the one it recorded when that path still holds it (it may be
    relative to another working folder), else the run folder's own."""
    if isinstance(recorded, str) and Path(recorded).is_file():
        return Path(recorded)
    own = folder / CACHE_FILE
    return own if own.is_file() else None


async def resume_async(
    run_dir: str | os.PathLike[str], *, llm: Any = None, **settings: Any
) -> TrainResult:
    """Continue the unfinished run in ``run_dir`` with the settings it recorded (``llm``: the
    endpoint it used unless given; ``settings``: e.g. ``observers``)."""
    kind, saved = saved_settings(run_dir)
    client = llm if llm is not None else saved_endpoint(run_dir)
    if kind == "learn":
        traces = saved.pop("traces")
        return await learn_async(traces, run_dir=run_dir, llm=client, **saved, **settings)
    return await train_async(saved.pop("task"), run_dir=run_dir, llm=client, **saved, **settings)


def resume(run_dir: str | os.PathLike[str], **settings: Any) -> TrainResult:
    """:func:`resume_async` for synchronous callers."""
    return run_sync(resume_async(run_dir, **settings), async_name="combee.resume_async")
