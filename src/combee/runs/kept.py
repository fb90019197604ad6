"""What a run directory keeps after a run stopped on a file it could not write: said in the
one line that reports it, so the user knows what is saved and how the run goes on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from combee.files import UnwritableRunDir
from combee.runs.checkpoint import saved_iteration
from combee.runs.layout import CONTEXTS_DIR, METRICS_FILE
from combee.runs.run_dir import RunDir


@contextmanager
def saying_what_is_kept(out: RunDir | None, context_file: str) -> Iterator[None]:
    """A file of ``out`` that cannot be written stops the run with one line saying what the
    folder keeps (:func:`kept_in`)."""
    try:
        yield
    except UnwritableRunDir as error:
        if out is None:
            raise
        raise error.keeping(kept_in(out.path, context_file)) from None


def recorded_iterations(folder: Path) -> list[int]:
    """The iterations ``metrics.jsonl`` records, in its order."""
    try:
        lines = (folder / METRICS_FILE).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and isinstance(row.get("iteration"), int):
            found.append(row["iteration"])
    return found


def kept_in(folder: Path, context_file: str) -> str:
    """``folder keeps ...``: the iterations recorded, whether ``context_file`` holds the last
    one's context, and the checkpoint a rerun continues from."""
    iterations = recorded_iterations(folder)
    kept = []
    if iterations:
        first, last = iterations[0], iterations[-1]
        span = f"iteration {last}" if first == last else f"iterations {first}-{last}"
        kept.append(f"{span} in {METRICS_FILE} and {CONTEXTS_DIR}/")
        if _same_text(folder / context_file, folder / CONTEXTS_DIR / f"iter_{last:04d}.txt"):
            kept.append(f"{context_file} as of iteration {last}")
    checkpoint = saved_iteration(folder)
    if checkpoint is None:
        then = "no checkpoint: the same command starts the run again once there is room"
    else:
        then = (
            f"a checkpoint after iteration {checkpoint}: the same command continues from it "
            "once there is room"
        )
    held = ", ".join(kept) + " and " if kept else "no finished iteration, "
    return f"{folder} keeps {held}{then}; no file is left half-written"


def _same_text(one: Path, other: Path) -> bool:
    try:
        return one.read_bytes() == other.read_bytes()
    except OSError:
        return False
