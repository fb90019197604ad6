"""A GEPA run continues after a crash from its last finished iteration.

gepa saves its own state (a pickle, ``gepa_state.bin``) before each iteration. After each
save, :class:`GepaCheckpoint` keeps a copy named by the iteration it follows and hands the run a
:class:`combee.core.loop_state.LoopState` holding the copy's SHA-256 digest and the states of
Combee's parts (the minibatch sampler, gepa's candidate selector, the reflection step, the
strategy, the batch schedule). On resume, :func:`restore_gepa_state` puts the copy back only when
its digest is the one recorded, so no pickle this run did not write is ever loaded.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from combee.core.loop_observer import LoopObserver
from combee.core.loop_state import LoopState, part_states, rng_state
from combee.errors import OVERWRITE, ConfigError

GEPA_STATE_FILE = "gepa_state.bin"
"""Where gepa saves and looks for its state inside its run folder."""

_SNAPSHOT = re.compile(r"iter_\d{4,}\.bin")


class GepaCheckpoint:
    """A gepa callback that checkpoints the run after each iteration (see the module).

    gepa ignores what its callbacks raise, so an error is kept in :attr:`error` and ``stop``
    is called; the learner raises it once gepa has returned.
    """

    def __init__(
        self,
        state_dir: Path,
        observer: LoopObserver,
        parts: dict[str, object],
        selector_rng: random.Random,
        *,
        train_size: int,
        component: str,
        earlier_seconds: float,
        stop: Callable[[], None],
    ) -> None:
        self.state_dir = state_dir
        self.observer = observer
        self.parts = parts
        self.selector_rng = selector_rng
        self.train_size = train_size
        self.component = component
        self.stop = stop
        self.error: Exception | None = None
        self._started = time.perf_counter() - earlier_seconds
        self._state: Any = None

    def on_iteration_end(self, event: Mapping[str, Any]) -> None:
        self._state = event["state"]

    def on_state_saved(self, event: Mapping[str, Any]) -> None:
        if self._state is not None:  # else: nothing finished since the start or the resume
            self._checkpoint(int(event["iteration"]))

    def on_optimization_end(self, event: Mapping[str, Any]) -> None:
        state = event["final_state"]
        if self._state is not None:  # gepa saved its final state just before this event
            self._state = state
            self._checkpoint(int(state.i) + 1)

    def _checkpoint(self, iteration: int) -> None:
        try:
            self._write(iteration)
        except Exception as error:  # kept for the learner to raise
            if self.error is None:
                self.error = error
            self.stop()

    def _write(self, iteration: int) -> None:
        snapshot = self.state_dir / f"iter_{iteration:04d}.bin"
        partial = snapshot.with_name(snapshot.name + ".partial")
        try:
            shutil.copyfile(self.state_dir / GEPA_STATE_FILE, partial)
            os.replace(partial, snapshot)
        except OSError:  # a full disk: no half-written snapshot is left
            partial.unlink(missing_ok=True)
            raise
        scores = list(self._state.program_full_scores_val_set)
        best = max(range(len(scores)), key=scores.__getitem__)
        context = str(self._state.program_candidates[best][self.component])
        parts = part_states(self.parts)
        parts["gepa_state"] = {"file": snapshot.name, "sha256": _digest(snapshot)}
        self.observer.on_checkpoint(
            LoopState(
                epoch=1,
                iteration=iteration,
                position=0,
                order=list(range(self.train_size)),
                rng=rng_state(self.selector_rng),
                context=context,
                best_context=context,
                best_val=float(scores[best]),
                train_seconds=time.perf_counter() - self._started,
                parts=parts,
            )
        )
        for older in self.state_dir.glob("iter_*.bin"):
            if older != snapshot:
                older.unlink(missing_ok=True)


def restore_gepa_state(state_dir: Path, parts: Mapping[str, Any]) -> None:
    """Put back the gepa state that the checkpoint in ``parts`` recorded; a ConfigError when the
    file is missing or is not the one this run wrote."""
    found = parts.get("gepa_state")
    info: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    name = info.get("file")
    if not isinstance(name, str) or not _SNAPSHOT.fullmatch(name):
        raise ConfigError(
            f"{state_dir.parent / 'checkpoint.json'} names no gepa state to continue from; "
            f"pass {OVERWRITE} to start the run afresh",
            setting="run_dir",
        )
    snapshot = state_dir / name
    if not snapshot.is_file() or _digest(snapshot) != info.get("sha256"):
        raise ConfigError(
            f"{snapshot} is missing or is not the gepa state this run saved (its SHA-256 differs "
            f"from the one in checkpoint.json), so it is not loaded; pass {OVERWRITE} to start "
            "the run afresh",
            setting="run_dir",
        )
    shutil.copyfile(snapshot, state_dir / GEPA_STATE_FILE)


def _digest(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()
