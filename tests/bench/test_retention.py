"""The retention benchmark: seeded lessons, and how many survive one aggregation."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from combee.bench.lessons import FAMILIES, make_lessons, retained
from combee.bench.retention import (
    RetentionProgress,
    RetentionRow,
    markdown_table,
    retention_async,
)
from combee.llm import connect
from combee.methods.ace.playbook import count_tokens
from combee.sim import SimConfig, serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.sim.responders import Responder
from tests.cli_helpers import run_combee


def test_lessons_are_seeded_distinct_varied_and_as_long_as_a_real_reflection() -> None:
    lessons = make_lessons(64, seed=5)
    assert [lesson.rule for lesson in lessons] == [x.rule for x in make_lessons(64, seed=5)]
    assert [lesson.rule for lesson in lessons] != [x.rule for x in make_lessons(64, seed=6)]
    names = [lesson.name for lesson in lessons]
    assert len(set(names)) == 64 and not any(
        a.casefold() in b.casefold() for a in names for b in names if a != b
    )
    assert {lesson.family for lesson in lessons} == set(FAMILIES)
    for lesson in lessons:
        text = lesson.reflection.render()
        assert 150 <= count_tokens(text) <= 300, text
        assert lesson.rule in lesson.reflection.fields["root_cause_analysis"]
    assert retained(lessons[:3], f"a note on {names[1].upper()} only") == [names[1]]


async def naive_and_combee_at_16(responder: Responder) -> list[RetentionRow]:
    with serve_in_thread(responder) as server:
        llm = connect("sim", base_url=server.base_url)
        try:
            return await retention_async(
                llm=llm, strategies=["naive", "combee"], sizes=[16], max_tokens=16384
            )
        finally:
            await llm.aclose()


async def test_naive_and_combee_on_the_scripted_server_keep_every_lesson() -> None:
    rows = await naive_and_combee_at_16(ace_responder)
    by_name = {row.strategy: row for row in rows}
    assert by_name["naive"].retained == by_name["combee"].retained == 16
    assert by_name["naive"].llm_calls == {"curator": 1}
    # floor(sqrt(16)) = 4 curators over the shuffled duplicates, one merge.
    assert by_name["combee"].llm_calls == {"curator": 4, "merge": 1}
    assert all(row.updates_applied >= 16 and row.error is None for row in rows)
    # Where lessons went: each curator saw 8 of the 32 copies; the merge kept one of each copy.
    combee = by_name["combee"]
    assert len(combee.curated_operations) == 4 and sum(combee.curated_operations) >= 16
    assert combee.merges == [{"in": sum(combee.curated_operations), "out": 16, "source": "merge"}]
    assert by_name["naive"].curated_operations == [16] and by_name["naive"].merges == []
    table = markdown_table(rows)
    assert "| naive | 16 | 16 | 100% |" in table


async def test_a_long_aggregation_reports_the_calls_it_has_made_while_it_runs() -> None:
    seen: list[RetentionProgress] = []
    with serve_in_thread(ace_responder, SimConfig(ttft_s=0.3)) as server:
        llm = connect("sim", base_url=server.base_url)
        try:
            rows = await retention_async(
                llm=llm, strategies=["sequential"], sizes=[4], max_tokens=8192,
                on_progress=seen.append, progress_every_s=0.1,
            )  # fmt: skip
        finally:
            await llm.aclose()
    # Four curator calls of 0.3 s each: reports come while they run, their counts never fall,
    # and none comes after the row ended.
    assert len(seen) >= 4
    assert {(p.strategy, p.lessons) for p in seen} == {("sequential", 4)}
    done = [p.llm_calls.get("curator", 0) for p in seen]
    assert done == sorted(done) and 0 < done[-1] <= 4 and done[0] < 4
    assert [p.elapsed_s for p in seen] == sorted(p.elapsed_s for p in seen)
    assert seen[-1].elapsed_s <= rows[0].wall_s


def test_the_command_writes_its_table(tmp_path: Path) -> None:
    with serve_in_thread(ace_responder) as server:
        result = run_combee(
            "retention", "--strategies", "naive,sequential", "--sizes", "4",
            "--model", "sim", "--base-url", server.base_url, "--max-tokens", "8192",
            "--out", str(tmp_path), "--cache", str(tmp_path / "cache.sqlite"),
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        calls = len(server.records)
        again = run_combee(
            "retention", "--strategies", "naive,sequential", "--sizes", "4",
            "--model", "sim", "--base-url", server.base_url, "--max-tokens", "8192",
            "--out", str(tmp_path / "again"), "--cache", str(tmp_path / "cache.sqlite"),
        )  # fmt: skip
        assert again.returncode == 0, again.stderr
        assert len(server.records) == calls  # the rerun replayed every call from the cache
    report = json.loads((tmp_path / "retention.json").read_text())
    assert report["settings"]["repairs"] is True  # the table says the repairs were on
    rows = {row["strategy"]: row for row in report["rows"]}
    assert rows["sequential"]["llm_calls"] == {"curator": 4}
    assert rows["naive"]["retained"] == 4
    assert "| sequential | 4 |" in (tmp_path / "retention.md").read_text()


def stingy_curator(body: Mapping[str, Any]) -> str:
    """The scripted ACE model, but its curator writes at most two operations a reply."""
    reply = ace_responder(body)
    schema = body.get("response_format", {}).get("json_schema", {})
    if schema.get("name") != "curator":
        return reply
    data = json.loads(reply)
    data["operations"] = data["operations"][:2]
    return json.dumps(data)


async def test_each_lost_lesson_is_placed_where_it_was_lost() -> None:
    naive, combee = await naive_and_combee_at_16(stingy_curator)
    assert naive.retained == 2 and naive.lost_where == {"not written": 14}
    assert combee.curated_operations == [2, 2, 2, 2]
    assert sum(combee.lost_where.values()) == len(combee.lost) == 16 - combee.retained
    assert combee.lost_where["not written"] >= 16 - 8
    assert combee.groups is not None and combee.groups["rule"] == "capacity"
    assert combee.label == f"combee (capacity, {combee.groups['count']} groups)"
