"""The GEPA roles' prompts: generator, proposal (one group of records) and merge.

The scripted test model (``combee.sim.gepa_script``) reads the tags used here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from combee.llm.types import Message
from combee.methods.gepa.records import render_value
from combee.tasks.base import Sample

GENERATOR_REPLY = (
    "Work the problem out first, then reply with a JSON object holding `reasoning` (your "
    "working) and `final_answer` (the answer alone, in the requested format)."
)

PROPOSAL_SYSTEM = (
    "You revise the instruction (system prompt) that steers an AI assistant on a task. You see "
    "the current instruction and some of the assistant's attempts made under it: each with its "
    "inputs, the assistant's output and feedback (for a wrong answer: the correct answer and "
    "what went wrong). Diagnose the mistakes: which missing knowledge, wrong procedure or "
    "format slip caused each one. Then write a complete new instruction that keeps whatever "
    "already works and adds precise, reusable guidance (domain facts, procedures, checks, "
    "output-format rules) that would have prevented these mistakes on similar inputs. Write "
    "general rules, not notes about these particular examples. Reply with a JSON object "
    "holding `reasoning` and `instruction` (the full new instruction text)."
)

MERGE_SYSTEM = (
    "You consolidate several revisions of the same AI-assistant instruction into one. Each "
    "revision was written independently from a different set of the assistant's attempts, so "
    "together they hold more lessons than any one of them. Write one complete instruction that "
    "keeps every distinct, useful rule, states each rule once, settles conflicts in favour of "
    "the more specific and better supported rule, and stays clearly organised. Do not drop a "
    "lesson just because only one revision has it. Reply with a JSON object holding "
    "`reasoning` and `instruction` (the full merged instruction text)."
)


def generator_messages(system_prompt: str, sample: Sample) -> list[Message]:
    parts = []
    if sample.context:
        parts.append(f"<context>\n{sample.context}\n</context>")
    parts.append(f"<question>\n{sample.question}\n</question>")
    parts.append(GENERATOR_REPLY)
    return [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def proposal_messages(
    component: str, current: str, records: Sequence[Mapping[str, Any]]
) -> list[Message]:
    return _examples_messages(
        PROPOSAL_SYSTEM, component, current, records, request="Write the revised instruction."
    )


def merge_messages(component: str, current: str, proposals: Sequence[str]) -> list[Message]:
    return _messages(
        MERGE_SYSTEM,
        component,
        current,
        tag="revisions",
        heading="Revision",
        items=[f"<instruction>\n{text}\n</instruction>" for text in proposals],
        request="Write the single merged instruction.",
    )


SUMMARIZE_SYSTEM = (
    "You condense feedback on an AI assistant's attempts at a task, so that one later revision "
    "of its instruction can learn from all of them at once. Each example below is an attempt "
    "(its inputs, output and feedback) or an earlier summary of attempts. Write one summary "
    "that keeps every distinct mistake and lesson: which inputs or topics went wrong, the "
    "correct approach or fact each one needed, and what worked. Merge repeats, but never drop a "
    "specific lesson or replace it with generic advice. Reply with a JSON object holding "
    "`reasoning` and `summary` (the condensed feedback)."
)


def summarize_messages(
    component: str, current: str, records: Sequence[Mapping[str, Any]]
) -> list[Message]:
    """The condensing call over ``records`` (attempts or earlier summaries)."""
    return _examples_messages(
        SUMMARIZE_SYSTEM, component, current, records, request="Write the condensed feedback."
    )


def _examples_messages(
    system: str,
    component: str,
    current: str,
    records: Sequence[Mapping[str, Any]],
    *,
    request: str,
) -> list[Message]:
    return _messages(
        system,
        component,
        current,
        tag="examples",
        heading="Example",
        items=[render_value(record) for record in records],
        request=request,
    )


def _messages(
    system: str,
    component: str,
    current: str,
    *,
    tag: str,
    heading: str,
    items: Sequence[str],
    request: str,
) -> list[Message]:
    """``system``, and a user message: the component, its current instruction, ``items``
    numbered under ``heading`` inside ``<tag>``, and ``request``."""
    listed = "\n\n".join(
        f"### {heading} {number}\n{item}" for number, item in enumerate(items, start=1)
    )
    user = (
        f"Component: {component}\n\n"
        f"<current_instruction>\n{current}\n</current_instruction>\n\n"
        f"<{tag}>\n{listed}\n</{tag}>\n\n"
        f"{request}"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
