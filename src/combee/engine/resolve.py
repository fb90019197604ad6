"""Turn what a caller passed to :func:`combee.train` (names or objects) into the objects a run
needs, checking every setting before anything is created on disk or on the network."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from combee.core.batch_schedule import BatchSchedule, FixedBatchSize
from combee.core.controller import AutoBatchSize, BatchDecision
from combee.core.learner import Learner, LoopLearner
from combee.core.types import Method, Reduces, Strategy, protocol_members
from combee.declare import groups_in, offered
from combee.errors import ConfigError
from combee.files import read_setting_file
from combee.llm.client import LLM
from combee.llm.connect import Endpoint
from combee.llm.types import ChatModel, Widens
from combee.methods.registry import METHODS
from combee.plugins import call_with_accepted
from combee.settings import SETTINGS, RunSettings
from combee.strategies.registry import STRATEGIES
from combee.tasks.base import Sample, Score, Scores, Task
from combee.tasks.registry import get_task

AUTO = "auto"
METHOD_OWNERS = ("ace", "gepa")
"""The settings groups a method's factory is offered (by these keywords)."""
STRATEGY_OWNERS = ("combee", "topk")
"""The settings groups a strategy's factory is offered (by these keywords)."""
STRATEGY = frozenset(item.name for item in SETTINGS if item.owner in STRATEGY_OWNERS)
"""The strategy settings, by name."""


def whole(value: Any, setting: str, *, least: int, most: int | None = None) -> int:
    """``value`` as an int from ``least`` to ``most``, or ConfigError naming ``setting``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ConfigError(
            f"must be a whole number of at least {least} (got {value!r})", setting=setting
        )
    if most is not None and value > most:
        raise ConfigError(f"must be at most {most} (got {value})", setting=setting)
    return value


def finite(value: Any, setting: str, *, least: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"must be a finite number (got {value!r})", setting=setting)
    if least is not None and value < least:
        raise ConfigError(f"must be at least {least} (got {value!r})", setting=setting)
    return float(value)


def task_of(
    task: str | Task,
    *,
    data: str | None,
    scorer: str,
    seed: int,
    agent_steps: str = "native",
    feedback: str = "verdict",
) -> Task:
    if isinstance(task, str):
        return get_task(
            task, data=data, scorer=scorer, seed=seed, agent_steps=agent_steps, feedback=feedback
        )
    if not isinstance(task, Scores):
        raise ConfigError(
            f"must be a task name or an object with load() and score() (got {task!r})",
            setting="task",
        )
    return task


def strategy_of(
    strategy: str | Strategy, settings: RunSettings, given: Mapping[str, Any]
) -> Strategy:
    """A strategy by name, made with the strategy settings it takes (one the user changed that
    it does not take is an error naming it), or the caller's own strategy object."""
    if isinstance(strategy, str):
        options = offered(groups_in(settings, STRATEGY_OWNERS))
        chosen = changed_by_user(given, STRATEGY)
        return STRATEGIES.create(strategy, insist=chosen, seed=settings.seed, **options)
    if not isinstance(strategy, Reduces):
        raise ConfigError(
            f"must be a strategy name or an object with batch_size() and reduce() "
            f"(got {strategy!r})",
            setting="strategy",
        )
    return strategy


LLMArg = LLM | Endpoint | str | None


def llm_of(llm: LLMArg, *, seed: int) -> tuple[LLM, bool]:
    """The client, and whether this run made it (and so must close it). An :class:`Endpoint`
    or a model name is connected only now, after every other setting has been checked."""
    if llm is None or isinstance(llm, str):
        return Endpoint(llm or "local", seed=seed).connect(), True
    if isinstance(llm, Endpoint):
        return llm.connect(), True
    if not isinstance(llm, ChatModel):
        raise ConfigError(
            f"must be a model name, a combee.llm.Endpoint or a client from combee.llm.connect "
            f"(got {llm!r})",
            setting="llm",
        )
    return llm, False


def widen_for(client: object, calls: int) -> None:
    """Let ``client`` (when its concurrency follows the run) run ``calls`` calls at once, so a
    batch or an evaluation set is mapped in one wave rather than several."""
    if isinstance(client, Widens):
        client.widen(calls)


