"""The settings GEPA takes, declared once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from combee.declare import SettingsGroup, setting


@dataclass(frozen=True)
class GepaSettings(SettingsGroup):
    OWNER: ClassVar[str] = "gepa"

    max_metric_calls: int = setting(200, "GEPA's budget of rollouts.", least=1)
