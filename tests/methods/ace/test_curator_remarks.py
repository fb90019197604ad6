"""A curator's operation is kept or left out by what the curator says its text is about (the
``about`` field of its reply's schema), never by the words it uses: over real HTTP, a scripted
curator marks some operations as remarks on the playbook or the attempt."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import combee
from combee.llm import connect
from combee.methods.ace.playbook import Playbook
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.tasks.base import Sample, Score

OPERATIONS = (
    ("The assistant should confirm the order number before issuing any refund.", "task"),
    ("The playbook holds no bullet on refunds yet.", "playbook"),
    ("The attempt never showed its arithmetic.", "attempt"),
    ("I need to ask for a yes before any booking change.", "task"),
    ("The playbook for a fire drill starts with the assembly point.", None),  # no field
)
"""(text, what the curator says it is about); None: the field is missing, as from an endpoint
that ignores the schema."""


def _curator(body: Mapping[str, Any]) -> str:
    spec = (body.get("response_format") or {}).get("json_schema") or {}
    if spec.get("name") != "curator":
        return ace_responder(body)
    operations = []
    for text, about in OPERATIONS:
        op: dict[str, Any] = {"type": "ADD", "section": "strategies", "content": text}
        if about is not None:
            op["about"] = about
        operations.append(op)
    return json.dumps({"operations": operations})


def _verdict(prediction: str, sample: Sample) -> Score:
    right = prediction.strip() == sample.answer
    return Score(right, int(right), 1, "correct" if right else f"expected {sample.answer}")


def test_operations_the_curator_marks_as_remarks_stay_out_and_are_counted(
    tmp_path: Path,
) -> None:
    samples = [
        Sample(id=f"s{i}", question=f"What is {i} + {i}?", answer=str(2 * i)) for i in range(2)
    ]
    task = combee.SampleTask("refunds", train=samples, scorer=_verdict)
    with serve_in_thread(_curator) as server:
        llm = connect("sim", base_url=server.base_url, max_retries=0)
        try:  # no coverage step: it would add the reflections' own lessons beside the curator's
            result = combee.train(
                task, strategy="naive", batch_size=2, llm=llm, run_dir=tmp_path / "run",
                seed=0, dedup=False, progress=False, gate=False, copy_rules=False,
            )  # fmt: skip
        finally:
            combee.sync.run_sync(llm.aclose(), async_name="aclose")
        (curator,) = [r for r in server.records if r.schema_name == "curator"]
    # The schema asks every ADD, UPDATE and MERGE what its text is about.
    shapes = curator.body["response_format"]["json_schema"]["schema"]["properties"]["operations"]
    for shape in shapes["items"]["anyOf"]:
        kind = shape["properties"]["type"]["enum"][0]
        assert ("about" in shape["required"]) == (kind != "DELETE"), kind
    playbook = Playbook.parse((tmp_path / "run" / "playbook.txt").read_text())
    contents = sorted(b.content for b in playbook.bullets)
    kept = sorted(text for text, about in OPERATIONS if about in ("task", None))
    assert contents == kept  # whole, in the agent's voice and the first person
    assert result.summary["lessons_dropped_total"].get("remark") == 2
