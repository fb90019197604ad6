"""Reports over run directories, comparison grids and playbook diffs.

- :func:`write_report`: run directories in; ``report.html`` (self-contained), ``report.json``
  and PNG figures out.
- :func:`compare` / :func:`compare_async`: strategies × batch sizes × seeds, one run
  directory per cell, then the report.
- :func:`diff_playbooks`: bullets only in one playbook, and bullets changed between two.
"""

from combee.report.build import REPORT_HTML, REPORT_JSON, ReportFiles, default_out, write_report
from combee.report.compare import (
    Cell,
    CellResult,
    CompareObserver,
    CompareResult,
    compare,
    compare_async,
    grid,
)
from combee.report.diff import BulletChange, PlaybookDiff, diff_playbooks, read_playbook
from combee.report.runs_index import RunInfo, find_runs, load_run, load_runs
from combee.report.spec import GridSpec, load_spec
from combee.report.table import COLUMNS, row_of

__all__ = [
    "COLUMNS",
    "REPORT_HTML",
    "REPORT_JSON",
    "BulletChange",
    "Cell",
    "CellResult",
    "CompareObserver",
    "CompareResult",
    "GridSpec",
    "PlaybookDiff",
    "ReportFiles",
    "RunInfo",
    "compare",
    "compare_async",
    "default_out",
    "diff_playbooks",
    "find_runs",
    "grid",
    "load_run",
    "load_runs",
    "load_spec",
    "read_playbook",
    "row_of",
    "write_report",
]
