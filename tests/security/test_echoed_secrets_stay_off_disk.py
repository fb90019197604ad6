"""A model that repeats its input, over real HTTP, on the corpus of secret formats: no file of
the run directory (cache, log, results, playbook, metrics) holds a secret the redaction finds."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from combee.llm.redact import redact
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from tests.cli_helpers import run_combee
from tests.security.field_corpus import FORMATS, core

PER_QUESTION = 3


def echoing(body: Mapping[str, Any]) -> str:
    """The scripted roles' replies with the request's last message appended to their first
    text field: whatever reached the endpoint comes back in the reply."""
    said = str(body["messages"][-1].get("content", ""))
    reply = json.loads(ace_responder(body))
    if isinstance(reply, dict):
        first = next((k for k, v in reply.items() if isinstance(v, str)), None)
        if first is not None:
            reply[first] = f"{reply[first]} {said}"
    return json.dumps(reply)


def test_no_file_of_the_run_holds_a_redacted_secret_that_the_model_echoed(
    tmp_path: Path,
) -> None:
    data = tmp_path / "secrets.jsonl"
    rows = [
        {"id": f"q{n}", "answer": "42",
         "question": " ".join(f.text for f in FORMATS[n : n + PER_QUESTION]) + " What is 6 x 7?"}
        for n in range(0, len(FORMATS), PER_QUESTION)
    ]  # fmt: skip
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "run"
    with serve_in_thread(echoing) as server:
        result = run_combee(
            "train", "--task", "jsonl", "--data", str(data), "--batch-size", "8",
            "--model", "sim", "--base-url", server.base_url, "--out", str(out),
            "--cache", str(out / "cache.sqlite"), "--no-gate",
        )  # fmt: skip
        sent = "\n".join(json.dumps(r.body) for r in server.records)
    assert result.returncode == 0, result.stderr
    caught = [f for f in FORMATS if core(f.secret) not in redact(f.text)]
    assert len(caught) >= 0.95 * len(FORMATS)
    files = [p for p in out.rglob("*") if p.is_file()]
    assert {"cache.sqlite", "run.log", "final_results.json"} <= {p.name for p in files}
    on_disk = b"".join(p.read_bytes() for p in files)
    assert [f.name for f in caught if core(f.secret) in sent] == []  # never sent
    assert [f.name for f in caught if core(f.secret).encode() in on_disk] == []
    assert [f.name for f in FORMATS if core(f.secret).encode() in on_disk] == []
