"""Tasks: samples to learn from and how predictions are scored."""

from combee.tasks.base import Sample, Score, Splits, Task, accuracy
from combee.tasks.finer import FinerTask
from combee.tasks.formula import FormulaTask
from combee.tasks.jsonl import JsonlTask
from combee.tasks.registry import TASK_NAMES, TASKS, get_task
from combee.tasks.samples import SampleTask, as_score

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
