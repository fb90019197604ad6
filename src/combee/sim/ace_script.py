"""A deterministic stand-in model for the four ACE roles, for tests and simulations.

It reads the chat request that :mod:`combee.methods.ace.prompts` builds and answers with valid JSON
for the role, in a way that makes learning observable:

- generator: answers :func:`scripted_answer` (the "right" answer) when a playbook bullet mentions
  the question's topic (the formula name), a wrong answer otherwise; cites bullet ids it saw.
- reflector: a key insight naming the topic; tags the cited bullets.
- curator: one ADD per new key insight (not in the playbook, not repeated in the call).
- merge: by reference to the numbered operations, keeps every distinct one and drops the exact
  repeats (same text, ignoring case and spacing).
- next_action (offline evaluation of a trace-learned playbook): with a playbook, the first tool
  of the allowed list that a bullet names; without one, the trajectory's last call again.
- summarize: every distinct key insight of the reflections (or earlier summaries) it condenses;
  the curator reads each lesson of such a summary as it reads a reflection's.

A simulated task whose gold answers are ``scripted_answer(question)`` is therefore solved once the
playbook holds a lesson about the question's formula.

Plain-prompt ACE clients (the ACE roles asked for in one user message, as the public ACE
implementation does, with ``response_format`` json_object or none) are answered too, in the same
way and with replies of the same size: the role is recognised by the JSON keys of the answer
template that ends the prompt (``final_answer``: generator; ``key_insight``: reflector;
``operations``: curator), and the prompt's parts by their ``**Heading:**`` lines (question,
context, playbook, predicted and ground-truth answers; a reply is correct when the two agree).
The curator reads the ``key_insight`` of every reflection in the prompt (JSON or ``key: value``
text) and adds one bullet per new lesson to a section named by the playbook's ``## `` headings.
Pure functions, no I/O.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from combee.methods.ace.prompts import (
    ALLOWED_SECTIONS_LABEL,
    MERGE_BY_EXCEPTION_SYSTEM,
    SYSTEM_PROMPTS,
)
from combee.sim.responders import echo_responder, last_user_text

_FORMULA_RE = re.compile(r"Use formula (?P<name>.+?) to answer", re.IGNORECASE)
_DEFINITION_RE = re.compile(r"Formula:\s*(?P<name>[^=\n]+?)\s*=")
_BULLET_RE = re.compile(r"^\[(?P<id>[a-z]+-\d{5,})\] helpful=\d+ harmful=\d+ :: (?P<text>.*)$")
_REFLECTION_RE = re.compile(r"^### Reflection \d+\s*$", re.MULTILINE)
_UPDATE_RE = re.compile(r"^### Local update \d+\s*$", re.MULTILINE)
_NUMBERED_RE = re.compile(r"^#(?P<number>\d+) (?P<op>\{.*\})\s*$", re.MULTILINE)
_SPACE_RE = re.compile(r"\s+")


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def _normal(text: str) -> str:
    return _SPACE_RE.sub(" ", text).strip()


def scripted_answer(question: str) -> str:
    """The answer the scripted generator gives when its playbook covers the question's topic."""
    return f"{_digest(_normal(question)) % 100_000 / 100:.2f}"


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
                return _normal(match["name"])
    return " ".join(_normal(question).split(" ")[:6])


def _block(text: str, tag: str) -> str:
    match = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.DOTALL)
    return match.group(1) if match else ""


def _bullets(text: str) -> list[tuple[str, str]]:
    """(id, text) of every bullet line in ``text``."""
    found = []
    for line in text.splitlines():
        match = _BULLET_RE.match(line.strip())
        if match:
            found.append((match["id"], match["text"]))
    return found


def _mentions(bullet_text: str, topic: str) -> bool:
    return topic.casefold() in bullet_text.casefold()


def _generator(prompt: str) -> dict[str, Any]:
    return _answer(
        _block(prompt, "question"), _block(prompt, "context"), _bullets(_block(prompt, "playbook"))
    )


def _answer(question: str, context: str, bullets: list[tuple[str, str]]) -> dict[str, Any]:
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
        "bullet_tags": [],
    }


