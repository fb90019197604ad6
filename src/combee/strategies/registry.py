"""Strategies by name."""

from __future__ import annotations

from combee.core.types import Strategy
from combee.errors import ConfigError
from combee.strategies.combee import CombeeStrategy
from combee.strategies.naive import NaiveStrategy
from combee.strategies.sequential import SequentialStrategy

STRATEGY_NAMES = ("sequential", "naive", "combee")


def get_strategy(name: str, *, p: int = 2, fan_in: int = 32, seed: int = 0) -> Strategy:
    """The strategy called ``name``; ConfigError for an unknown name or bad setting."""
    if name == "sequential":
        return SequentialStrategy()
    if name == "naive":
        return NaiveStrategy()
    if name == "combee":
        if p < 1:
            raise ConfigError(f"--duplication must be at least 1 (got {p})")
        if fan_in < 2:
            raise ConfigError(f"--fan-in must be at least 2 (got {fan_in})")
        return CombeeStrategy(p=p, fan_in=fan_in, seed=seed)
    raise ConfigError(f"unknown strategy {name!r}: choose one of {', '.join(STRATEGY_NAMES)}")
