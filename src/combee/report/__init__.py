"""Reports over run directories, comparison grids and playbook diffs.

- :func:`write_report`: run directories in; ``report.html`` (self-contained), ``report.json``
  and PNG figures out.
- :func:`compare` / :func:`compare_async`: strategies × batch sizes × seeds, one run
  directory per cell, then the report; :func:`compare_plan`: the calls it would make.
- :func:`diff_playbooks`: bullets only in one playbook, and bullets changed between two.
"""

from typing import TYPE_CHECKING

from combee.lazy import lazy_exports

if TYPE_CHECKING:
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
    from combee.report.compare_plan import GridPlan, compare_plan
    from combee.report.diff import BulletChange, PlaybookDiff, diff_playbooks, read_playbook
    from combee.report.runs_index import RunInfo, find_runs, load_run, load_runs
    from combee.report.spec import GridSpec, load_spec
    from combee.report.table import COLUMNS, row_of

_EXPORTS = {
    "REPORT_HTML": "combee.report.build",
    "REPORT_JSON": "combee.report.build",
    "ReportFiles": "combee.report.build",
    "default_out": "combee.report.build",
    "write_report": "combee.report.build",
    "Cell": "combee.report.compare",
    "CellResult": "combee.report.compare",
    "CompareObserver": "combee.report.compare",
    "CompareResult": "combee.report.compare",
    "compare": "combee.report.compare",
    "compare_async": "combee.report.compare",
    "grid": "combee.report.compare",
    "GridPlan": "combee.report.compare_plan",
    "compare_plan": "combee.report.compare_plan",
    "BulletChange": "combee.report.diff",
    "PlaybookDiff": "combee.report.diff",
    "diff_playbooks": "combee.report.diff",
    "read_playbook": "combee.report.diff",
    "RunInfo": "combee.report.runs_index",
    "find_runs": "combee.report.runs_index",
    "load_run": "combee.report.runs_index",
    "load_runs": "combee.report.runs_index",
    "GridSpec": "combee.report.spec",
    "load_spec": "combee.report.spec",
    "COLUMNS": "combee.report.table",
    "row_of": "combee.report.table",
}
"""Public name -> its module, imported when first used."""

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "COLUMNS",
    "REPORT_HTML",
    "REPORT_JSON",
    "BulletChange",
    "Cell",
    "CellResult",
    "CompareObserver",
    "CompareResult",
    "GridPlan",
    "GridSpec",
    "PlaybookDiff",
    "ReportFiles",
    "RunInfo",
    "compare",
    "compare_async",
    "compare_plan",
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
