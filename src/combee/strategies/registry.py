"""Strategies by name: ``sequential``, ``naive``, ``combee``, and any strategy registered from
Python (``STRATEGIES.register``) or by a plugin's ``combee.strategies`` entry point.

A factory is called with the options it accepts of ``p`` (duplication), ``fan_in`` and
``seed``. The same strategies serve every method (ACE's curator, GEPA's proposer).
"""

from __future__ import annotations

from combee.core.types import Strategy
from combee.plugins import Registry
from combee.strategies.combee import CombeeStrategy
from combee.strategies.naive import NaiveStrategy
from combee.strategies.sequential import SequentialStrategy

STRATEGIES: Registry[Strategy] = Registry("strategy", "combee.strategies", setting="strategy")
STRATEGIES.register("sequential", SequentialStrategy)
STRATEGIES.register("naive", NaiveStrategy)
STRATEGIES.register("combee", CombeeStrategy)

STRATEGY_NAMES = ("sequential", "naive", "combee")
"""The built-in strategies."""


def get_strategy(name: str, *, p: int = 2, fan_in: int = 32, seed: int = 0) -> Strategy:
    """The strategy called ``name``; ConfigError for an unknown name or a bad setting."""
    return STRATEGIES.create(name, p=p, fan_in=fan_in, seed=seed)
