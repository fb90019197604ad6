"""A run's ``checkpoint.json``: the loop's state after its last finished iteration, written
atomically after each one, and read back by a rerun into the same folder."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from combee.core.executor import SampleFailure
from combee.core.loop_state import LoopState
from combee.errors import OVERWRITE, ConfigError, parameter
from combee.llm.types import RoleUsage
from combee.runs.layout import (
    CHECKPOINT_FILE,
    CONFIG_FILE,
    CONTEXTS_DIR,
    FAILURES_FILE,
    MARKER_FILE,
    METRICS_FILE,
    RESULTS_FILE,
    current_keys,
)
from combee.runs.run_dir import RunDir
from combee.tasks.base import Score

VERSION = 1


def write_checkpoint(
    run_dir: RunDir,
    state: LoopState[Any],
    dump: Callable[[Any], Any],
    usage: Mapping[str, RoleUsage] | None = None,
    run_id: str | None = None,
) -> None:
    """``usage``: the client's calls, tokens and cost so far (earlier attempts included), so
    that a resumed run reports what the whole run spent; ``run_id``: the run's own id, which
    a resume keeps (see :func:`saved_run_id`)."""
    run_dir.write_json(
        CHECKPOINT_FILE,
        {
            "version": VERSION,
            "epoch": state.epoch,
            "iteration": state.iteration,
            "position": state.position,
            "order": state.order,
            "rng": state.rng,
            "context": dump(state.context),
            "best_context": dump(state.best_context),
            "best_val": state.best_val,
            "train_seconds": state.train_seconds,
            "failures": [dataclasses.asdict(f) for f in state.failures],
            "parts": state.parts,
            "usage": {role: dataclasses.asdict(u) for role, u in (usage or {}).items()},
            "run_id": run_id,
        },
    )


def read_checkpoint(path: Path, load: Callable[[Any], Any], samples: int) -> LoopState[Any]:
    """The state in ``path``; a ConfigError naming the file when it is not one this version
    wrote for ``samples`` training samples."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("version") != VERSION:
            raise ValueError(f"version {data.get('version')!r}, expected {VERSION}")
        order = [int(i) for i in data["order"]]
        if sorted(order) != list(range(samples)):
            raise ValueError(f"its sample order is not one of {samples} training samples")
        return LoopState(
            epoch=int(data["epoch"]),
            iteration=int(data["iteration"]),
            position=int(data["position"]),
            order=order,
            rng=data["rng"],
            context=load(data["context"]),
            best_context=load(data["best_context"]),
            best_val=None if data["best_val"] is None else float(data["best_val"]),
            train_seconds=float(data["train_seconds"]),
            failures=[_failure(f) for f in data["failures"]],
            parts=dict(data["parts"]),
        )
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ConfigError(
            f"{path} cannot be resumed from ({error}); pass {OVERWRITE} to start the run afresh",
            setting="run_dir",
        ) from None


def saved_run_id(folder: Path) -> str | None:
    """The id the run in ``folder`` recorded in its checkpoint (None when none says)."""
    try:
        found = json.loads((folder / CHECKPOINT_FILE).read_text(encoding="utf-8")).get("run_id")
    except (OSError, ValueError, AttributeError):
        return None
    return found if isinstance(found, str) else None


