"""Combee: scale prompt learning (ACE, GEPA) with parallel map, augmented shuffle and scan
aggregation.

    import combee
    llm = combee.llm.connect("gpt-4o-mini")
    result = combee.train("formula", strategy="combee", batch_size=40, llm=llm, run_dir="runs/x")

See ``docs/api.md``.
"""

from combee import llm
from combee.api import train, train_async
from combee.core.executor import AsyncioExecutor, Executor
from combee.core.learner import Learner, LoopLearner
from combee.core.loop import LoopObserver
from combee.core.types import Method, Reflection, Strategy, Trajectory
from combee.errors import CombeeError, ConfigError, DatasetError, EndpointError, LLMCallError
from combee.evaluation import evaluate, evaluate_async
from combee.learn import learn, learn_async
from combee.methods.registry import METHODS
from combee.offline_eval import NextActionResult, evaluate_next_actions, evaluate_next_actions_async
from combee.results import EvalResult, TrainResult
from combee.resume import resume, resume_async
from combee.strategies.registry import STRATEGIES
from combee.tasks.agent import AgentTask, Episode, with_playbook
from combee.tasks.base import Sample, Score, Splits, Task
from combee.tasks.registry import TASKS
from combee.tasks.samples import SampleTask

__version__ = "0.1.0"

register_strategy = STRATEGIES.register
register_task = TASKS.register
register_method = METHODS.register

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
    "Sample",
    "SampleTask",
    "Score",
    "Splits",
    "Strategy",
    "Task",
    "TrainResult",
    "Trajectory",
    "__version__",
    "evaluate",
    "evaluate_async",
    "evaluate_next_actions",
    "evaluate_next_actions_async",
    "learn",
    "learn_async",
    "llm",
    "register_method",
    "register_strategy",
    "register_task",
    "resume",
    "resume_async",
    "train",
    "train_async",
    "with_playbook",
]
