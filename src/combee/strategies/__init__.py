"""Aggregation strategies: how a batch of reflections becomes one update."""

from combee.strategies.combee import CombeeStrategy
from combee.strategies.naive import NaiveStrategy
from combee.strategies.registry import STRATEGIES, STRATEGY_NAMES, get_strategy
from combee.strategies.sequential import SequentialStrategy
from combee.strategies.summarize import HierSummarizeStrategy, SummarizeStrategy
from combee.strategies.topk import TopKStrategy

__all__ = [
    "STRATEGIES",
    "STRATEGY_NAMES",
    "CombeeStrategy",
    "HierSummarizeStrategy",
    "NaiveStrategy",
    "SequentialStrategy",
    "SummarizeStrategy",
    "TopKStrategy",
    "get_strategy",
]
