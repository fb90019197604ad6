"""``combee report`` (run directories -> report.html, report.json, PNGs) and ``combee diff``
(two playbooks, bullet by bullet): parse, call :mod:`combee.report`, print."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar, cast

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from combee.cli.app import app, fail, stdout_console
from combee.cli.flags import cli_message, flag, flag_value
from combee.errors import CombeeError, ConfigError
from combee.report import COLUMNS, ReportFiles, diff_playbooks, write_report
from combee.report.diff import Pairing, PlaybookDiff
from combee.report.summary import Group
from combee.report.table import MISSING, shown

T = TypeVar("T")
ARGUMENTS = {"run_dirs": "RUN_DIR", "a": "PLAYBOOK_A", "b": "PLAYBOOK_B"}
"""Library parameters that are positional arguments here."""


def guarded(call: Callable[[], T]) -> T:
    """Run a library call; a user-caused error prints one line naming the argument or flag."""
    try:
        return call()
    except ConfigError as error:
        if error.setting in ARGUMENTS:
            raise fail(error.render(lambda s: ARGUMENTS.get(s, flag(s)), flag_value)) from None
        raise fail(cli_message(error)) from None
    except CombeeError as error:
        raise fail(cli_message(error)) from None


def runs_table(rows: Sequence[dict[str, Any]], title: str | None = None) -> Table:
    """The runs on the terminal: the report's columns, less those no run has a figure for;
    with several runs, a column that is the same for all of them goes into the caption."""
    cells = shown(rows)
    keep: list[int] = []
    same: list[str] = []
    for i, column in enumerate(COLUMNS):
        values = {line[i] for line in cells}
        if values == {MISSING} or (column.key == "status" and values == {"finished"}):
            continue
        if len(rows) > 1 and len(values) == 1 and column.key != "name":
            same.append(f"{column.header} {values.pop()}")
            continue
        keep.append(i)
    table = Table(title=title, box=box.SIMPLE_HEAD, caption="; ".join(same) or None)
    for i in keep:
        column = COLUMNS[i]
        numeric = column.key not in ("name", "method", "strategy", "batch", "status")
        widest = max(len(line[i]) for line in cells)
        table.add_column(
            column.short or column.header,
            justify="right" if numeric else "left",
            min_width=widest,
        )
    for line in cells:
        table.add_row(*(line[i] for i in keep))
    return table


def summary_table(groups: Sequence[Group]) -> Table:
    """Each strategy and batch size over its seeds: mean and min–max of accuracy and time."""
    table = Table(
        title="per strategy and batch size (mean, min–max over seeds)", box=box.SIMPLE_HEAD
    )
    for header in ("strategy", "batch", "seeds", "acc", "acc min–max", "train s", "s min–max"):
        table.add_column(header, justify="left" if header == "strategy" else "right")
    with_method = len({g.method for g in groups}) > 1
    for group in groups:
        acc, secs = group.accuracy, group.seconds
        table.add_row(
            f"{group.method} {group.strategy}" if with_method else str(group.strategy),
            group.batch,
            ",".join(str(s) for s in group.seeds) or MISSING,
            MISSING if acc is None else f"{acc.mean:.3f}",
            MISSING if acc is None else f"{acc.low:.3f}–{acc.high:.3f}",
            MISSING if secs is None else f"{secs.mean:.2f}",
            MISSING if secs is None else f"{secs.low:.2f}–{secs.high:.2f}",
        )
    return table


def print_report(files: ReportFiles, console: Console) -> None:
    console.print(f"recommendation: {files.recommendation}", highlight=False, markup=False)
    if any(len(group.runs) > 1 for group in files.groups):
        console.print(summary_table(files.groups))
    console.print(runs_table(files.rows))
    for remark in files.remarks:
        console.print(f"[yellow]note[/]: {remark}", highlight=False)
    figures = ", ".join(p.name for p in files.figures) or "none"
    console.print(f"report: {files.html}\ntable: {files.json}\nfigures: {figures}", highlight=False)


@app.command("report")
def report_command(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(
            help="Run directories, or directories holding them (a combee compare --out).",
            show_default=False,
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(help="Where to write (default: the one directory given, else their parent)."),
    ] = None,
    title: Annotated[str | None, typer.Option(help="The report's title.")] = None,
) -> None:
    """Write report.html (self-contained), report.json and PNG figures from run directories."""
    files = guarded(lambda: write_report(run_dirs, out, title=title))
    print_report(files, stdout_console())


def diff_lines(result: PlaybookDiff, a: Path, b: Path) -> list[str]:
    """The diff as text: a summary, then ``-`` bullets only in A, ``+`` bullets only in B and
    ``~`` changed bullets with both versions."""
    lines = [
        f"A {a}: {len(result.a)} bullets; B {b}: {len(result.b)} bullets",
        f"bullets paired by {result.paired_by} ({result.why})",
        f"{len(result.only_a)} only in A, {len(result.only_b)} only in B, "
        f"{len(result.changed)} changed, {result.same} the same",
    ]
    if result.only_a:
        lines += ["", f"only in A ({len(result.only_a)}):"]
        lines += [f"- {bullet.render()}" for bullet in result.only_a]
    if result.only_b:
        lines += ["", f"only in B ({len(result.only_b)}):"]
        lines += [f"+ {bullet.render()}" for bullet in result.only_b]
    if result.changed:
        lines += ["", f"changed ({len(result.changed)}):"]
        for change in result.changed:
            lines += [
                f"~ [{change.id}] {', '.join(change.fields)}",
                f"  A {change.before.render()}",
                f"  B {change.after.render()}",
            ]
    return lines


@app.command("diff")
def diff_command(
    playbook_a: Annotated[Path, typer.Argument(help="A playbook.txt.", show_default=False)],
    playbook_b: Annotated[Path, typer.Argument(help="Another playbook.txt.", show_default=False)],
    by: Annotated[
        str | None,
        typer.Option(
            help="Pair bullets by id or by content (default: by id when both files are "
            "playbooks of one run, or of a run and the playbook it started from; else by "
            "content, since two runs give one id to unrelated lessons)."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the diff as JSON.")] = False,
) -> None:
    """Bullets only in A, only in B, and changed (the same lesson, other content or counters)."""
    pairing = cast("Pairing | None", by)  # the library checks the word
    result = guarded(lambda: diff_playbooks(playbook_a, playbook_b, by=pairing))
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2))
    else:
        typer.echo("\n".join(diff_lines(result, playbook_a, playbook_b)))
