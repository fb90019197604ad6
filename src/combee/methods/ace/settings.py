"""The settings ACE takes (``ace``, ``ace-traces``, ``ace-agent``), declared once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from combee.declare import SettingsGroup, setting

REPAIRS = ("copy_rules", "drop_contradictions", "overrule_drops")
"""ACE's repairs: the settings that add or keep text the model did not write, or leave out
text it did (:mod:`combee.methods.ace.grounding`, :mod:`~combee.methods.ace.coverage`,
:mod:`~combee.methods.ace.merging`)."""


@dataclass(frozen=True)
class AceSettings(SettingsGroup):
    OWNER: ClassVar[str] = "ace"

    token_budget: int | None = setting(
        8000,
        "Playbook token cap: bullets beyond it are evicted, least helpful first.",
        least=1,
        none="no limit",
        cli_zero_is_none=True,
    )
    dedup: bool | None = setting(
        None,
        "Fold a lesson that repeats a bullet in other words into it, by embedding similarity "
        "(None: when the embed extra is installed, unless COMBEE_DEDUP=0).",
    )
    screen: bool = setting(
        True,
        "Keep out reflections that carry an instruction planted in the data or copy the data "
        "they were shown.",
    )
    copy_rules: bool = setting(
        True,
        "Repair: carry a rule the scorer's feedback states into a lesson the reflector wrote "
        "without it, and into the playbook when no curator wrote it (lesson_sources feedback, "
        "repaired omitted_rule).",
    )
    drop_contradictions: bool = setting(
        True,
        "Repair: leave out a lesson's sentence or a curator's operation that states a rule of "
        "the feedback with other numbers (dropped contradicts_feedback).",
    )
    overrule_drops: bool = setting(
        True,
        "Repair: keep an operation a merge dropped when nothing kept names what it names "
        "(repaired merge_drop_overruled).",
    )
