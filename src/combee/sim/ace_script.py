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
The roles' replies are in :mod:`combee.sim.ace_roles`; this module recognises the request and
answers plain-prompt clients. Pure functions, no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from combee.methods.ace.prompts import (
    MERGE_BY_EXCEPTION_SYSTEM,
    SYSTEM_PROMPTS,
)
from combee.sim.ace_roles import (
    additions_for,
    answer_for,
    bullets_in,
    curator_reading_summaries,
    generator_reply,
    lesson_for,
    merge_reply,
    next_action_reply,
    normal_form,
    numbered_operations,
    reflector_reply,
    scripted_answer,
    summarize_reply,
    topic_of,
    wrong_answer,
)
from combee.sim.responders import echo_text, last_user_text

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
    return [b for name, text in parts.items() if "playbook" in name for b in bullets_in(text)]


def _same_answer(predicted: str, truth: str) -> bool:
    try:
        return float(predicted.replace(",", "")) == float(truth.replace(",", ""))
    except ValueError:
        return normal_form(predicted) == normal_form(truth)


def _plain_generator(parts: Mapping[str, str]) -> dict[str, Any]:
    return answer_for(parts.get("question", ""), parts.get("context", ""), _playbook_bullets(parts))


def _plain_reflector(parts: Mapping[str, str]) -> dict[str, Any]:
    question = parts.get("question", "")
    truth = _part(parts, "ground truth")
    correct = bool(truth) and _same_answer(_part(parts, "predicted"), truth)
    topic = topic_of(question, parts.get("context", ""))
    return lesson_for(topic, "This sample", correct, _playbook_bullets(parts))


def _plain_curator(prompt: str, parts: Mapping[str, str]) -> dict[str, Any]:
    insights = []
    for match in _ANY_INSIGHT_RE.finditer(prompt):
        text = json.loads(match["json"]) if match["json"] else match["text"]
        if isinstance(text, str) and text.strip():
            insights.append(text.strip())
    playbook = "\n".join(text for name, text in parts.items() if "playbook" in name)
    sections = [m["name"] for m in _PLAYBOOK_SECTION_RE.finditer(playbook)] or ["others"]
    return additions_for(insights, _playbook_bullets(parts), sections)


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
    "generator": generator_reply,
    "next_action": next_action_reply,
    "reflector": reflector_reply,
    "curator": curator_reading_summaries,
    "merge": merge_reply,
    "summarize": summarize_reply,
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
        return echo_text(body)  # e.g. a client's connectivity check
    prompt = next((str(m.get("content", "")) for m in messages if m.get("role") == "user"), "")
    reply = _ROLES[role](prompt)
    system = next((str(m.get("content", "")) for m in messages if m.get("role") == "system"), "")
    if role == "merge" and system == MERGE_BY_EXCEPTION_SYSTEM:
        del reply["keep"]  # asked to list only what to combine or drop
    return json.dumps(reply)


__all__ = [
    "ace_responder",
    "numbered_operations",
    "plain_ace_reply",
    "scripted_answer",
    "template_keys",
    "topic_of",
    "wrong_answer",
]
