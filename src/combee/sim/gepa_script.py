"""A deterministic stand-in model for the GEPA roles, for tests and simulations.

It reads the chat requests that :mod:`combee.methods.gepa.prompts` builds and answers with
valid JSON for the role, so that prompt learning is observable:

- generator: answers :func:`scripted_answer` (the "right" answer) when the system prompt
  mentions the question's topic (its formula name), a wrong answer otherwise.
- proposal: the current instruction plus one rule per topic of a wrong example.
- merge: the current instruction plus every rule line of the revisions, each once.
- summarize: one ``- Wrong: Use formula X to answer.`` (or ``- Correct: ...``) line per topic of
  the examples, each once; the proposal reads every line of such a summary as an example.
- stock: gepa's own instruction-proposal prompt (plain text, no schema), answered like a
  proposal, the new instruction inside a ``` block as gepa expects.

A task whose gold answers are ``scripted_answer(question)`` is solved once the system prompt
names the question's formula. Pure functions, no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from combee.methods.gepa import prompts
from combee.sim.ace_script import scripted_answer, topic_of, wrong_answer
from combee.sim.responders import echo_text

_EXAMPLE_RE = re.compile(r"^### Example \d+\s*$", re.MULTILINE)
_STOCK_EXAMPLE_RE = re.compile(r"^# Example \d+\s*$", re.MULTILINE)
_FENCE_RE = re.compile(r"```\n(.*?)\n```", re.DOTALL)
STOCK_PROMPT_START = "I provided an assistant with the following instructions"
"""How gepa's default instruction-proposal prompt begins."""
_REVISION_RE = re.compile(r"<instruction>\n(.*?)\n</instruction>", re.DOTALL)


def _block(text: str, tag: str) -> str:
    match = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.DOTALL)
    return match.group(1) if match else ""


def rule_for(topic: str) -> str:
    """The rule the scripted proposer writes for a topic it saw answered wrongly."""
    return f"- For {topic} questions, apply the {topic} formula exactly and round to 2 decimals."


def _mentions(text: str, topic: str) -> bool:
    return topic.casefold() in text.casefold()


def _generator(system: str, user: str) -> dict[str, Any]:
    question = _block(user, "question")
    topic = topic_of(question, _block(user, "context"))
    if _mentions(system, topic):
        return {
            "reasoning": f"The instruction covers {topic}.",
            "final_answer": scripted_answer(question),
        }
    return {
        "reasoning": f"Nothing about {topic}; guessing.",
        "final_answer": wrong_answer(question),
    }


def _with_lines(current: str, lines: list[str]) -> str:
    present = set(current.splitlines())
    added: list[str] = []
    for line in lines:
        if line and line not in present and line not in added:
            added.append(line)
    return "\n".join([current, *added]) if added else current


def _wrong_rules(examples: list[str]) -> list[str]:
    wrong = [chunk for chunk in examples if "Wrong" in chunk or "No answer" in chunk]
    return [rule_for(topic_of(chunk)) for chunk in wrong]


def _proposal(system: str, user: str) -> dict[str, Any]:
    current = _block(user, "current_instruction")
    examples = _summary_lines(_EXAMPLE_RE.split(_block(user, "examples"))[1:])
    rules = _wrong_rules(examples)
    return {
        "reasoning": f"{len(rules)} of {len(examples)} examples were wrong.",
        "instruction": _with_lines(current, rules),
    }


def stock_reply(prompt: str) -> str:
    """The reply to gepa's stock prompt: the current instruction (its first ``` block) plus one
    rule per wrong example, inside a ``` block."""
    fenced = _FENCE_RE.search(prompt)
    current = fenced.group(1) if fenced else ""
    examples = _STOCK_EXAMPLE_RE.split(prompt)[1:]
    rules = _wrong_rules(examples)
    revised = _with_lines(current, rules)
    return f"{len(rules)} of {len(examples)} examples were wrong.\n```\n{revised}\n```"


def _merge(system: str, user: str) -> dict[str, Any]:
    current = _block(user, "current_instruction")
    revisions = _REVISION_RE.findall(_block(user, "revisions"))
    lines = [line for text in revisions for line in text.splitlines()]
    return {
        "reasoning": f"Union of {len(revisions)} revisions.",
        "instruction": _with_lines(current, lines),
    }


_SUMMARY_LINE_RE = re.compile(r"^[ \t]*(- (?:Wrong|Correct): .*)$", re.MULTILINE)


def _summary_lines(examples: list[str]) -> list[str]:
    """The examples, with each summary (lines ``- Wrong: ...``) split into one per line."""
    expanded: list[str] = []
    for chunk in examples:
        expanded.extend(_SUMMARY_LINE_RE.findall(chunk) or [chunk])
    return expanded


def _summarize(system: str, user: str) -> dict[str, Any]:
    examples = _summary_lines(_EXAMPLE_RE.split(_block(user, "examples"))[1:])
    lines: list[str] = []
    for chunk in examples:
        verdict = "Wrong" if "Wrong" in chunk or "No answer" in chunk else "Correct"
        line = f"- {verdict}: Use formula {topic_of(chunk)} to answer."
        if line not in lines:
            lines.append(line)
    wrong = sum(line.startswith("- Wrong") for line in lines)
    return {
        "reasoning": f"{len(examples)} examples, {wrong} wrong topic(s).",
        "summary": "\n".join(lines),
    }


_ROLES = {
    "gepa_generator": _generator,
    "gepa_proposal": _proposal,
    "gepa_merge": _merge,
    "gepa_summarize": _summarize,
}
_SYSTEMS = {
    "gepa_proposal": prompts.PROPOSAL_SYSTEM,
    "gepa_merge": prompts.MERGE_SYSTEM,
    "gepa_summarize": prompts.SUMMARIZE_SYSTEM,
}


def gepa_role(body: Mapping[str, Any]) -> str | None:
    """The GEPA role of a request: by its schema name, else by its system prompt, else
    ``gepa_stock`` for gepa's own proposal prompt."""
    response_format = body.get("response_format")
    if isinstance(response_format, Mapping):
        spec = response_format.get("json_schema")
        if isinstance(spec, Mapping) and spec.get("name") in _ROLES:
            return str(spec["name"])
    messages = body.get("messages") or []
    system = next((str(m.get("content", "")) for m in messages if m.get("role") == "system"), "")
    for role, text in _SYSTEMS.items():
        if system.startswith(text[:60]):
            return role
    user = next((str(m.get("content", "")) for m in messages if m.get("role") == "user"), "")
    if "<question>" in user:
        return "gepa_generator"
    if user.startswith(STOCK_PROMPT_START):
        return "gepa_stock"
    return None


def gepa_responder(body: Mapping[str, Any]) -> str:
    """The assistant content for a GEPA role request (OpenAI chat-completions body)."""
    role = gepa_role(body)
    messages = [m for m in body.get("messages") or [] if isinstance(m, Mapping)]
    system = next((str(m.get("content", "")) for m in messages if m.get("role") == "system"), "")
    user = next((str(m.get("content", "")) for m in messages if m.get("role") == "user"), "")
    if role == "gepa_stock":
        return stock_reply(user)
    if role is None:
        return echo_text(body)
    return json.dumps(_ROLES[role](system, user))
