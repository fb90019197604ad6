"""A training question that holds a megabyte-long hex dump (common in logs and traces) trains as
any other: redaction and the screen read it once, in time in proportion to it. A return to
quadratic time shows as a test that never ends, not as a flaky timing; no test reads a clock."""

from __future__ import annotations

import json
import random
from pathlib import Path

import combee
from combee.llm import connect
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder


async def test_a_question_with_a_megabyte_of_hex_trains(tmp_path: Path) -> None:
    blob = random.Random(1).randbytes(500_000).hex()
    rows = [{"question": f"What is 2 + 0? The token dump follows: {blob}", "answer": "2"}]
    rows += [{"question": f"What is 2 + {i}?", "answer": str(2 + i)} for i in range(1, 6)]
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    with serve_in_thread(ace_responder) as server:
        llm = connect("sim", base_url=server.base_url, max_retries=0)
        try:
            await combee.train_async(
                f"jsonl:{data}", batch_size=2, llm=llm, run_dir=tmp_path / "run", seed=0,
                train_limit=4, val_limit=0, test_limit=2,
            )  # fmt: skip
        finally:
            await llm.aclose()
        prompts = [json.dumps(r.body) for r in server.records]
    assert (tmp_path / "run" / "final_results.json").is_file()
    assert sum(blob in prompt for prompt in prompts) >= 2  # generator and reflector saw it whole
