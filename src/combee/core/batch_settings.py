"""The settings of the batch size controller (``batch_size="auto"``), declared once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from combee.core.controller import DEFAULT_MAX_BATCH_SIZE, DEFAULT_TAU
from combee.declare import SettingsGroup, setting


@dataclass(frozen=True)
class AutoBatchSettings(SettingsGroup):
    OWNER: ClassVar[str] = "auto"

    max_batch_size: int = setting(
        DEFAULT_MAX_BATCH_SIZE, "The largest batch size the controller may choose.", least=1
    )
    tau: float = setting(
        DEFAULT_TAU,
        "Grow the batch while one more sample still cuts epoch time by this fraction "
        "(alpha/b >= tau).",
        above=0.0,
    )
    reprofile: bool = setting(False, "Profile the sizes again at the start of every epoch.")
