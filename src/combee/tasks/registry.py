"""Tasks by name: ``formula``, ``finer``, ``rules`` (seeded synthetic rules), ``rules-unstated``
(the same, its feedback a verdict and reference answer only), ``jsonl`` (with a
data path, or ``jsonl:PATH``), ``agentdojo:SUITE`` (``agentdojo:SUITE@ATTACK`` under one of
AgentDojo's attacks), and any task registered from Python (``TASKS.register``) or by a plugin's
``combee.tasks`` entry point. A factory is called with the options it accepts of ``data``,
``scorer`` and ``seed``."""

from __future__ import annotations

from combee.errors import ConfigError, Placeholder, parameter
from combee.plugins import Registry
from combee.tasks.agentdojo import agentdojo_task, parse_task_name
from combee.tasks.base import Task
from combee.tasks.finer import FinerTask
from combee.tasks.formula import FormulaTask
from combee.tasks.jsonl import JsonlTask
from combee.tasks.rules import RulesTask

TASKS: Registry[Task] = Registry(
    "task", "combee.tasks", setting="task", hint=" (or jsonl:PATH, agentdojo:SUITE)"
)

_JSONL_PREFIX = "jsonl:"
_AGENTDOJO_PREFIX = "agentdojo:"


def _bundled(name: str, data: str | None) -> None:
    if data is not None:
        raise ConfigError(
            f"is only for the jsonl task; task {name!r} uses its bundled data", setting="data"
        )


def _formula(*, data: str | None = None) -> Task:
    _bundled("formula", data)
    return FormulaTask()


def _finer(*, data: str | None = None, seed: int = 0) -> Task:
    _bundled("finer", data)
    return FinerTask(seed=seed)


def _jsonl(*, data: str | None = None, scorer: str = "exact", seed: int = 0) -> Task:
    if not data:
        raise ConfigError(
            f"task 'jsonl' needs a data file: pass {parameter('data', Placeholder('PATH'))} or "
            "name the task 'jsonl:PATH'"
        )
    return JsonlTask(data, scorer=scorer, seed=seed)


def _rules(*, data: str | None = None, seed: int = 0) -> Task:
    _bundled("rules", data)
    return RulesTask(seed=seed)


def _rules_unstated(*, data: str | None = None, seed: int = 0) -> Task:
    _bundled("rules-unstated", data)
    return RulesTask(seed=seed, state_rule=False)


TASKS.register("formula", _formula)
TASKS.register("finer", _finer)
TASKS.register("jsonl", _jsonl)
TASKS.register("rules", _rules)
TASKS.register("rules-unstated", _rules_unstated)

TASK_NAMES = ("formula", "finer", "jsonl", "rules", "rules-unstated")
"""The built-in tasks."""


def get_task(
    name: str,
    *,
    data: str | None = None,
    scorer: str = "exact",
    seed: int = 0,
    agent_steps: str = "native",
    feedback: str = "verdict",
) -> Task:
    """The task called ``name``. Nothing is read until ``load()``.

    ``agentdojo:SUITE`` splits the suite's user tasks in halves by ``seed``
    (:func:`combee.tasks.agentdojo.agentdojo_task` for other splits).
    ``data`` and ``scorer`` apply to ``jsonl`` only (the built-in tasks bring their own data and
    scoring); ``seed`` drives every seeded split (FiNER's sentence-group cut, JSONL cuts).
    ``agent_steps`` and ``feedback`` apply to ``agentdojo:`` tasks only.
    """
    if name.startswith(_AGENTDOJO_PREFIX):
        _bundled(name, data)
        suite, attack = parse_task_name(name[len(_AGENTDOJO_PREFIX) :])
        try:
            return agentdojo_task(
                suite, seed=seed, attack=attack, steps=agent_steps, feedback=feedback
            )
        except ConfigError as error:
            if error.setting != "suite":
                raise
            raise ConfigError(f"{name!r}: the suite {error.problem}", setting="task") from None
    if name.startswith(_JSONL_PREFIX):
        path = name[len(_JSONL_PREFIX) :].strip()
        if not path:
            raise ConfigError(
                "'jsonl:' needs a path after the colon, e.g. jsonl:data.jsonl", setting="task"
            )
        if data is not None and data != path:
            raise ConfigError(
                f"{data!r} conflicts with task {name!r}, which already names its data",
                setting="data",
            )
        return JsonlTask(path, scorer=scorer, seed=seed)
    return TASKS.create(name, data=data, scorer=scorer, seed=seed)


def with_attack(name: str, attack: str | None) -> str:
    """The task ``name`` under AgentDojo's ``attack`` (``agentdojo:banking`` and
    ``important_instructions`` give ``agentdojo:banking@important_instructions``)."""
    if attack is None:
        return name
    if not name.startswith(_AGENTDOJO_PREFIX) or "@" in name:
        raise ConfigError(
            f"applies to an AgentDojo task without one, agentdojo:SUITE (the task is {name!r})",
            setting="attack",
        )
    return f"{name}@{attack}"
