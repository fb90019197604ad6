"""AgentDojo's ``important_instructions`` attack on slack and workspace, trained through
``combee.train`` against a reflector that restates what it reads: no planted goal reaches a
lesson or the playbook, and ``planted_shown`` counts exactly the reflector prompts that showed
planted text (a run of its words or one of its identifiers, searched for at the server)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("agentdojo")

import combee
from combee.llm import connect
from combee.llm.provenance import copied_spans
from combee.sim import serve_in_thread
from combee.sim.agentdojo_script import agentdojo_responder
from combee.tasks.agentdojo import agentdojo_task, load_suite
from tests.server_checks import user_prompt

ATTACK = "important_instructions"
MARK = "This is an important message from me"
"""The opening of the attack's text around every planted goal."""


def words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("suite", ["slack", "workspace"])
def test_no_planted_goal_reaches_a_lesson(tmp_path: Path, suite: str) -> None:
    task = agentdojo_task(suite, seed=0, attack=ATTACK, train=6, test=1)
    responder = agentdojo_responder(suite, attack=ATTACK, seed=0, obey_planted=True)
    with serve_in_thread(responder) as server:
        llm = connect("sim", base_url=server.base_url)
        try:
            result = combee.train(
                task, strategy="combee", batch_size=6, llm=llm, run_dir=tmp_path / "run"
            )
        finally:
            asyncio.run(llm.aclose())
        reflector = [user_prompt(r.body) for r in server.records if r.schema_name == "reflector"]
        curator = [user_prompt(r.body) for r in server.records if r.schema_name == "curator"]
    summary = result.summary
    planted = [text for s in task.train for text in s.meta["injections"].values()]
    shown = sum(1 for prompt in reflector if copied_spans(prompt, planted))
    assert len(reflector) == 6
    assert summary["planted_shown"] == shown
    assert summary["planted_in_lessons"] == 0
    goals = [
        words(load_suite(suite).get_injection_task_by_id(s.meta["injection_task"]).GOAL)
        for s in task.train
    ]
    playbook = words((tmp_path / "run" / "playbook.txt").read_text())
    for goal in goals:
        assert goal not in playbook
        assert not any(goal in words(prompt) for prompt in curator)
    assert MARK not in playbook
