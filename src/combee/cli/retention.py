"""``combee retention``: how many specific lessons survive one aggregation, per strategy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from combee.cli import options as opt
from combee.cli.app import app, err, fail, run
from combee.core.capacity import GROUP_RULES
from combee.llm.types import DEFAULT_MAX_TOKENS
from combee.strategies.settings import CombeeSettings

if TYPE_CHECKING:
    from combee.bench.retention import RetentionProgress, RetentionRow

DEFAULT_STRATEGIES = ("naive", "combee", "topk", "summarize", "hier-summarize")
DEFAULT_SIZES = (16, 36, 64)
"""The strategies and lesson counts the command compares unless told otherwise."""


def _items(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


@app.command("retention")
@opt.with_endpoint_options(timeout=600.0)
def retention_command(
    strategies: Annotated[
        str, typer.Option(help="Comma list of strategies to compare.")
    ] = ",".join(DEFAULT_STRATEGIES),
    sizes: Annotated[str, typer.Option(help="Comma list of lesson counts N.")] = ",".join(
        map(str, DEFAULT_SIZES)
    ),
    duplication: Annotated[
        int, typer.Option(help="Copies p of each reflection (combee).")
    ] = CombeeSettings.duplication,
    fan_in: Annotated[
        int, typer.Option(help="Most updates one merge call sees.")
    ] = CombeeSettings.fan_in,
    groups: Annotated[
        str,
        typer.Option(
            help="combee's level-1 groups: capacity (sized to what one curator call can "
            "write and read) | sqrt (the paper's floor(sqrt(n)))."
        ),
    ] = "capacity",
    token_budget: Annotated[int, typer.Option(help="Playbook token cap (0: none).")] = 0,
    max_tokens: Annotated[
        int, typer.Option(help="Completion tokens per call.")
    ] = DEFAULT_MAX_TOKENS,
    seed: opt.Seed = 0,
    out: Annotated[Path, typer.Option(help="Where retention.json and .md go.")] = Path(
        "runs/retention"
    ),
    cache: Annotated[
        Path | None,
        typer.Option(help="Response cache (SQLite): a rerun replays the calls it holds."),
    ] = None,
    repairs: Annotated[
        bool,
        typer.Option(
            help="ACE's repairs (copy_rules, drop_contradictions, overrule_drops) all on, or "
            "all off: the playbook holds only what the model wrote."
        ),
    ] = True,
    **options: Any,
) -> None:
    """Aggregate N synthetic lessons once with each strategy; report how many survive."""
    from combee.bench.retention import calls_text, markdown_table, retention_async

    try:
        counts = [int(size) for size in _items(sizes)]
    except ValueError:
        raise fail(f"--sizes {sizes!r}: give whole numbers separated by commas") from None
    model = options["model"]
    llm = opt.endpoint_of(options, cache=cache, seed=seed)

    if groups not in GROUP_RULES:
        raise fail(f"--groups {groups!r}: choose one of {', '.join(GROUP_RULES)}")
    settings = {
        "model": model,
        "seed": seed,
        "duplication": duplication,
        "fan_in": fan_in,
        "groups": groups,
        "repairs": repairs,
    }
    done: list[RetentionRow] = []

    def save(rows: list[RetentionRow]) -> str:
        out.mkdir(parents=True, exist_ok=True)
        report = {"settings": settings, "rows": [row.to_dict() for row in rows]}
        (out / "retention.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        table = markdown_table(rows)
        (out / "retention.md").write_text(table, encoding="utf-8")
        return table

    def show(row: RetentionRow) -> None:
        done.append(row)
        save(done)  # a long run on a slow model keeps every finished row
        failed = f"  [yellow]error: {escape(row.error)}[/]" if row.error else ""
        if row.lost_where:
            failed += "  lost: " + ", ".join(f"{n} {where}" for where, n in row.lost_where.items())
        err.print(
            f"{row.label:>15} N={row.lessons:<4} retained {row.retained}/{row.lessons} "
            f"({row.share:.0%})  updates {row.updates_applied}  tokens {row.playbook_tokens}  "
            f"{row.wall_s:.1f}s{failed}",
            highlight=False,
        )

    def progress(now: RetentionProgress) -> None:
        calls = calls_text(now.llm_calls) or "none"
        err.print(
            f"[dim]{now.strategy:>15} N={now.lessons:<4} still aggregating: {now.elapsed_s:.0f}s, "
            f"LLM calls done: {calls}[/]",
            highlight=False,
        )

    rows = run(
        retention_async(
            llm=llm,
            strategies=_items(strategies),
            sizes=counts,
            seed=seed,
            duplication=duplication,
            fan_in=fan_in,
            groups=groups,
            token_budget=token_budget or None,
            max_tokens=max_tokens,
            repairs=repairs,
            on_row=show,
            on_progress=progress,
        )
    )
    typer.echo(save(rows))
