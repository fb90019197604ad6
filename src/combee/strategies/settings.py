"""The settings Combee's own strategies take, declared once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from combee.core.capacity import GROUP_RULES
from combee.core.scan import DEFAULT_FAN_IN
from combee.declare import SettingsGroup, setting

MAX_DUPLICATION = 16
"""Copies of a reflection beyond this add calls, not coverage (the paper uses 2)."""


@dataclass(frozen=True)
class CombeeSettings(SettingsGroup):
    OWNER: ClassVar[str] = "combee"

    duplication: int = setting(
        2, "Copies p of each reflection, shuffled into the groups.", least=1, most=MAX_DUPLICATION
    )
    fan_in: int = setting(DEFAULT_FAN_IN, "The most updates one merge call sees.", least=2)
    groups: str = setting(
        "capacity",
        "Level-1 groups: capacity sizes each to what one curator call can write and read; "
        "sqrt is the paper's floor(sqrt(n)).",
        choices=GROUP_RULES,
    )


@dataclass(frozen=True)
class TopKSettings(SettingsGroup):
    OWNER: ClassVar[str] = "topk"

    top_k: int | None = setting(
        None, "Clusters; one reflection curated per cluster.", least=1, none="8"
    )
