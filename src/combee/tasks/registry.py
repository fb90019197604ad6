"""Tasks by name: ``formula``, ``finer``, ``jsonl`` (with a data path, or ``jsonl:PATH``)."""

from __future__ import annotations

from combee.errors import ConfigError
from combee.tasks.base import Task
from combee.tasks.finer import FinerTask
from combee.tasks.formula import FormulaTask
from combee.tasks.jsonl import JsonlTask

TASK_NAMES = ("formula", "finer", "jsonl")

_JSONL_PREFIX = "jsonl:"


def get_task(name: str, *, data: str | None = None, scorer: str = "exact", seed: int = 0) -> Task:
    """The task called ``name``. Nothing is read until ``load()``.

    ``data`` and ``scorer`` apply to ``jsonl`` only (the built-in tasks bring their own data and
    scoring); ``seed`` drives every seeded split (FiNER's sentence-group cut, JSONL cuts).
    """
    if name.startswith(_JSONL_PREFIX):
        path = name[len(_JSONL_PREFIX) :].strip()
        if not path:
            raise ConfigError('task "jsonl:" needs a path after the colon, e.g. jsonl:data.jsonl')
        if data is not None and data != path:
            raise ConfigError(
                f"task {name!r} already names its data; do not also pass data={data!r}"
            )
        return JsonlTask(path, scorer=scorer, seed=seed)
    if name == "jsonl":
        if not data:
            raise ConfigError(
                'task "jsonl" needs a data file: pass data=PATH or name the task "jsonl:PATH"'
            )
        return JsonlTask(data, scorer=scorer, seed=seed)
    if name in ("formula", "finer") and data is not None:
        raise ConfigError(f"task {name!r} uses its bundled data; data= is only for the jsonl task")
    if name == "formula":
        return FormulaTask()
    if name == "finer":
        return FinerTask(seed=seed)
    raise ConfigError(
        f"unknown task {name!r}; known tasks: {', '.join(TASK_NAMES)} (or jsonl:PATH)"
    )
