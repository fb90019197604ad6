"""The report as one self-contained HTML page: the recommendation, the summary per strategy and
batch size, the runs table, the figures as base64 data URIs, LLM usage per role and each run's
notes. No script, no style sheet or image fetched from anywhere."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING, Any

from combee.report.runs_index import RunInfo, role_usage
from combee.report.summary import SPREAD, Group, Stat, front_of, group_key
from combee.report.table import COLUMNS, MISSING, shown

if TYPE_CHECKING:
    from combee.report.build import ReportFiles

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1200px; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td[data-key="name"] { white-space: nowrap; }
tr.first-of-group td { border-top: 2px solid #888; }
figure { margin: 1.5em 0; }
figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.85em; color: #555; }
pre { background: #f8f8f8; padding: 0.6em; font-size: 0.8em; overflow-x: auto; }
p.recommendation { font-size: 1.1em; background: #eef6ee; border-left: 4px solid #2ca02c;
  padding: 0.6em 0.9em; }
"""

_TEXT_KEYS = {"name", "method", "strategy", "batch", "seed", "status"}


@dataclass(frozen=True)
class Figure:
    title: str
    caption: str
    png: bytes
    file: str


def _value(value: Any) -> str:
    """A cell's raw figure, for ``data-value`` (empty when missing)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


def runs_table(rows: Sequence[dict[str, Any]]) -> str:
    head = "".join(f'<th data-key="{c.key}">{escape(c.header)}</th>' for c in COLUMNS)
    body = []
    previous = None
    for row, cells in zip(rows, shown(rows), strict=True):
        first = previous is not None and group_key(row) != previous
        previous = group_key(row)
        tds = "".join(
            f'<td data-key="{c.key}" data-value="{escape(_value(row.get(c.key)))}"'
            f"{'' if c.key in _TEXT_KEYS else ' class=num'}>{escape(text)}</td>"
            for c, text in zip(COLUMNS, cells, strict=True)
        )
        mark = ' class="first-of-group"' if first else ""
        body.append(f'<tr data-run="{escape(str(row["name"]))}"{mark}>{tds}</tr>')
    return f'<table id="runs"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _spread(stat: Stat | None, digits: int) -> tuple[str, str, str]:
    """Mean, min–max and standard deviation as shown (– where there is none)."""
    if stat is None:
        return MISSING, MISSING, MISSING
    std = MISSING if stat.std is None else f"{stat.std:.{digits}f}"
    return f"{stat.mean:.{digits}f}", f"{stat.low:.{digits}f}–{stat.high:.{digits}f}", std


def summary_table(groups: Sequence[Group]) -> str:
    """One row per strategy and batch size: seeds, accuracy and training time over them."""
    front = {id(g) for g in front_of(groups)}
    with_method = len({g.method for g in groups}) > 1
    priced = any(g.cost is not None and g.cost.mean > 0 for g in groups)
    heads = ["strategy", "batch size", "seeds", "accuracy mean", "accuracy min–max"]
    heads += ["accuracy std", "train s mean", "train s min–max"]
    heads += ["cost mean (USD)"] if priced else []
    heads += ["Pareto front"]
    lines = []
    for group in groups:
        name = f"{group.method} {group.strategy}" if with_method else str(group.strategy)
        seeds = ", ".join(str(s) for s in group.seeds) or MISSING
        cells = [name, group.batch, seeds, *_spread(group.accuracy, 3)]
        cells += _spread(group.seconds, 2)[:2]
        cells += [_spread(group.cost, 4)[0]] if priced else []
        cells += ["yes" if id(group) in front else ""]
        tds = "".join(
            f"<td{' class=num' if i > 1 else ''}>{escape(text)}</td>"
            for i, text in enumerate(cells)
        )
        lines.append(f'<tr data-group="{escape(group.label(with_method))}">{tds}</tr>')
    head = "".join(f"<th>{escape(h)}</th>" for h in heads)
    body = "".join(lines)
    return f'<table id="summary"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def roles_table(runs: Sequence[RunInfo]) -> str:
    lines = []
    for run in runs:
        for role, u in role_usage(run).items():
            lines.append(
                f"<tr><td>{escape(run.name)}</td><td>{escape(role)}</td>"
                f"<td class=num>{u['calls']:,.0f}</td><td class=num>{u['prompt_tokens']:,.0f}</td>"
                f"<td class=num>{u['completion_tokens']:,.0f}</td>"
                f"<td class=num>{u['cost']:.4f}</td></tr>"
            )
    if not lines:
        return "<p>No run records LLM usage.</p>"
    head = "".join(
        f"<th>{h}</th>"
        for h in ("run", "role", "calls", "prompt tokens", "completion tokens", "cost (USD)")
    )
    return (
        f'<table id="roles"><thead><tr>{head}</tr></thead><tbody>{"".join(lines)}</tbody></table>'
    )


def _notes(runs: Sequence[RunInfo]) -> str:
    items = []
    for run in runs:
        why = run.profile.get("why") if run.profile else None
        if why:
            items.append(f"<li><b>{escape(run.name)}</b>: batch size: {escape(str(why))}</li>")
        items.extend(f"<li><b>{escape(run.name)}</b>: {escape(note)}</li>" for note in run.notes)
    return f"<ul>{''.join(items)}</ul>" if items else "<p>None.</p>"


def _configs(runs: Sequence[RunInfo]) -> str:
    blocks = []
    for run in runs:
        text = json.dumps(run.config, indent=2, default=str)
        blocks.append(
            f"<details><summary>{escape(run.name)} ({escape(str(run.path))})</summary>"
            f"<pre>{escape(text)}</pre></details>"
        )
    return "".join(blocks)


def render(title: str, files: ReportFiles, figures: Sequence[Figure]) -> str:
    """The whole page."""
    runs = files.runs
    finished = sum(1 for run in runs if run.finished)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f'<p class="recommendation" id="recommendation"><b>Recommendation.</b> '
        f"{escape(files.recommendation)}</p>",
        f"<p>{len(runs)} run(s), {finished} finished. Missing figures show as –.</p>",
        *(f"<p><i>{escape(remark)}</i></p>" for remark in files.remarks),
        "<h2>Summary per strategy and batch size</h2>",
        f"<p>Over the finished runs of each configuration: the mean, the {escape(SPREAD)}. "
        "Pareto front: no other configuration is both faster and more accurate on average.</p>",
        summary_table(files.groups),
        "<h2>Runs</h2>",
        runs_table(files.rows),
    ]
    for figure in figures:
        data = base64.b64encode(figure.png).decode("ascii")
        parts.append(
            f"<h2>{escape(figure.title)}</h2><figure>"
            f'<img alt="{escape(figure.title)}" data-file="{escape(figure.file)}" '
            f'src="data:image/png;base64,{data}">'
            f"<figcaption>{escape(figure.caption)}</figcaption></figure>"
        )
    parts += [
        "<h2>LLM usage per role</h2>",
        roles_table(runs),
        "<h2>Notes</h2>",
        _notes(runs),
        "<h2>Configurations</h2>",
        _configs(runs),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"
