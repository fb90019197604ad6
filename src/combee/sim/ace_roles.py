"""The scripted ACE roles' replies to the prompts Combee's ACE sends (see
:mod:`combee.sim.ace_script`, which dispatches requests to them): the generator, reflector,
curator, merge, summarize and next-action replies, and what they read from a prompt.
Pure functions, no I/O.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from combee.methods.ace.prompts import (
    ALLOWED_SECTIONS_LABEL,
)

_FORMULA_RE = re.compile(r"Use formula (?P<name>.+?) to answer", re.IGNORECASE)
_DEFINITION_RE = re.compile(r"Formula:\s*(?P<name>[^=\n]+?)\s*=")
_BULLET_RE = re.compile(r"^\[(?P<id>[a-z]+-\d{5,})\] helpful=\d+ harmful=\d+ :: (?P<text>.*)$")
_REFLECTION_RE = re.compile(r"^### Reflection \d+\s*$", re.MULTILINE)
_UPDATE_RE = re.compile(r"^### Local update \d+\s*$", re.MULTILINE)
_NUMBERED_RE = re.compile(r"^#(?P<number>\d+) (?P<op>\{.*\})\s*$", re.MULTILINE)
_SPACE_RE = re.compile(r"\s+")


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def normal_form(text: str) -> str:
    return _SPACE_RE.sub(" ", text).strip()


def scripted_answer(question: str) -> str:
    """The answer the scripted generator gives when its playbook covers the question's topic."""
    return f"{_digest(normal_form(question)) % 100_000 / 100:.2f}"


def wrong_answer(question: str) -> str:
    """The answer it gives otherwise: always different from :func:`scripted_answer`."""
    return f"{float(scripted_answer(question)) + 1:.2f}"


def topic_of(question: str, context: str = "") -> str:
    """The formula a question is about ("Use formula X to answer", "Formula: X = ..."), else its
    first few words."""
    for text in (context, question):
        for pattern in (_FORMULA_RE, _DEFINITION_RE):
            match = pattern.search(text)
            if match:
                return normal_form(match["name"])
    return " ".join(normal_form(question).split(" ")[:6])


def _block(text: str, tag: str) -> str:
    match = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.DOTALL)
    return match.group(1) if match else ""


def bullets_in(text: str) -> list[tuple[str, str]]:
    """(id, text) of every bullet line in ``text``."""
    found = []
    for line in text.splitlines():
        match = _BULLET_RE.match(line.strip())
        if match:
            found.append((match["id"], match["text"]))
    return found


def _mentions(bullet_text: str, topic: str) -> bool:
    return topic.casefold() in bullet_text.casefold()


def generator_reply(prompt: str) -> dict[str, Any]:
    return answer_for(
        _block(prompt, "question"),
        _block(prompt, "context"),
        bullets_in(_block(prompt, "playbook")),
    )


def answer_for(question: str, context: str, bullets: list[tuple[str, str]]) -> dict[str, Any]:
    topic = topic_of(question, context)
    relevant = [bullet_id for bullet_id, text in bullets if _mentions(text, topic)]
    if relevant:
        return {
            "reasoning": f"The playbook covers {topic}; applying its lesson.",
            "bullet_ids": relevant[:3],
            "final_answer": scripted_answer(question),
        }
    return {
        "reasoning": f"No playbook lesson about {topic}; guessing.",
        "bullet_ids": [bullet_id for bullet_id, _ in bullets[:1]],
        "final_answer": wrong_answer(question),
    }


def _trace_reflector(prompt: str) -> dict[str, Any]:
    """A recorded trajectory (``combee learn``): the lesson names the trace, its task and the
    first tool the agent called, so a test can follow each trace to the curator."""
    trace_id, task_id = _block(prompt, "trace_id"), _block(prompt, "task_id")
    call = re.search(r"-> call (\w+)\(", _block(prompt, "trajectory"))
    tool = call[1] if call else "any tool"
    success = _block(prompt, "outcome").startswith("success")
    return {
        "reasoning": f"Trace {trace_id} of task {task_id} ended in "
        f"{'success' if success else 'failure'}.",
        "error_identification": "" if success else f"The agent's use of {tool} went wrong.",
        "root_cause_analysis": "" if success else "A detail was not confirmed first.",
        "correct_approach": f"Confirm the user's details before calling {tool}.",
        "key_insight": f"Lesson of trace {trace_id} (task {task_id}): confirm every detail "
        f"with the user before calling {tool}.",
        "key_insight_about": "task",
        "bullet_tags": [],
    }


def reflector_reply(prompt: str) -> dict[str, Any]:
    if "<trajectory>" in prompt:
        return _trace_reflector(prompt)
    question = _block(prompt, "question")
    return lesson_for(
        topic_of(question, _block(prompt, "context")),
        f"Sample {_block(prompt, 'sample_id')}",
        _block(prompt, "outcome").strip() == "correct",
        bullets_in(_block(prompt, "cited_bullets")),
    )


