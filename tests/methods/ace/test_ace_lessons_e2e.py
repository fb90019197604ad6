"""Lessons are not lost to form, end to end over HTTP: a server that ignores the schema's section
enum (and adds a stray bullet id) still gets every distinct lesson into the playbook, under the
catch-all section, and the run's metrics count each repair and each drop."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import combee
from combee.llm import connect
from combee.methods.ace import Playbook
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder, numbered_operations

UNKNOWN = "Poetry & Verse"


def _schema_name(body: Mapping[str, Any]) -> str | None:
    spec = (body.get("response_format") or {}).get("json_schema") or {}
    return spec.get("name")


def defective(body: Mapping[str, Any]) -> str:
    """The scripted ACE model, except that its curator files every lesson under a section that
    does not exist and writes a bullet id into its first ADD."""
    reply = ace_responder(body)
    if _schema_name(body) != "curator":
        return reply
    data = json.loads(reply)
    for index, op in enumerate(data["operations"]):
        op["section"] = UNKNOWN
        if index == 0:
            op["bullet_id"] = "[str-00001]"
    return json.dumps(data)


def _user(body: Mapping[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


async def test_unknown_sections_land_under_the_catch_all_and_are_counted(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with serve_in_thread(defective) as server:
        llm = connect("sim", base_url=server.base_url, max_retries=0)
        try:
            result = await combee.train_async(
                "formula", strategy="combee", batch_size=16, llm=llm, run_dir=out, seed=0,
                train_limit=16, val_limit=0, test_limit=4,
            )  # fmt: skip
        finally:
            await llm.aclose()
        records = server.records

    curates = [r for r in records if r.schema_name == "curator"]
    (merge,) = [r for r in records if r.schema_name == "merge"]
    assert len(curates) == 4  # no re-ask: the reply is accepted and repaired
    schema = merge.body["response_format"]["json_schema"]["schema"]
    assert "enum" in json.dumps(curates[0].body["response_format"]["json_schema"]["schema"])
    numbered = numbered_operations(_user(merge.body))
    # The merge reads each curator's operations as written, less what they are about (all
    # lessons: a remark would have been left out before the merge).
    assert sorted(json.dumps(op, sort_keys=True) for op in numbered.values()) == sorted(
        json.dumps({k: v for k, v in op.items() if k != "about"}, sort_keys=True)
        for curate in curates
        for op in json.loads(defective(curate.body))["operations"]
    )
    assert schema["properties"]["keep"]["items"]["enum"] == list(range(1, len(numbered) + 1))
    reply = json.loads(ace_responder(merge.body))
    kept = [numbered[n] for n in reply["keep"]]
    assert kept and reply["combine"] == [] and reply["drop"]

    playbook = Playbook.parse((out / "playbook.txt").read_text())
    assert [b.content for b in playbook.bullets] == [op["content"] for op in kept]
    assert {b.section for b in playbook.bullets} == {"other"}
    assert all(op["section"] == UNKNOWN for op in kept)

    (row,) = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    strays = sum(1 for op in kept if "bullet_id" in op)
    assert row["ops_applied"] == len(kept) and row["ops_rejected"] == 0
    assert row["lessons_repaired"] == {"unknown_section": len(kept)} | (
        {"stray_bullet_id": strays} if strays else {}
    )
    assert row["lessons_dropped"] == {"merge_drop": len(reply["drop"])}
    assert row["lessons_combined"] == 0
    for key in ("lessons_dropped", "lessons_repaired", "lessons_combined"):
        # one iteration: its counts are the run's totals
        assert result.summary[f"{key}_total"] == row[key]
    log = (out / "run.log").read_text()
    assert log.count(f"section {UNKNOWN!r} is not a section; filed under 'other'") == len(kept)
