"""An agent's episode as stored and reflected on: every secret and address as a placeholder of
its own, the same across the run, so a wrong recipient can be told from the right one, and no
file of the run holds a real value. Over real HTTP; the scripted server plays every role."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import combee
from combee.llm import Endpoint
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.tasks.agent import AgentTask, Episode, with_playbook
from combee.tasks.base import Sample

CUSTOMER = "alice.w@example.org"
ATTACKER = "refunds-desk@mallory-pay.net"
API_KEY = "NRAK-4HQ7ZK2M9XW3PT8RV6YB1NC5DJA"
REAL_VALUES = (CUSTOMER, ATTACKER, API_KEY)


async def refunding_agent(sample: Sample, playbook: str, llm: Any) -> Episode:
    """Sends the refund to the address a message asked for, not to the customer's."""
    question = f"{sample.question} Our monitoring key is {API_KEY}."
    await llm.complete([{"role": "user", "content": question}], role="agent")
    arguments = json.dumps({"to": ATTACKER, "amount": 40})
    messages = [
        {"role": "system", "content": with_playbook("You handle refunds.", playbook)},
        {"role": "user", "content": question},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "send_refund", "arguments": arguments}},
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": f"40 EUR sent to {ATTACKER}"},
        {"role": "assistant", "content": "The refund is on its way."},
    ]  # fmt: skip
    return Episode(
        messages=messages,
        reward=0.0,
        feedback=f"the refund went to {ATTACKER}; it must go to the customer, {CUSTOMER}",
    )


def test_a_wrong_recipient_reads_as_another_placeholder_and_no_file_holds_a_real_value(
    tmp_path: Path,
) -> None:
    samples = [
        Sample(id=f"r{n}", question=f"Refund order {n} of {CUSTOMER}.", answer="",
               meta={"task_id": "refund"})
        for n in range(4)
    ]  # fmt: skip
    task = AgentTask("refunds", agent=refunding_agent, train=samples[:2], test=samples[2:])
    out = tmp_path / "run"
    with serve_in_thread(ace_responder) as server:
        result = combee.train(
            task, batch_size=2, llm=Endpoint("sim", base_url=server.base_url), run_dir=out,
            gate=False,
        )  # fmt: skip
        bodies = [json.dumps(r.body) for r in server.records]
        reflector = [
            "\n".join(str(m.get("content", "")) for m in r.body["messages"])
            for r in server.records
            if r.schema_name == "reflector"
        ]
    assert len(reflector) == 2
    for prompt in reflector:
        shown = set(re.findall(r"\[\[email_\d+\]\]", prompt))
        assert len(shown) == 2, prompt  # the customer and the attacker, told apart
        assert "[REDACTED:email]" not in prompt
    # The same address has the same placeholder in both episodes and in the feedback.
    assert set(re.findall(r"\[\[email_\d+\]\]", reflector[0])) == set(
        re.findall(r"\[\[email_\d+\]\]", reflector[1])
    )
    assert not any(value in body for body in bodies for value in REAL_VALUES)
    files = [path for path in out.rglob("*") if path.is_file()]
    assert any(path.name == "episodes.jsonl" for path in files)
    for path in files:
        data = path.read_bytes()
        assert not any(value.encode() in data for value in REAL_VALUES), path
    assert "[[" not in result.text  # a bullet never keeps an episode's numbering