def lesson_for(
    topic: str, sample: str, correct: bool, cited: list[tuple[str, str]]
) -> dict[str, Any]:
    tags = []
    for bullet_id, text in cited:
        tag = "helpful" if _mentions(text, topic) else "neutral"
        if not correct:
            tag = "harmful"
        tags.append({"id": bullet_id, "tag": tag})
    return {
        "reasoning": f"{sample} is about {topic}.",
        "error_identification": "" if correct else f"The {topic} result was wrong.",
        "root_cause_analysis": "" if correct else f"The {topic} formula was not applied.",
        "correct_approach": f"Apply the {topic} formula step by step.",
        "key_insight": f"For {topic} questions, apply the {topic} formula exactly as defined "
        "and round the result to two decimals.",
        "key_insight_about": "task",
        "bullet_tags": tags,
    }


def _allowed_sections(prompt: str) -> list[str]:
    for line in prompt.splitlines():
        if line.startswith(ALLOWED_SECTIONS_LABEL):
            return re.findall(r"([\w-]+) \(", line[len(ALLOWED_SECTIONS_LABEL) :])
    return []


def _curator(prompt: str) -> dict[str, Any]:
    """One ADD per lesson that is new: not already in the playbook, not already added by this
    call (what the curator prompt asks of a real model)."""
    insights = []
    for chunk in _REFLECTION_RE.split(prompt)[1:]:
        match = re.search(r"^\s*key_insight: (.+)$", chunk, re.MULTILINE)
        if match:
            insights.append(match.group(1).strip())
    return additions_for(
        insights,
        bullets_in(_block(prompt, "playbook")),
        _allowed_sections(prompt) or ["other"],
    )


def additions_for(
    insights: list[str], bullets: list[tuple[str, str]], sections: list[str]
) -> dict[str, Any]:
    """One ADD per insight that is not a bullet yet and not added earlier in this reply."""
    known = {normal_form(text).casefold() for _, text in bullets}
    operations = []
    for content in insights:
        key = normal_form(content).casefold()
        if key in known:
            continue
        known.add(key)
        section = sections[_digest(content) % len(sections)]
        operations.append({"type": "ADD", "section": section, "content": content, "about": "task"})
    reasoning = f"{len(operations)} new lesson(s) from the reflections."
    return {"operations": operations, "reasoning": reasoning}


def numbered_operations(prompt: str) -> dict[int, Any]:
    """The operations a merge prompt lists (``#3 {...}`` lines under the local updates), by
    number."""
    found: dict[int, Any] = {}
    updates = _UPDATE_RE.search(prompt)
    for match in _NUMBERED_RE.finditer(prompt[updates.start() if updates else len(prompt) :]):
        try:
            found[int(match["number"])] = json.loads(match["op"])
        except ValueError:
            continue
    return found


def merge_reply(prompt: str) -> dict[str, Any]:
    """Keep each distinct operation, drop the repeats of one kept earlier."""
    seen: set[str] = set()
    keep: list[int] = []
    drop: list[int] = []
    for number, op in sorted(numbered_operations(prompt).items()):
        text = op.get("content") if isinstance(op, dict) else None
        key = (
            normal_form(text).casefold()
            if isinstance(text, str)
            else json.dumps(op, sort_keys=True)
        )
        (drop if key in seen else keep).append(number)
        seen.add(key)
    reasoning = f"{len(keep)} distinct operation(s) kept, {len(drop)} repeat(s) dropped."
    return {"keep": keep, "combine": [], "drop": drop, "reasoning": reasoning}


_INSIGHT_RE = re.compile(r"^\s*key_insight: (.+)$", re.MULTILINE)


def summarize_reply(prompt: str) -> dict[str, Any]:
    """Condense reflections (or earlier summaries): every distinct key insight, in order."""
    chunks = _REFLECTION_RE.split(prompt)[1:]
    insights: list[str] = []
    for found in _INSIGHT_RE.findall(prompt):
        text = normal_form(found)
        if text not in insights:
            insights.append(text)
    return {
        "reasoning": f"{len(insights)} distinct lesson(s) in {len(chunks)} reflection(s).",
        "summary": f"{len(chunks)} reflection(s) teach {len(insights)} distinct lesson(s).",
        "key_insights": insights,
    }


def curator_reading_summaries(prompt: str) -> dict[str, Any]:
    """The curator, where a condensed reflection (one ``key_insight`` line per lesson) counts
    as one reflection per lesson, so that each of its lessons is learned."""
    head, *chunks = _REFLECTION_RE.split(prompt)
    parts = [head]
    for chunk in chunks:
        lessons = _INSIGHT_RE.findall(chunk)
        if len(lessons) > 1:
            parts.extend(f"\nkey_insight: {lesson}\n" for lesson in lessons)
        else:
            parts.append(chunk)
    return _curator("### Reflection 0\n".join(parts))


def next_action_reply(prompt: str) -> dict[str, Any]:
    tools = [t.strip() for t in _block(prompt, "tools").split(",") if t.strip()]
    playbook = _block(prompt, "playbook")
    calls = re.findall(r"-> call (\w+)\((.*)\)$", _block(prompt, "trajectory"), re.MULTILINE)
    named = [t for t in tools if playbook and re.search(rf"\b{re.escape(t)}\b", playbook)]
    action = named[0] if named else calls[-1][0] if calls else "respond_to_user"
    try:
        last = json.loads(calls[-1][1]) if calls else {}
    except ValueError:
        last = {}
    arguments = last if isinstance(last, dict) else {}
    return {
        "action": action,
        "arguments": [
            {"name": k, "value": v if isinstance(v, str) else json.dumps(v)}
            for k, v in arguments.items()
        ],
    }
