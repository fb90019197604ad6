"""The scripted ACE server answers plain-prompt ACE clients (one user message, a JSON answer
template at the end, json_object or no response_format), over real HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from combee.sim import RunningServer, SimConfig, serve_in_thread
from combee.sim.ace_script import ace_responder, scripted_answer, wrong_answer

QUESTION = "Use formula Quick Ratio to answer the question. What is the quick ratio of firm A?"
PLAYBOOK = (
    "## USEFUL RULES\n[rule-00001] helpful=0 harmful=0 :: Quick Ratio: leave out inventory.\n"
)
EMPTY_PLAYBOOK = "## USEFUL RULES\n\n## PITFALLS"


def generator_prompt(playbook: str) -> str:
    return (
        "Solve the task with the help of the rules.\n\n"
        f"**Playbook:**\n{playbook}\n\n**Question:**\n{QUESTION}\n\n**Context:**\n\n\n"
        '**Reply as JSON:**\n{\n  "reasoning": "...",\n  "bullet_ids": ["rule-00001"],\n'
        '  "final_answer": "..."\n}\n'
    )


def reflector_prompt(predicted: str, truth: str) -> str:
    return (
        "Explain what went wrong.\n\n"
        f"**Question:**\n{QUESTION}\n\n**Model's Predicted Answer:**\n{predicted}\n\n"
        f"**Ground Truth Answer:**\n{truth}\n\n"
        f"**Playbook bullets the model used:**\n{PLAYBOOK}\n\n"
        '**Reply as JSON:**\n{\n  "reasoning": "...",\n  "key_insight": "...",\n'
        '  "bullet_tags": [{"id": "rule-00001", "tag": "helpful"}]\n}\n'
    )


def curator_prompt(reflections: list[dict[str, Any]], playbook: str) -> str:
    recent = "\n\n---\n\n".join(f"[Sample {i}] {json.dumps(r)}" for i, r in enumerate(reflections))
    return (
        "Add what is missing.\n\n"
        f"**Stats:**\n{json.dumps({'bullets': 0}, indent=2)}\n\n"
        f"**Reflections:**\n{recent}\n\n**Current Playbook:**\n{playbook}\n\n"
        '**Reply as JSON:**\n{\n  "reasoning": "...",\n  "operations": [\n'
        '    {"type": "ADD", "section": "useful_rules", "content": "..."}\n  ]\n}\n'
    )


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve_in_thread(ace_responder, SimConfig()) as running:
        yield running


async def ask(server: RunningServer, prompt: str, **extra: Any) -> dict[str, Any]:
    body = {"model": "sim", "messages": [{"role": "user", "content": prompt}], **extra}
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30.0) as client:
        response = await client.post("/chat/completions", json=body)
    assert response.status_code == 200
    reply: dict[str, Any] = json.loads(response.json()["choices"][0]["message"]["content"])
    return reply


async def test_generator_is_right_once_a_bullet_covers_the_topic(server: RunningServer) -> None:
    covered = await ask(server, generator_prompt(PLAYBOOK), response_format={"type": "json_object"})
    assert covered["final_answer"] == scripted_answer(QUESTION)
    assert covered["bullet_ids"] == ["rule-00001"]
    uncovered = await ask(server, generator_prompt(EMPTY_PLAYBOOK))
    assert uncovered["final_answer"] == wrong_answer(QUESTION)
    assert set(uncovered) == {"reasoning", "bullet_ids", "final_answer"}


async def test_reflector_tags_cited_bullets_by_the_outcome(server: RunningServer) -> None:
    wrong = await ask(server, reflector_prompt("1.00", "2.0"))
    assert wrong["bullet_tags"] == [{"id": "rule-00001", "tag": "harmful"}]
    assert "Quick Ratio" in wrong["key_insight"]
    assert wrong["error_identification"]
    right = await ask(server, reflector_prompt("2.00", "2.0"))
    assert right["bullet_tags"] == [{"id": "rule-00001", "tag": "helpful"}]
    assert right["error_identification"] == ""


async def test_curator_adds_each_new_lesson_once(server: RunningServer) -> None:
    lesson = await ask(server, reflector_prompt("1.00", "2.0"))
    other = {**lesson, "key_insight": 'Check the "units" first.'}
    reply = await ask(server, curator_prompt([lesson, other, lesson], EMPTY_PLAYBOOK))
    assert [op["content"] for op in reply["operations"]] == [
        lesson["key_insight"],
        other["key_insight"],
    ]
    assert {op["type"] for op in reply["operations"]} == {"ADD"}
    assert {op["section"] for op in reply["operations"]} <= {"USEFUL RULES", "PITFALLS"}
    known = f"## USEFUL RULES\n[rule-00002] helpful=0 harmful=0 :: {lesson['key_insight']}"
    again = await ask(server, curator_prompt([lesson, other], known))
    assert [op["content"] for op in again["operations"]] == [other["key_insight"]]


async def test_a_prompt_without_an_ace_template_is_echoed(server: RunningServer) -> None:
    body = {"model": "sim", "messages": [{"role": "user", "content": "ping"}]}
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30.0) as client:
        response = await client.post("/chat/completions", json=body)
    assert response.json()["choices"][0]["message"]["content"].startswith("echo: ping")