def saved_iteration(folder: Path) -> int | None:
    """The iteration after which the run in ``folder`` wrote its checkpoint (None: none)."""
    try:
        found = json.loads((folder / CHECKPOINT_FILE).read_text(encoding="utf-8"))["iteration"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return found if isinstance(found, int) else None


def saved_usage(folder: Path) -> dict[str, RoleUsage]:
    """What the run's earlier attempts spent, as of its checkpoint (empty when none says)."""
    try:
        data = json.loads((folder / CHECKPOINT_FILE).read_text(encoding="utf-8"))
        return {role: RoleUsage(**fields) for role, fields in dict(data.get("usage", {})).items()}
    except (OSError, ValueError, TypeError):
        return {}


def _failure(data: Mapping[str, Any]) -> SampleFailure:
    score = data.get("score")
    return SampleFailure(
        sample_id=str(data["sample_id"]),
        stage=str(data["stage"]),
        error=str(data["error"]),
        score=None if score is None else Score(**score),
        kind=data.get("kind"),
    )


def keep_iterations_up_to(run_dir: RunDir, iteration: int) -> None:
    """Forget what iterations after ``iteration`` recorded (their metrics, failures and context
    versions): the resumed run records them again."""
    for name in (METRICS_FILE, FAILURES_FILE):
        path = run_dir.path / name
        if not path.exists():
            continue
        kept = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue  # a line cut by the crash
            if isinstance(row, dict) and int(row.get("iteration", 0)) <= iteration:
                kept.append(line)
        run_dir.write_text(name, "".join(f"{line}\n" for line in kept))
    for version in (run_dir.path / CONTEXTS_DIR).glob("iter_*.txt"):
        if int(version.stem.removeprefix("iter_")) > iteration:
            version.unlink()


def resume_point(
    folder: Path,
    config: Mapping[str, Any],
    load: Callable[[Any], Any],
    samples: int,
    *,
    parameters: Collection[str] = (),
) -> LoopState[Any] | None:
    """The state to continue from when ``folder`` holds an unfinished run with a checkpoint;
    a ConfigError naming each difference when that run had other settings (each of
    ``parameters``, the recorded keys that are parameters of a run, named as one)."""
    if not (folder / MARKER_FILE).exists() or (folder / RESULTS_FILE).exists():
        return None
    if not (folder / CHECKPOINT_FILE).exists():
        return None  # it stopped before finishing an iteration: nothing to continue
    try:
        saved = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ConfigError(
            f"{folder / 'config.json'} cannot be read ({error}); pass {OVERWRITE} to start "
            "the run afresh",
            setting="run_dir",
        ) from None
    differences = config_differences(saved, config, parameters=parameters)
    if differences:
        raise ConfigError(
            f"{folder} holds an unfinished run with other settings ({'; '.join(differences)}); "
            f"rerun it with its settings to continue it, pass {OVERWRITE} to start afresh, "
            "or choose another folder",
            setting="run_dir",
        )
    return read_checkpoint(folder / CHECKPOINT_FILE, load, samples)


def earlier_behaviour(saved: Mapping[str, Any], here: Mapping[str, Any]) -> dict[str, Any]:
    """What a run made before a setting existed did, for each such setting its ``config.json``
    lacks, beside the settings of this run (``here``; empty when resuming from the folder
    alone): ``combee`` dealt ``floor(sqrt(n))`` groups before the ``groups`` setting (a run of
    another strategy never used it: ``here``'s value stands); reflections were always screened
    before ``screen`` (its default); the task's name was ``task`` before ``task_spec``."""
    found: dict[str, Any] = {}
    if "groups" not in saved and saved.get("strategy") == "combee":
        found["groups"] = "sqrt"
    elif "groups" not in saved and "groups" in here:
        found["groups"] = here["groups"]
    if "screen" not in saved and "screen" in here:
        found["screen"] = True
    if "task_spec" not in saved and isinstance(saved.get("task"), str):
        found["task_spec"] = saved["task"]
    return found


def config_differences(
    saved: Mapping[str, Any], config: Mapping[str, Any], *, parameters: Collection[str] = ()
) -> list[str]:
    """``key: A there, B here`` for each setting that differs (of the endpoint, the model, its
    address, the JSON mode and redaction count: concurrency or timeouts may change between
    attempts)."""
    here = json.loads(json.dumps(config, default=str))
    saved = current_keys(dict(saved))

    def endpoint(c: Mapping[str, Any]) -> dict[str, Any]:
        raw = c.get("endpoint")
        found = raw if isinstance(raw, Mapping) else {}
        return {k: found.get(k) for k in ("model", "base_url", "json_mode", "redact")}

    earlier = earlier_behaviour(saved, here)
    there = {**earlier, **saved, "endpoint": endpoint(saved)}
    now = {**here, "endpoint": endpoint(here)}
    return [
        f"{parameter(key) if key in parameters else key}: {json.dumps(there.get(key))} there"
        + (" (the run predates the setting)" if key in earlier else "")
        + f", {json.dumps(now.get(key))} here"
        for key in sorted(set(there) | set(now))
        if there.get(key) != now.get(key)
        # A setting that a later version added, left off here, is what the earlier run did.
        and not (key not in there and now.get(key) in (None, False))
    ]
