"""What keeps a run honest around its loop: the folder held while it runs, the data it was
started on recorded so a resume can tell, and evaluations that lost too many samples refused."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from combee.core.evaluate import Evaluation
from combee.errors import CombeeError, ConfigError, RunFailedError, parameter
from combee.runs import RunDir
from combee.tasks.jsonl import JsonlTask


@contextlib.contextmanager
def held(out: RunDir | None) -> Iterator[None]:
    """The run directory stays locked to this process while the run goes on, and is let go
    when it ends however it ends (then another process may continue it)."""
    try:
        yield
    finally:
        if out is not None:
            out.close()


@contextlib.contextmanager
def removed_on_refusal(new_folders: Sequence[Path]) -> Iterator[None]:
    """The folders this run made (``new_folders``, the deepest first; see
    :func:`combee.runs.run_dir.missing_folders`) are removed again when a setting, the start or
    the endpoint is refused inside the block: nothing of the run is in them yet."""
    try:
        yield
    except CombeeError:
        if new_folders:
            shutil.rmtree(new_folders[0], ignore_errors=True)
            for folder in new_folders[1:]:
                with contextlib.suppress(OSError):
                    folder.rmdir()
        raise


def absolute_spec(task: str) -> str:
    """``jsonl:PATH`` with PATH absolute, so that a resume from another folder finds it."""
    prefix = "jsonl:"
    if task.startswith(prefix) and task[len(prefix) :].strip():
        return prefix + os.path.abspath(task[len(prefix) :].strip())
    return task


def data_digest(task: Any) -> str | None:
    """The sha256 of a JSONL task's data files, so that a resume notices they changed."""
    if not isinstance(task, JsonlTask):
        return None
    digest = hashlib.sha256()
    for path in (task.train_path, task.val_path, task.test_path):
        if path is not None and path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def check_evaluation(
    evaluation: Evaluation, label: str, max_failed_share: float, out: RunDir | None
) -> None:
    """An evaluation that lost more samples to failed calls than ``max_failed_share`` allows
    measures the endpoint, not the context: the run stops before writing results."""
    lost, total = len(evaluation.failures), evaluation.samples
    if not lost or lost <= max_failed_share * total:
        return
    saved = (
        ""
        if out is None
        else f". Finished iterations are saved in {out.path}; no results were written, and "
        "the same command evaluates again"
    )
    raise RunFailedError(
        f"the {label} evaluation lost {lost} of {total} samples to failed calls, more than "
        f"the {max_failed_share:.0%} allowed (max_failed_share); the first: "
        f"{evaluation.failures[0].error}{saved}"
    )


def check_pipeline(pipeline: bool, batch_size: object) -> None:
    """A pipelined run draws the next batch before this one's time is known: it needs a fixed
    batch size."""
    if pipeline and not isinstance(batch_size, int):
        raise ConfigError(
            f"needs a fixed batch size (got {parameter('batch_size', batch_size)}): the next "
            "batch is drawn before this one's time is known",
            setting="pipeline",
        )