def _reflector(prompt: str) -> dict[str, Any]:
    if "<trajectory>" in prompt:
        return _trace_reflector(prompt)
    question = _block(prompt, "question")
    return _lesson(
        topic_of(question, _block(prompt, "context")),
        f"Sample {_block(prompt, 'sample_id')}",
        _block(prompt, "outcome").strip() == "correct",
        _bullets(_block(prompt, "cited_bullets")),
    )


def _lesson(topic: str, sample: str, correct: bool, cited: list[tuple[str, str]]) -> dict[str, Any]:
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
    return _additions(
        insights,
        _bullets(_block(prompt, "playbook")),
        _allowed_sections(prompt) or ["other"],
    )


def _additions(
    insights: list[str], bullets: list[tuple[str, str]], sections: list[str]
) -> dict[str, Any]:
    """One ADD per insight that is not a bullet yet and not added earlier in this reply."""
    known = {_normal(text).casefold() for _, text in bullets}
    operations = []
    for content in insights:
        key = _normal(content).casefold()
        if key in known:
            continue
        known.add(key)
        section = sections[_digest(content) % len(sections)]
        operations.append({"type": "ADD", "section": section, "content": content})
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


def _merge(prompt: str) -> dict[str, Any]:
    """Keep each distinct operation, drop the repeats of one kept earlier."""
    seen: set[str] = set()
    keep: list[int] = []
    drop: list[int] = []
    for number, op in sorted(numbered_operations(prompt).items()):
        text = op.get("content") if isinstance(op, dict) else None
        key = _normal(text).casefold() if isinstance(text, str) else json.dumps(op, sort_keys=True)
        (drop if key in seen else keep).append(number)
        seen.add(key)
    reasoning = f"{len(keep)} distinct operation(s) kept, {len(drop)} repeat(s) dropped."
    return {"keep": keep, "combine": [], "drop": drop, "reasoning": reasoning}


_INSIGHT_RE = re.compile(r"^\s*key_insight: (.+)$", re.MULTILINE)


def _summarize(prompt: str) -> dict[str, Any]:
    """Condense reflections (or earlier summaries): every distinct key insight, in order."""
    chunks = _REFLECTION_RE.split(prompt)[1:]
    insights: list[str] = []
    for found in _INSIGHT_RE.findall(prompt):
        text = _normal(found)
        if text not in insights:
            insights.append(text)
    return {
        "reasoning": f"{len(insights)} distinct lesson(s) in {len(chunks)} reflection(s).",
        "summary": f"{len(chunks)} reflection(s) teach {len(insights)} distinct lesson(s).",
        "key_insights": insights,
    }


def _curator_reading_summaries(prompt: str) -> dict[str, Any]:
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


def _next_action(prompt: str) -> dict[str, Any]:
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


_HEADING_RE = re.compile(r"^\*\*(?P<name>[^*\n]+?):\*\*[ \t]*$", re.MULTILINE)
_TEMPLATE_RE = re.compile(r"^\{", re.MULTILINE)
_KEY_RE = re.compile(r'"(\w+)"\s*:')
_PLAYBOOK_SECTION_RE = re.compile(r"^##\s+(?P<name>\S.*?)\s*$", re.MULTILINE)
_ANY_INSIGHT_RE = re.compile(
    r'"key_insight"\s*:\s*(?P<json>"(?:[^"\\]|\\.)*")|^\s*key_insight: (?P<text>.+)$', re.MULTILINE
)


def template_keys(prompt: str) -> set[str]:
    """The JSON keys of the answer template that ends a plain prompt (from the last line that
    opens a JSON object to the end)."""
    starts = list(_TEMPLATE_RE.finditer(prompt))
    return set(_KEY_RE.findall(prompt[starts[-1].start() :])) if starts else set()


def _headed_parts(prompt: str) -> dict[str, str]:
    """The text under each ``**Heading:**`` line, by lower-cased heading."""
    marks = list(_HEADING_RE.finditer(prompt))
    ends = [mark.start() for mark in marks[1:]] + [len(prompt)]
    parts: dict[str, str] = {}
    for mark, end in zip(marks, ends[: len(marks)], strict=True):
        parts.setdefault(mark["name"].strip().casefold(), prompt[mark.end() : end].strip())
    return parts


