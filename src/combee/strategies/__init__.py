"""Aggregation strategies: how a batch of reflections becomes one update."""

from combee.strategies.combee import CombeeStrategy
from combee.strategies.naive import NaiveStrategy
from combee.strategies.registry import STRATEGIES, STRATEGY_NAMES, get_strategy
from combee.strategies.sequential import SequentialStrategy

__all__ = [
    "STRATEGIES",
    "STRATEGY_NAMES",
    "CombeeStrategy",
    "NaiveStrategy",
    "SequentialStrategy",
    "get_strategy",
]
