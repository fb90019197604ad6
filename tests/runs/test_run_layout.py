"""One module names the run directory's files; the files each method writes are the ones it
declares, and all of them are the run's to clear on --overwrite."""

from __future__ import annotations

import re

from combee.methods.ace.learner import AceLearner
from combee.methods.gepa.learner import GepaLearner
from combee.runs.layout import RUN_FILES
from combee.runs.run_dir import METHOD_FILES, OWNED
from tests.paths import ROOT

SRC = ROOT / "src" / "combee"
RUN_FILE_NAMES = ("config.json", "checkpoint.json", "metrics.jsonl", "final_results.json",
                  "run.log", "cache.sqlite", "batch_profile.json", "failures.jsonl")  # fmt: skip


def test_the_methods_files_are_declared_by_their_learners() -> None:
    assert AceLearner.files | GepaLearner.files <= METHOD_FILES
    assert RUN_FILES | AceLearner.files | GepaLearner.files <= OWNED


def test_only_the_layout_names_the_run_files_in_code() -> None:
    quoted = re.compile("|".join(f'"{re.escape(name)}"' for name in RUN_FILE_NAMES))
    naming = sorted(
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if quoted.search(path.read_text(encoding="utf-8"))
    )
    # minilm.py reads the embedding model's own config.json, and trace_import.py names the files
    # other harnesses write beside their traces: neither is a run's
    assert naming == [
        "embedding/minilm.py",
        "runs/layout.py",
        "tasks/traces/formats/trace_import.py",
    ]