def _part(parts: Mapping[str, str], *words: str) -> str:
    """The first part whose heading contains every word (headings in prompt order)."""
    for name, text in parts.items():
        if all(word in name for word in words):
            return text
    return ""


def _playbook_bullets(parts: Mapping[str, str]) -> list[tuple[str, str]]:
    return [b for name, text in parts.items() if "playbook" in name for b in _bullets(text)]


def _same_answer(predicted: str, truth: str) -> bool:
    try:
        return float(predicted.replace(",", "")) == float(truth.replace(",", ""))
    except ValueError:
        return _normal(predicted) == _normal(truth)


def _plain_generator(parts: Mapping[str, str]) -> dict[str, Any]:
    return _answer(parts.get("question", ""), parts.get("context", ""), _playbook_bullets(parts))


def _plain_reflector(parts: Mapping[str, str]) -> dict[str, Any]:
    question = parts.get("question", "")
    truth = _part(parts, "ground truth")
    correct = bool(truth) and _same_answer(_part(parts, "predicted"), truth)
    topic = topic_of(question, parts.get("context", ""))
    return _lesson(topic, "This sample", correct, _playbook_bullets(parts))


def _plain_curator(prompt: str, parts: Mapping[str, str]) -> dict[str, Any]:
    insights = []
    for match in _ANY_INSIGHT_RE.finditer(prompt):
        text = json.loads(match["json"]) if match["json"] else match["text"]
        if isinstance(text, str) and text.strip():
            insights.append(text.strip())
    playbook = "\n".join(text for name, text in parts.items() if "playbook" in name)
    sections = [m["name"] for m in _PLAYBOOK_SECTION_RE.finditer(playbook)] or ["others"]
    return _additions(insights, _playbook_bullets(parts), sections)


def plain_ace_reply(prompt: str) -> dict[str, Any] | None:
    """The reply to a plain-prompt ACE role request, or None when the prompt asks for none."""
    keys = template_keys(prompt)
    if not keys & {"operations", "key_insight", "final_answer"}:
        return None
    parts = _headed_parts(prompt)
    if "operations" in keys:
        return _plain_curator(prompt, parts)
    if "key_insight" in keys:
        return _plain_reflector(parts)
    if "final_answer" in keys:
        return _plain_generator(parts)
    return None


_ROLES = {
    "generator": _generator,
    "next_action": _next_action,
    "reflector": _reflector,
    "curator": _curator_reading_summaries,
    "merge": _merge,
    "summarize": _summarize,
}


def _role(body: Mapping[str, Any], messages: list[Mapping[str, Any]]) -> str | None:
    response_format = body.get("response_format")
    if isinstance(response_format, Mapping):
        spec = response_format.get("json_schema")
        if isinstance(spec, Mapping) and spec.get("name") in _ROLES:
            return str(spec["name"])
    for message in messages:
        if message.get("role") == "system":
            content = str(message.get("content", ""))
            for role, system in SYSTEM_PROMPTS.items():
                if content.startswith(system[:60]):
                    return role
    return None


def ace_responder(body: Mapping[str, Any]) -> str:
    """The assistant content for an ACE role request (OpenAI chat-completions body)."""
    raw = body.get("messages")
    messages = [m for m in raw if isinstance(m, Mapping)] if isinstance(raw, list) else []
    role = _role(body, messages)
    if role is None:
        plain = plain_ace_reply(last_user_text(body))
        if plain is not None:
            return json.dumps(plain)
        return echo_responder(body)  # e.g. a client's connectivity check
    prompt = next((str(m.get("content", "")) for m in messages if m.get("role") == "user"), "")
    reply = _ROLES[role](prompt)
    system = next((str(m.get("content", "")) for m in messages if m.get("role") == "system"), "")
    if role == "merge" and system == MERGE_BY_EXCEPTION_SYSTEM:
        del reply["keep"]  # asked to list only what to combine or drop
    return json.dumps(reply)
