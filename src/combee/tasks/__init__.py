"""Tasks: samples to learn from and how predictions are scored."""

from typing import TYPE_CHECKING

from combee.lazy import lazy_exports

if TYPE_CHECKING:
    from combee.tasks.base import Sample, Score, Splits, Task, accuracy
    from combee.tasks.finer import FinerTask
    from combee.tasks.formula import FormulaTask
    from combee.tasks.jsonl import JsonlTask
    from combee.tasks.registry import TASK_NAMES, TASKS, get_task
    from combee.tasks.samples import SampleTask, as_score

_EXPORTS = {
    "Sample": "combee.tasks.base",
    "Score": "combee.tasks.base",
    "Splits": "combee.tasks.base",
    "Task": "combee.tasks.base",
    "accuracy": "combee.tasks.base",
    "FinerTask": "combee.tasks.finer",
    "FormulaTask": "combee.tasks.formula",
    "JsonlTask": "combee.tasks.jsonl",
    "TASK_NAMES": "combee.tasks.registry",
    "TASKS": "combee.tasks.registry",
    "get_task": "combee.tasks.registry",
    "SampleTask": "combee.tasks.samples",
    "as_score": "combee.tasks.samples",
}
"""Public name -> its module, imported when first used."""

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "TASKS",
    "TASK_NAMES",
    "FinerTask",
    "FormulaTask",
    "JsonlTask",
    "Sample",
    "SampleTask",
    "Score",
    "Splits",
    "Task",
    "accuracy",
    "as_score",
    "get_task",
]
