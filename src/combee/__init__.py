"""Combee: scale prompt learning (ACE, GEPA) with parallel map, augmented shuffle and scan
aggregation.

    import combee
    llm = combee.llm.connect("gpt-4o-mini")
    result = combee.train("formula", strategy="combee", batch_size=40, llm=llm, run_dir="runs/x")

See ``docs/api.md``.
"""

# Nothing is imported here beyond what the interpreter has already loaded, so that Ctrl-C while
# the ``combee`` command starts lands inside its entry point, which ends quietly.
TYPE_CHECKING = False

__version__ = "0.1.0"

if TYPE_CHECKING:
    from typing import Any

    from combee import llm
    from combee.api import train, train_async
    from combee.core.executor import AsyncioExecutor, Executor
    from combee.core.learner import Learner, LoopLearner
    from combee.core.loop_observer import LoopObserver
    from combee.core.types import Method, Reflection, Strategy, Trajectory
    from combee.engine.evaluation import evaluate, evaluate_async
    from combee.engine.learn import learn, learn_async, learn_plan
    from combee.engine.offline_eval import (
        NextActionResult,
        evaluate_next_actions,
        evaluate_next_actions_async,
    )
    from combee.engine.plan import RunPlan, plan
    from combee.engine.results import EvalResult, TrainResult
    from combee.engine.resume import resume, resume_async
    from combee.errors import CombeeError, ConfigError, DatasetError, EndpointError, LLMCallError
    from combee.methods.registry import METHODS
    from combee.strategies.registry import STRATEGIES
    from combee.tasks.agent import AgentTask, Episode, with_playbook
    from combee.tasks.agents_sdk import episode_from_agents_run
    from combee.tasks.base import Sample, Score, Splits, Task
    from combee.tasks.registry import TASKS
    from combee.tasks.samples import SampleTask

    register_strategy = STRATEGIES.register
    register_task = TASKS.register
    register_method = METHODS.register

_EXPORTS: dict[str, tuple[str, str | None]] = {
    "llm": ("combee.llm", None),
    "train": ("combee.api", "train"),
    "train_async": ("combee.api", "train_async"),
    "AsyncioExecutor": ("combee.core.executor", "AsyncioExecutor"),
    "Executor": ("combee.core.executor", "Executor"),
    "Learner": ("combee.core.learner", "Learner"),
    "LoopLearner": ("combee.core.learner", "LoopLearner"),
    "LoopObserver": ("combee.core.loop_observer", "LoopObserver"),
    "Method": ("combee.core.types", "Method"),
    "Reflection": ("combee.core.types", "Reflection"),
    "Strategy": ("combee.core.types", "Strategy"),
    "Trajectory": ("combee.core.types", "Trajectory"),
    "CombeeError": ("combee.errors", "CombeeError"),
    "ConfigError": ("combee.errors", "ConfigError"),
    "DatasetError": ("combee.errors", "DatasetError"),
    "EndpointError": ("combee.errors", "EndpointError"),
    "LLMCallError": ("combee.errors", "LLMCallError"),
    "evaluate": ("combee.engine.evaluation", "evaluate"),
    "evaluate_async": ("combee.engine.evaluation", "evaluate_async"),
    "learn": ("combee.engine.learn", "learn"),
    "learn_async": ("combee.engine.learn", "learn_async"),
    "learn_plan": ("combee.engine.learn", "learn_plan"),
    "METHODS": ("combee.methods.registry", "METHODS"),
    "NextActionResult": ("combee.engine.offline_eval", "NextActionResult"),
    "evaluate_next_actions": ("combee.engine.offline_eval", "evaluate_next_actions"),
    "evaluate_next_actions_async": ("combee.engine.offline_eval", "evaluate_next_actions_async"),
    "plan": ("combee.engine.plan", "plan"),
    "RunPlan": ("combee.engine.plan", "RunPlan"),
    "EvalResult": ("combee.engine.results", "EvalResult"),
    "TrainResult": ("combee.engine.results", "TrainResult"),
    "resume": ("combee.engine.resume", "resume"),
    "resume_async": ("combee.engine.resume", "resume_async"),
    "STRATEGIES": ("combee.strategies.registry", "STRATEGIES"),
    "AgentTask": ("combee.tasks.agent", "AgentTask"),
    "Episode": ("combee.tasks.agent", "Episode"),
    "with_playbook": ("combee.tasks.agent", "with_playbook"),
    "episode_from_agents_run": ("combee.tasks.agents_sdk", "episode_from_agents_run"),
    "Sample": ("combee.tasks.base", "Sample"),
    "Score": ("combee.tasks.base", "Score"),
    "Splits": ("combee.tasks.base", "Splits"),
    "Task": ("combee.tasks.base", "Task"),
    "TASKS": ("combee.tasks.registry", "TASKS"),
    "SampleTask": ("combee.tasks.samples", "SampleTask"),
    "register_strategy": ("combee.strategies.registry", "STRATEGIES.register"),
    "register_task": ("combee.tasks.registry", "TASKS.register"),
    "register_method": ("combee.methods.registry", "METHODS.register"),
}
"""Public name -> (module, attribute): imported when first used, so that ``import combee`` (and
the command line starting up) stays light."""


def __getattr__(name: str) -> "Any":
    if name not in _EXPORTS:
        raise AttributeError(f"module 'combee' has no attribute {name!r}")
    module_name, attribute = _EXPORTS[name]
    from importlib import import_module

    value: Any = import_module(module_name)
    for part in (attribute or "").split("."):
        if part:
            value = getattr(value, part)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__all__ = [
    "METHODS",
    "STRATEGIES",
    "TASKS",
    "AgentTask",
    "AsyncioExecutor",
    "CombeeError",
    "ConfigError",
    "DatasetError",
    "EndpointError",
    "Episode",
    "EvalResult",
    "Executor",
    "LLMCallError",
    "Learner",
    "LoopLearner",
    "LoopObserver",
    "Method",
    "NextActionResult",
    "Reflection",
    "RunPlan",
    "Sample",
    "SampleTask",
    "Score",
    "Splits",
    "Strategy",
    "Task",
    "TrainResult",
    "Trajectory",
    "__version__",
    "episode_from_agents_run",
    "evaluate",
    "evaluate_async",
    "evaluate_next_actions",
    "evaluate_next_actions_async",
    "learn",
    "learn_async",
    "learn_plan",
    "llm",
    "plan",
    "register_method",
    "register_strategy",
    "register_task",
    "resume",
    "resume_async",
    "train",
    "train_async",
    "with_playbook",
]
