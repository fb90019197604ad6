"""Whether two playbook files number their bullets alike.

A bullet id (``fml-00002``) is given by the run that added the bullet, counting up from its start
playbook; another run gives the same id to an unrelated lesson. Ids name the same lesson only in
versions of one run (``playbook.txt``, ``playbook_last.txt``, ``contexts/iter_NNNN.txt``) or in a
run and the playbook it started from (``config.json``'s ``initial_context``).
"""

from __future__ import annotations

import os
from pathlib import Path

from combee.errors import ConfigError
from combee.report.runs_index import is_run_dir
from combee.runs import read_config
from combee.runs.layout import CONTEXTS_DIR


def run_of(file: Path) -> Path | None:
    """The run directory a playbook file belongs to, if it does (resolved)."""
    folder = file.resolve().parent
    if folder.name == CONTEXTS_DIR and is_run_dir(folder.parent):
        return folder.parent
    return folder if is_run_dir(folder) else None


def shared_numbering(a: Path, b: Path) -> str | None:
    """Why ``a`` and ``b`` number their bullets alike (one run's versions, or one run started
    from the other's playbook), or None when nothing says they do."""
    run_a, run_b = run_of(a), run_of(b)
    if run_a is not None and run_a == run_b:
        return f"both are playbooks of the run {run_a}"
    for run, other, other_run in ((run_b, a, run_a), (run_a, b, run_b)):
        start = _start_file(run)
        if start is None:
            continue
        if start == other.resolve() or (other_run is not None and start.parent == other_run):
            return f"the run {run} started from {start}"
    return None


def _start_file(run: Path | None) -> Path | None:
    if run is None:
        return None
    try:
        start = read_config(run).get("initial_context")
    except ConfigError:
        return None
    if not isinstance(start, str) or start.startswith("<"):  # "<Playbook>": not a file
        return None
    return Path(os.path.abspath(start)).resolve()
