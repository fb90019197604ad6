"""Aggregation strategies: how a batch of reflections becomes one update."""

from typing import TYPE_CHECKING

from combee.lazy import lazy_exports

if TYPE_CHECKING:
    from combee.strategies.combee import CombeeStrategy
    from combee.strategies.naive import NaiveStrategy
    from combee.strategies.names import STRATEGY_NAMES
    from combee.strategies.registry import STRATEGIES, get_strategy
    from combee.strategies.sequential import SequentialStrategy
    from combee.strategies.settings import CombeeSettings, TopKSettings
    from combee.strategies.summarize import HierSummarizeStrategy, SummarizeStrategy
    from combee.strategies.topk import TopKStrategy

_EXPORTS = {
    "CombeeStrategy": "combee.strategies.combee",
    "NaiveStrategy": "combee.strategies.naive",
    "STRATEGIES": "combee.strategies.registry",
    "STRATEGY_NAMES": "combee.strategies.names",
    "get_strategy": "combee.strategies.registry",
    "SequentialStrategy": "combee.strategies.sequential",
    "CombeeSettings": "combee.strategies.settings",
    "TopKSettings": "combee.strategies.settings",
    "HierSummarizeStrategy": "combee.strategies.summarize",
    "SummarizeStrategy": "combee.strategies.summarize",
    "TopKStrategy": "combee.strategies.topk",
}
"""Public name -> its module, imported when first used."""

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "STRATEGIES",
    "STRATEGY_NAMES",
    "CombeeSettings",
    "CombeeStrategy",
    "HierSummarizeStrategy",
    "NaiveStrategy",
    "SequentialStrategy",
    "SummarizeStrategy",
    "TopKSettings",
    "TopKStrategy",
    "get_strategy",
]
