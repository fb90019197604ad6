"""Every setting of a training run, each declared once (see :mod:`combee.declare`).

:class:`RunSettings` gathers the settings each part declares: the loop's
(:mod:`combee.core.loop_settings`), the task's (:mod:`combee.tasks.settings`), ACE's
(:mod:`combee.methods.ace.settings`), GEPA's, the strategies' and the batch size controller's.
:func:`combee.train` validates its keywords against it, ``config.json`` records it, a resume
compares it, ``combee train`` makes one flag of each, and ``docs/settings.md`` holds
:func:`settings_table`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from combee.core.batch_settings import AutoBatchSettings
from combee.core.loop_settings import LoopSettings
from combee.declare import Declared, build, declared
from combee.methods.ace.settings import AceSettings
from combee.methods.gepa.settings import GepaSettings
from combee.strategies.settings import CombeeSettings, TopKSettings
from combee.tasks.settings import TaskSettings


@dataclass(frozen=True)
class RunSettings(
    AutoBatchSettings,
    TopKSettings,
    CombeeSettings,
    GepaSettings,
    AceSettings,
    TaskSettings,
    LoopSettings,
):
    """Every setting :func:`combee.train` takes by keyword (besides the task, method,
    strategy, batch size, endpoint and run folder)."""


def run_settings(given: Mapping[str, Any]) -> RunSettings:
    """``given`` checked against the declarations (a ConfigError naming the first setting that
    is unknown or out of bounds), the rest at their defaults."""
    found: RunSettings = build(RunSettings, given, where="combee.train")
    return found


SETTINGS: tuple[Declared, ...] = tuple(declared(RunSettings))
"""Every declared setting, in declaration order."""

NAMES: tuple[str, ...] = tuple(item.name for item in SETTINGS)


def owner_label(item: Declared) -> str:
    return {"": "every run", "auto": "batch size auto"}.get(item.owner, item.owner)


def settings_table() -> str:
    """The settings as a Markdown table (``docs/settings.md`` holds it)."""
    rows = ["| setting | flag | default | takes | applies to |", "|---|---|---|---|---|"]
    for item in SETTINGS:
        flag = "--" + item.name.replace("_", "-")
        default = "`None`" if item.default is None else f"`{item.default!r}`"
        if item.default is None and item.bounds.none:
            default += f" ({item.bounds.none})"
        rows.append(f"| `{item.name}` | `{flag}` | {default} | {item.help} | {owner_label(item)} |")
    return "\n".join(rows)
