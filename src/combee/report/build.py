"""``write_report``: run directories in, ``report.html``, ``report.json`` and PNGs out."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from combee.errors import ConfigError
from combee.report import html
from combee.report.plots import PLOTS, pyplot
from combee.report.recommend import recommendation
from combee.report.runs_index import RunInfo, load_runs
from combee.report.summary import SPREAD, Group, groups_of, ordered
from combee.report.table import COLUMNS, row_of

REPORT_HTML = "report.html"
REPORT_JSON = "report.json"


@dataclass
class ReportFiles:
    """What :func:`write_report` wrote, and the table's rows (as in ``report.json``)."""

    html: Path
    json: Path
    figures: list[Path] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    runs: list[RunInfo] = field(default_factory=list)
    remarks: list[str] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)
    """Each strategy and batch size over its seeds, in the rows' order."""
    recommendation: str = ""
    """The sentence at the top of the report: which configuration to use, and why."""


def default_out(run_dirs: Sequence[str | os.PathLike[str]]) -> Path:
    """Where the report goes when no ``out`` is given: the one directory named, else the
    directory the named ones share (``./report`` when they share only the root)."""
    paths = [Path(p).resolve() for p in run_dirs]
    if len(paths) == 1:
        return paths[0]
    try:
        shared = Path(os.path.commonpath(paths))
    except ValueError:  # on different drives
        return Path("report")
    return shared if shared.parent != shared else Path("report")


def write_report(
    run_dirs: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str] | None = None,
    *,
    title: str | None = None,
) -> ReportFiles:
    """Read ``run_dirs`` (run directories, or directories holding them) and write
    ``report.html`` (self-contained), ``report.json`` (the recommendation, each strategy and
    batch size over its seeds, the table's rows) and one PNG per figure that some run has data
    for into ``out`` (default: see :func:`default_out`). Rows go by strategy (in the order
    given), then batch size as a number, then seed."""
    if not run_dirs:
        raise ConfigError("names no run directory", setting="run_dirs")
    loaded = load_runs(run_dirs)
    unsorted = [row_of(run) for run in loaded]
    order = ordered(unsorted)
    runs, rows = [loaded[i] for i in order], [unsorted[i] for i in order]
    target = Path(out) if out is not None else default_out(run_dirs)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError(
            f"({target}) cannot be created: {error.strerror}", setting="out"
        ) from None
    name = title or f"Combee report: {len(runs)} run(s)"
    groups = groups_of(rows)
    files = ReportFiles(
        html=target / REPORT_HTML,
        json=target / REPORT_JSON,
        rows=rows,
        runs=runs,
        groups=groups,
        recommendation=recommendation(groups),
    )
    figures: list[html.Figure] = []
    plt = pyplot()
    if plt is None:
        files.remarks.append(
            "Figures need matplotlib, which is not installed (pip install matplotlib); "
            "the table and usage are complete."
        )
    else:
        for plot in PLOTS:
            path = target / plot.file
            path.unlink(missing_ok=True)
            try:
                caption = plot.draw(plt, runs, path)
            except Exception as error:  # a figure never costs the rest of the report
                plt.close("all")
                files.remarks.append(f"{plot.title} could not be drawn: {error}")
                continue
            if caption is not None:
                files.figures.append(path)
                figures.append(html.Figure(plot.title, caption, path.read_bytes(), plot.file))
    page = html.render(name, files, figures)
    document = {
        "title": name,
        "recommendation": files.recommendation,
        "columns": [{"key": c.key, "header": c.header} for c in COLUMNS],
        "summary": {"spread": SPREAD, "groups": [g.as_dict() for g in groups]},
        "runs": rows,
        "figures": [p.name for p in files.figures],
        "notes": {run.name: run.notes for run in runs if run.notes},
    }
    _write(files.html, page)
    _write(files.json, json.dumps(document, indent=2) + "\n")
    return files


def _write(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    except OSError as error:
        raise ConfigError(f"({path}) cannot be written: {error.strerror}", setting="out") from None
