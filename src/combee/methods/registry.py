"""Methods by name: ``ace`` (a playbook, Combee's loop) and ``gepa`` (a system prompt, through
the ``gepa`` library), and any method registered from Python (``METHODS.register``) or by a
plugin's ``combee.methods`` entry point.

A factory is called as ``factory(llm, score, **options)`` with the options it accepts of the
run's method settings (:mod:`combee.settings`: a method's group whole, ``ace=AceSettings``,
``gepa=GepaSettings``, or each of its settings by name; ``temperature``, ``max_tokens``, ...)
and what the engine gives (``seed``, ``run_dir``, the task's samples), and returns a
:class:`combee.core.learner.Learner`. A setting the user changed that the factory does not take
is an error naming the method.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from combee.core.call_counts import MethodCalls, SaysCalls
from combee.core.gate import SplitsUpdates
from combee.core.learner import Learner, LoopLearner
from combee.errors import ConfigError
from combee.llm.client import LLM
from combee.llm.types import DEFAULT_MAX_TOKENS
from combee.methods.ace.agent import AgentAceMethod
from combee.methods.ace.learner import ace_agent_learner, ace_learner, ace_traces_learner
from combee.methods.ace.method import AceMethod
from combee.methods.ace.traces import TraceAceMethod
from combee.methods.gepa.settings import GepaSettings
from combee.plugins import Registry
from combee.tasks.base import Sample, Score

METHODS: Registry[Learner[Any]] = Registry("method", "combee.methods", setting="method")
METHODS.register("ace", ace_learner)
METHODS.register("ace-traces", ace_traces_learner)
METHODS.register("ace-agent", ace_agent_learner)


def _gepa(
    llm: LLM,
    score: Callable[[str, Sample], Score],
    *,
    gepa: GepaSettings = GepaSettings(),
    temperature: float = 0.0,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    seed: int = 0,
    run_dir: Path | None = None,
) -> Learner[Any]:
    try:
        from combee.methods.gepa.learner import GepaLearner
    except ImportError as error:
        raise ConfigError(
            f"'gepa' needs the gepa library ({error.name} is missing): pip install 'combee[gepa]'",
            setting="method",
        ) from None
    return GepaLearner(
        llm,
        score,
        gepa=gepa,
        temperature=temperature,
        max_tokens=max_tokens,
        seed=seed,
        run_dir=run_dir,
    )


METHODS.register("gepa", _gepa)

_LOOP_METHODS: dict[str, type[AceMethod]] = {
    "ace": AceMethod,
    "ace-traces": TraceAceMethod,
    "ace-agent": AgentAceMethod,
}
METHOD_CALLS = {name: method.CALLS for name, method in _LOOP_METHODS.items()}
"""The calls of the registered methods that say them (a run's plan counts them)."""


def gated(method: Any) -> bool:
    """Whether a run of ``method`` (a registered name, a learner or a method object) can be
    gated: Combee's loop trains it, it previews and splits its updates, and its rollouts are
    attempts, not records (:mod:`combee.core.gate`)."""
    if isinstance(method, str):
        kind = _LOOP_METHODS.get(method)
        return kind is not None and kind.CALLS.rollout != {}
    inner = method.method if isinstance(method, LoopLearner) else method
    if not isinstance(inner, SplitsUpdates):
        return False
    return not (isinstance(inner, SaysCalls) and inner.CALLS.rollout == {})


def calls_of(method: Any) -> MethodCalls | None:
    """The calls ``method`` makes (a registered name, a learner or a method object with a
    ``CALLS`` :class:`MethodCalls`); None when it does not say them."""
    if isinstance(method, str):
        return METHOD_CALLS.get(method)
    inner = method.method if isinstance(method, LoopLearner) else method
    return inner.CALLS if isinstance(inner, SaysCalls) else None
