"""Strategies by name: ``sequential``, ``naive``, ``combee`` (``combee-sqrt``: with the paper's
``floor(sqrt(n))`` level-1 groups), the paper's baselines ``topk``,
``summarize`` and ``hier-summarize``, and any strategy registered from Python
(``STRATEGIES.register``) or by a plugin's ``combee.strategies`` entry point.

A factory is called with the options it accepts of ``p`` (duplication), ``fan_in``, ``seed``,
``groups`` (``combee``'s level-1 group rule) and ``top_k`` (``topk``'s cluster count; None: its
default). The same strategies serve every
method (ACE's curator, GEPA's proposer).
"""

from __future__ import annotations

from combee.core.types import Strategy
from combee.plugins import Registry
from combee.strategies.combee import CombeeStrategy
from combee.strategies.naive import NaiveStrategy
from combee.strategies.sequential import SequentialStrategy
from combee.strategies.settings import CombeeSettings
from combee.strategies.summarize import HierSummarizeStrategy, SummarizeStrategy
from combee.strategies.topk import TopKStrategy

STRATEGIES: Registry[Strategy] = Registry("strategy", "combee.strategies", setting="strategy")
STRATEGIES.register("sequential", SequentialStrategy)
STRATEGIES.register("naive", NaiveStrategy)
STRATEGIES.register("combee", CombeeStrategy)


def _combee_sqrt(
    *, p: int = CombeeSettings.duplication, fan_in: int = CombeeSettings.fan_in, seed: int = 0
) -> Strategy:
    strategy = CombeeStrategy(p=p, fan_in=fan_in, seed=seed, groups="sqrt")
    strategy.name = "combee-sqrt"
    return strategy


STRATEGIES.register("combee-sqrt", _combee_sqrt)
STRATEGIES.register("topk", TopKStrategy)
STRATEGIES.register("summarize", SummarizeStrategy)
STRATEGIES.register("hier-summarize", HierSummarizeStrategy)


def get_strategy(
    name: str,
    *,
    p: int = CombeeSettings.duplication,
    fan_in: int = CombeeSettings.fan_in,
    seed: int = 0,
    top_k: int | None = None,
    groups: str = CombeeSettings.groups,
) -> Strategy:
    """The strategy called ``name``; ConfigError for an unknown name or a bad setting."""
    return STRATEGIES.create(name, p=p, fan_in=fan_in, seed=seed, top_k=top_k, groups=groups)
