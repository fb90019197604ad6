"""Every setting of a training run, each declared once (see :mod:`combee.declare`).

:class:`RunSettings` gathers the settings each part declares: the loop's
(:mod:`combee.core.loop_settings`), the task's (:mod:`combee.tasks.settings`), ACE's
(:mod:`combee.methods.ace.settings`), GEPA's, the strategies' and the batch size controller's.
:func:`combee.train` validates its keywords against it, ``config.json`` records it, a resume
compares it, ``combee train`` makes one flag of each, and ``docs/settings.md`` holds
:func:`settings_table`. Learning from traces adds the settings of
:class:`combee.tasks.traces.settings.LearnSettings` (:data:`LEARN_SETTINGS`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from combee.core.batch_settings import AutoBatchSettings
from combee.core.loop_settings import LoopSettings
from combee.declare import Declared, build, declared
from combee.methods.ace.settings import AceSettings
from combee.methods.gepa.settings import GepaSettings
from combee.strategies.settings import CombeeSettings, TopKSettings
from combee.tasks.settings import TaskSettings
from combee.tasks.traces.settings import LearnSettings


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

LEARN_SETTINGS: tuple[Declared, ...] = tuple(declared(LearnSettings))
"""The settings :func:`combee.learn` takes besides :func:`combee.train`'s."""


def owner_label(item: Declared) -> str:
    labels = {
        "": "every run",
        "auto": "batch size auto",
        "learn": "combee learn",
        "endpoint": "the endpoint",
    }
    return labels.get(item.owner, item.owner)


def settings_table(items: Sequence[Declared] = SETTINGS) -> str:
    """The settings ``items`` as a Markdown table (``docs/settings.md`` holds those of a run,
    of learning from traces and of the endpoint)."""
    rows = ["| setting | flag | default | takes | applies to |", "|---|---|---|---|---|"]
    for item in items:
        flag = item.option_flag or "(none)"
        default = "`None`" if item.default is None else f"`{item.default!r}`"
        if item.default is None and item.bounds.none:
            default += f" ({item.bounds.none})"
        takes = item.help.replace("|", "\\|")  # a bar in the help is text, not a column
        rows.append(f"| `{item.name}` | `{flag}` | {default} | {takes} | {owner_label(item)} |")
    return "\n".join(rows)
