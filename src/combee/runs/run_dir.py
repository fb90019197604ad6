"""A run directory on disk. Every file is written so that an interrupted run keeps what it did."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from combee.errors import ConfigError

RESULTS_FILE = "final_results.json"
PROFILE_FILE = "batch_profile.json"


class RunDir:
    """``config.json``, ``metrics.jsonl``, ``contexts/iter_NNNN.txt``, the final context and
    ``final_results.json``; ``failures.jsonl`` lists samples skipped after failed calls."""

    def __init__(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
        self.path = Path(path)
        if (self.path / RESULTS_FILE).exists() and not overwrite:
            raise ConfigError(
                f"{self.path} already holds a finished run ({RESULTS_FILE}); "
                "choose another directory or pass overwrite=True",
                setting="run_dir",
            )
        try:
            (self.path / "contexts").mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ConfigError(
                f"{self.path}: cannot create the run directory: {error}", setting="run_dir"
            ) from error
        if overwrite:
            for stale in ("metrics.jsonl", "failures.jsonl", RESULTS_FILE, PROFILE_FILE):
                (self.path / stale).unlink(missing_ok=True)
            for folder in ("contexts", "gepa_state"):
                shutil.rmtree(self.path / folder, ignore_errors=True)
            (self.path / "contexts").mkdir(parents=True, exist_ok=True)

    def write_json(self, name: str, data: Mapping[str, Any]) -> Path:
        return self.write_text(name, json.dumps(data, indent=2, sort_keys=False) + "\n")

    def write_text(self, name: str, text: str) -> Path:
        """Write atomically: a reader never sees half a file."""
        target = self.path / name
        partial = target.with_name(target.name + ".partial")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, target)
        return target

    def append_jsonl(self, name: str, row: Mapping[str, Any]) -> None:
        with (self.path / name).open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")

    def write_context(self, iteration: int, text: str) -> Path:
        return self.write_text(f"contexts/iter_{iteration:04d}.txt", text)
