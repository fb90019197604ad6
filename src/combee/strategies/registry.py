"""Strategies by name: ``sequential``, ``naive``, ``combee`` (``combee-sqrt``: with the paper's
``floor(sqrt(n))`` level-1 groups), the paper's baselines ``topk``,
``summarize`` and ``hier-summarize``, and any strategy registered from Python
(``STRATEGIES.register``) or by a plugin's ``combee.strategies`` entry point.

A factory is called with the options it accepts of ``seed``, the strategy settings groups by
their owner's name (``combee``: a :class:`CombeeSettings`, ``topk``: a :class:`TopKSettings`;
a factory that takes a group takes each of its settings) and each strategy setting by its own
name (``duplication``, ``fan_in``, ``groups``, ``top_k``). The same strategies serve every
method (ACE's curator, GEPA's proposer).
"""

from __future__ import annotations

import dataclasses

from combee.core.types import Strategy
from combee.declare import offered
from combee.plugins import Registry
from combee.strategies.combee import CombeeStrategy
from combee.strategies.naive import NaiveStrategy
from combee.strategies.sequential import SequentialStrategy
from combee.strategies.settings import CombeeSettings, TopKSettings
from combee.strategies.summarize import HierSummarizeStrategy, SummarizeStrategy
from combee.strategies.topk import TopKStrategy

STRATEGIES: Registry[Strategy] = Registry("strategy", "combee.strategies", setting="strategy")
STRATEGIES.register("sequential", SequentialStrategy)
STRATEGIES.register("naive", NaiveStrategy)
STRATEGIES.register("combee", CombeeStrategy)


def _combee_sqrt(combee: CombeeSettings = CombeeSettings(), *, seed: int = 0) -> Strategy:
    strategy = CombeeStrategy(dataclasses.replace(combee, groups="sqrt"), seed=seed)
    strategy.name = "combee-sqrt"
    return strategy


STRATEGIES.register("combee-sqrt", _combee_sqrt)
STRATEGIES.register("topk", TopKStrategy)
STRATEGIES.register("summarize", SummarizeStrategy)
STRATEGIES.register("hier-summarize", HierSummarizeStrategy)


def get_strategy(
    name: str,
    *,
    seed: int = 0,
    combee: CombeeSettings = CombeeSettings(),
    topk: TopKSettings = TopKSettings(),
) -> Strategy:
    """The strategy called ``name``, made with ``seed`` and the settings groups it takes;
    ConfigError for an unknown name."""
    return STRATEGIES.create(name, seed=seed, **offered([combee, topk]))
