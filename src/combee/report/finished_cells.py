"""Whether a grid cell that finished earlier was run with the settings the grid has now.

A finished cell is skipped, so a rerun of ``compare`` with other settings would otherwise
report the old cells as this grid's. The cell's ``config.json`` is compared with what this grid
would record for it, as far as that is known before the run: the task, the method, every run
setting (its given value or its default), the start context's file and the endpoint's model and
address. A setting an older ``config.json`` lacks is not compared.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from combee.core.types import Named
from combee.engine.guards import absolute_spec
from combee.errors import parameter
from combee.llm.connect import Endpoint
from combee.llm.redact import without_credentials
from combee.settings import NAMES, run_settings
from combee.tasks.base import Task

_FLAGGED = ("method", "initial_context")
"""Recorded keys beside the run settings that are parameters of a run (the task is recorded
as ``task_spec``, the endpoint as ``endpoint.model``: not parameter names)."""
_PER_CELL = ("seed",)
"""Run settings a grid sets per cell (the strategy and batch size are not run settings)."""


def grid_config(task: str | Task, settings: Mapping[str, Any]) -> dict[str, Any]:
    """What a cell's ``config.json`` records of this grid's task, method and settings (the
    endpoint aside: see :func:`endpoint_config`)."""
    wanted: dict[str, Any] = asdict(run_settings({k: settings[k] for k in settings if k in NAMES}))
    for key in _PER_CELL:
        wanted.pop(key, None)
    if wanted.get("data") is not None:
        wanted["data"] = os.path.abspath(wanted["data"])
    if isinstance(task, str):
        wanted["task_spec"] = absolute_spec(task)
    elif isinstance(task, Named):
        wanted["task"] = task.name
    method = settings.get("method", "ace")
    if isinstance(method, str):
        wanted["method"] = method
    start = settings.get("initial_context")
    if start is None or isinstance(start, os.PathLike):
        wanted["initial_context"] = None if start is None else os.fspath(start)
    return wanted


def endpoint_config(llm: Any) -> dict[str, Any]:
    """The endpoint's model and address as ``config.json`` records them (``endpoint.model``);
    nothing for an LLM given as a client or left to the default."""
    if not isinstance(llm, Endpoint):
        return {}
    return {"endpoint.model": llm.model, "endpoint.base_url": without_credentials(llm.base_url)}


def differences(config: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[str]:
    """``key A there, B now`` for each wanted setting the cell's config records otherwise."""
    found = []
    for key, value in wanted.items():
        there = _recorded(config, key)
        if there is _MISSING:
            continue
        now = _plain(value)
        if there != now and not _same_method(key, there, now):
            named = parameter(key) if key in NAMES or key in _FLAGGED else key
            found.append(f"{named} {json.dumps(there)} there, {json.dumps(now)} now")
    return found


_MISSING = object()


def _recorded(config: Mapping[str, Any], key: str) -> Any:
    head, _, rest = key.partition(".")
    if head not in config:
        return _MISSING
    value = config[head]
    if rest:
        return _recorded(value, rest) if isinstance(value, Mapping) else _MISSING
    return _plain(value)


def _plain(value: Any) -> Any:
    """As JSON holds it: a tuple as a list, a path as its text."""
    return json.loads(json.dumps(value, default=str))


def _same_method(key: str, there: Any, now: Any) -> bool:
    # On an agent task, ``ace`` runs as ``ace-agent`` (see combee.train).
    return key == "method" and now == "ace" and there == "ace-agent"
