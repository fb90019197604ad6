"""The front door: :func:`train` and :func:`evaluate`, for Python callers and the CLI alike.

Every argument takes a registered name or the caller's own object (a task, a method, a
strategy, a batch schedule, an LLM client, an executor), in the manner of ``gepa.optimize``.
The run engine behind it is :mod:`combee.engine`.
"""

from __future__ import annotations

from combee.engine.evaluation import evaluate, evaluate_async
from combee.engine.training import train, train_async

__all__ = ["evaluate", "evaluate_async", "train", "train_async"]
