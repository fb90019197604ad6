"""Tasks: samples to learn from and how predictions are scored."""

from combee.tasks.base import Sample, Score, Splits, Task, accuracy
from combee.tasks.finer import FinerTask
from combee.tasks.formula import FormulaTask
from combee.tasks.jsonl import JsonlTask
from combee.tasks.registry import TASK_NAMES, get_task

__all__ = [
    "TASK_NAMES",
    "FinerTask",
    "FormulaTask",
    "JsonlTask",
    "Sample",
    "Score",
    "Splits",
    "Task",
    "accuracy",
    "get_task",
]