def learner_of(
    method: Any,
    llm: LLM,
    score: Callable[[str, Sample], Score],
    options: dict[str, Any],
    *,
    insist: Collection[str] = (),
) -> Learner[Any]:
    """A registered method by name (``insist``: settings the user chose, which it must take),
    a :class:`Learner`, or a bare ``Method`` (Combee's loop)."""
    if isinstance(method, str):
        factory = METHODS.factory(method)
        return call_with_accepted(
            factory, options, llm, score, insist=insist, name=f"method {method!r}"
        )
    if isinstance(method, Learner):
        return method
    offered = set(dir(method))
    if {"fit", "initial_context"} <= offered:  # meant as a Learner
        lacking = sorted(protocol_members(Learner) - offered)
        raise ConfigError(
            f"is a Learner without {', '.join(lacking)} (see combee.Learner)", setting="method"
        )
    if not isinstance(method, Method):
        needed = sorted(protocol_members(Method))
        missing = sorted(protocol_members(Method) - offered)
        raise ConfigError(
            f"must be a method name, a Learner, or an object with {', '.join(needed)} "
            f"({type(method).__name__} lacks {', '.join(missing)})",
            setting="method",
        )
    return LoopLearner(method, score, name=type(method).__name__)


def schedule_of(
    batch_size: int | str | BatchSchedule,
    strategy: Strategy,
    *,
    max_batch_size: int,
    tau: float,
    reprofile: bool,
    on_decision: Callable[[BatchDecision], None],
) -> tuple[BatchSchedule, int | str]:
    """The batch schedule and its label for config.json (a size, ``auto`` or the class name)."""
    if isinstance(batch_size, str):
        if batch_size.strip().lower() != AUTO:
            raise ConfigError(
                f"{batch_size!r}: give a whole number or 'auto'", setting="batch_size"
            )
        if strategy.batch_size(2) == 1:
            raise ConfigError(
                f"auto needs a strategy that batches; {strategy.name!r} always runs at 1",
                setting="batch_size",
            )
        controller = AutoBatchSize(
            tau=finite(tau, "tau"),
            max_batch_size=whole(max_batch_size, "max_batch_size", least=1),
            reprofile=reprofile,
            on_decision=on_decision,
        )
        return controller, AUTO
    if isinstance(batch_size, int) and not isinstance(batch_size, bool):
        size = strategy.batch_size(whole(batch_size, "batch_size", least=1))
        return FixedBatchSize(size), size
    if isinstance(batch_size, BatchSchedule):
        return batch_size, type(batch_size).__name__
    raise ConfigError(
        f"must be a whole number, 'auto' or a BatchSchedule (got {batch_size!r})",
        setting="batch_size",
    )


def limited(samples: Sequence[Sample], limit: int | None) -> list[Sample]:
    """The first ``limit`` samples (all of them for None)."""
    return list(samples) if limit is None else list(samples[:limit])


def method_options_of(settings: RunSettings) -> dict[str, Any]:
    """The settings a method's factory is offered: the sampling of every call, and each
    method's settings group (see :func:`combee.declare.offered`)."""
    sampling = {"temperature": settings.temperature, "max_tokens": settings.max_tokens}
    return {**sampling, **offered(groups_in(settings, METHOD_OWNERS))}


def changed_by_user(given: Mapping[str, Any], names: Collection[str]) -> set[str]:
    """Of ``names``, the settings the caller gave with a value other than the default."""
    defaults = {item.name: item.default for item in SETTINGS}
    return {name for name in names if name in given and given[name] != defaults[name]}


def initial_text(initial_context: Any, setting: str = "initial_context") -> tuple[str | None, Any]:
    """``(text, None)`` for a file or text to parse, ``(None, object)`` for a context object;
    a file that cannot be read is an error naming ``setting``."""
    if initial_context is None:
        return None, None
    if isinstance(initial_context, Path | os.PathLike):
        return read_setting_file(initial_context, setting), None
    if isinstance(initial_context, str):
        return initial_context, None
    return None, initial_context


def start_context(
    learner: Learner[Any],
    start: tuple[str | None, Any],
    given: Any,
    setting: str = "initial_context",
) -> Any:
    """The context a run starts from: ``start`` is :func:`initial_text` of what was ``given``;
    a file that does not parse is named in the error, as ``setting``."""
    text, value = start
    if value is not None:
        return value
    try:
        return learner.initial_context(text)
    except ConfigError as error:
        if isinstance(given, Path | os.PathLike):
            raise ConfigError(f"{os.fspath(given)} {error.problem}", setting=setting) from None
        raise
