"""Methods by name: ``ace`` (a playbook, Combee's loop) and ``gepa`` (a system prompt, through
the ``gepa`` library), and any method registered from Python (``METHODS.register``) or by a
plugin's ``combee.methods`` entry point.

A factory is called as ``factory(llm, score, **options)`` with the options it accepts of
``token_budget``, ``temperature``, ``max_tokens``, ``seed``, ``max_metric_calls`` and
``run_dir``, and returns a :class:`combee.core.learner.Learner`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from combee.core.learner import Learner
from combee.errors import ConfigError
from combee.llm.types import ChatModel
from combee.methods.ace.learner import ace_agent_learner, ace_learner, ace_traces_learner
from combee.plugins import Registry, call_with_accepted
from combee.tasks.base import Sample, Score

METHODS: Registry[Learner[Any]] = Registry("method", "combee.methods", setting="method")
METHODS.register("ace", ace_learner)
METHODS.register("ace-traces", ace_traces_learner)
METHODS.register("ace-agent", ace_agent_learner)


def _gepa(llm: ChatModel, score: Callable[[str, Sample], Score], **options: Any) -> Learner[Any]:
    try:
        from combee.methods.gepa.learner import GepaLearner
    except ImportError as error:
        raise ConfigError(
            f"'gepa' needs the gepa library ({error.name} is missing): pip install 'combee[gepa]'",
            setting="method",
        ) from None
    return call_with_accepted(GepaLearner, options, llm, score)


METHODS.register("gepa", _gepa)
