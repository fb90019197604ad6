"""Prompts of the four ACE roles, as chat messages.

Each user message is built from tagged blocks (``<playbook>``, ``<question>``, ...) and numbered
headers (``### Reflection 3``, ``### Local update 2``) so a scripted test model can read it back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from combee.core.types import Reflection, Trajectory
from combee.llm.tags import block
from combee.llm.types import Message
from combee.methods.ace.playbook import Playbook
from combee.methods.ace.update import AceUpdate
from combee.tasks.base import Sample

GENERATOR_SYSTEM = """\
You answer one task question with the help of a playbook: lessons learned from earlier attempts, \
one bullet per lesson, each with an id such as [str-00012] and counters of how often it helped or \
hurt. Read the playbook first and use the bullets that fit this question; trust bullets with a \
good helpful/harmful record more. Work the problem step by step, and follow the answer-format \
instructions of the task exactly.

Reply with one JSON object and nothing else:
{"reasoning": "<your step-by-step work>",
 "bullet_ids": ["<ids of the playbook bullets you actually relied on>"],
 "final_answer": "<the answer alone, in the requested format>"}"""

REFLECTOR_SYSTEM = """\
You review one attempt at a task question. You see the question, the attempt's reasoning and \
answer, the gold answer with the scorer's verdict, and the playbook bullets the attempt cited. \
Find what went wrong (or, when the attempt was right, what made it work), why it happened, and \
what a future attempt should do instead. Then judge each cited bullet: "helpful" if it moved the \
attempt toward the gold answer, "harmful" if it misled it, "neutral" if it did not matter.

key_insight must be one concrete, reusable rule that names the specific formula, concept or \
pitfall involved (for example the unit conversion or the term that was misread), never generic \
advice such as "be careful". When the scorer's feedback states a rule, a reference or what was \
expected, key_insight states it in full, with its names and numbers.

key_insight_about says what key_insight is: "task" when it is a rule for solving this kind of \
question, however it is worded ("The assistant should ...", "I need to ..." included); \
"playbook" when it only says what the playbook holds or lacks; "attempt" when it only describes \
this attempt (what it did, skipped or did not show). Only a "task" insight becomes a lesson, so \
write the rule itself (the formula or check that was missing) rather than a remark that it was \
missing.

Reply with one JSON object and nothing else:
{"reasoning": "<your analysis>",
 "error_identification": "<what exactly was wrong, or empty if nothing>",
 "root_cause_analysis": "<why it went wrong>",
 "correct_approach": "<how to solve it correctly>",
 "key_insight": "<the reusable rule>",
 "key_insight_about": "task|playbook|attempt",
 "bullet_tags": [{"id": "<cited bullet id>", "tag": "helpful|harmful|neutral"}]}"""

CURATOR_SYSTEM = """\
You keep a playbook of lessons for solving a task. Below are the current playbook and \
reflections on recent attempts, each ending in a key insight. Write the edit operations that put \
those insights into the playbook.

How:
- One operation for each distinct lesson the playbook does not state yet. Reflections that teach \
the same lesson share one operation.
- Each lesson is one complete rule, specific enough to act on: name the formula, term, unit or \
check it is about. A lesson goes into one operation, whole; never split it over several.
- A lesson tells a future attempt what to do on the task, however it is worded ("The assistant \
should ...", "I need to ..." included). Each ADD, UPDATE and MERGE says what its content is: \
"about": "task" for such a lesson; "playbook" when it only says what the playbook holds or lacks; \
"attempt" when it only describes an attempt (what it did, skipped or did not show). Only "task" \
operations reach the playbook, so write the rule a remark points to rather than the remark.
- A bullet that already states a lesson stays as it is, or gets an UPDATE when the reflections \
sharpen or correct it. MERGE bullets that say the same thing; DELETE a bullet the reflections \
show to be wrong.
- File each new lesson under one of the allowed sections, by its key.
- Mind the token budget: past it, the lowest-rated bullets are dropped, so sharpen bullets \
rather than add near-copies.
- The operations list is empty only when the playbook already states every lesson.

Operations:
{"type": "ADD", "section": "<section key>", "content": "<the lesson>", "about": "task"}
{"type": "UPDATE", "bullet_id": "<id>", "content": "<the improved lesson>", "about": "task"}
{"type": "MERGE", "bullet_ids": ["<id>", "<id>"], "content": "<one lesson replacing them>", \
"about": "task"}
{"type": "DELETE", "bullet_id": "<id>"}

Reply with one JSON object and nothing else, operations first:
{"operations": [<operations>], "reasoning": "<optional, one short sentence>"}"""

MERGE_SYSTEM = """\
Several curators each proposed edit operations for the same playbook, from different groups of \
reflections. Their operations are listed below, numbered #1, #2, ... across all the proposals. \
Decide, by number, what the playbook gets:

- keep: operations applied exactly as written. Keep every operation that brings a lesson no \
other kept operation brings.
- combine: operations that teach the same lesson, given as their numbers and one text that \
states it best (the most precise wording, or one rule joining both).
- drop: operations that repeat another operation or the playbook, or that conflict with a \
better-supported operation.

Put every number in exactly one of keep, combine or drop. Kept operations are copied as they \
are, so never rewrite them.

Reply with one JSON object and nothing else:
{"keep": [<numbers>], "combine": [{"numbers": [<numbers>], "content": "<the combined lesson>"}], \
"drop": [<numbers>], "reasoning": "<optional, one short sentence>"}"""

MERGE_BY_EXCEPTION_SYSTEM = """\
Several curators each proposed edit operations for the same playbook, from different groups of \
reflections. Their operations are listed below, numbered #1, #2, ... across all the proposals. \
Every operation is applied exactly as written unless you list it:

- combine: operations that teach the same lesson, given as their numbers and one text that \
states it best (the most precise wording, or one rule joining both).
- drop: operations that repeat another operation or the playbook, or that conflict with a \
better-supported operation.

List only the numbers to combine or drop; every number you do not list is kept as written.

Reply with one JSON object and nothing else:
{"combine": [{"numbers": [<numbers>], "content": "<the combined lesson>"}], \
"drop": [<numbers>], "reasoning": "<optional, one short sentence>"}"""

SYSTEM_PROMPTS: dict[str, str] = {
    "generator": GENERATOR_SYSTEM,
    "reflector": REFLECTOR_SYSTEM,
    "curator": CURATOR_SYSTEM,
    "merge": MERGE_SYSTEM,
}

EMPTY_NOTE = "(The playbook has no bullets yet.)"
REFLECTION_HEADER = "### Reflection {index}"
UPDATE_HEADER = "### Local update {index}"
OPERATION_LABEL = "#{number}"
ALLOWED_SECTIONS_LABEL = "Allowed sections:"


def playbook_block(playbook: Playbook) -> str:
    rendered = block("playbook", playbook.render())
    return rendered if len(playbook) else f"{EMPTY_NOTE}\n{rendered}"


def _chat(role: str, user: str) -> list[Message]:
    return [{"role": "system", "content": SYSTEM_PROMPTS[role]}, {"role": "user", "content": user}]


def _budget_lines(playbook: Playbook, token_budget: int | None) -> str:
    sections = ", ".join(f"{s.key} ({s.title})" for s in playbook.sections)
    budget = "none" if token_budget is None else str(token_budget)
    return (
        f"{ALLOWED_SECTIONS_LABEL} {sections}\n"
        f"Token budget: {budget} (the playbook now uses about {playbook.token_count()} tokens)"
    )


def generator_messages(playbook: Playbook, sample: Sample) -> list[Message]:
    parts = [playbook_block(playbook)]
    if sample.context.strip():
        parts.append(block("context", sample.context))
    parts.append(block("question", sample.question))
    return _chat("generator", "\n\n".join(parts))


def reflector_messages(playbook: Playbook, trajectory: Trajectory) -> list[Message]:
    sample = trajectory.sample
    cited = []
    for bullet_id in trajectory.details.get("bullet_ids", ()):
        bullet = playbook.get(bullet_id) if isinstance(bullet_id, str) else None
        if bullet is not None:
            cited.append(bullet.render())
    parts = [block("sample_id", sample.id)]
    if sample.context.strip():
        parts.append(block("context", sample.context))
    parts += [
        block("question", sample.question),
        block("model_reasoning", str(trajectory.details.get("reasoning", "")) or "(none)"),
        block("model_answer", trajectory.prediction or "(empty)"),
        block("gold_answer", sample.answer),
        block("outcome", "correct" if trajectory.score.correct else "wrong"),
        block("scorer_feedback", trajectory.score.feedback or "(none)"),
        block("cited_bullets", "\n".join(cited) or "(none)"),
    ]
    return _chat("reflector", "\n\n".join(parts))


def curator_messages(
    playbook: Playbook, reflections: Sequence[Reflection], *, token_budget: int | None
) -> list[Message]:
    parts = [playbook_block(playbook), _budget_lines(playbook, token_budget)]
    for index, reflection in enumerate(reflections, start=1):
        parts.append(f"{REFLECTION_HEADER.format(index=index)}\n{reflection.render()}")
    parts.append(curator_closing(len(reflections)))
    return _chat("curator", "\n\n".join(parts))


def curator_closing(count: int) -> str:
    """The task restated after the reflections: a small model that has read thousands of tokens
    of them otherwise often answers with generic lessons, or none, instead of theirs."""
    reflections = "1 reflection" if count == 1 else f"{count} reflections"
    return (
        f"Those were {reflections}. Write one operation for each key insight among them that the "
        "playbook does not state yet, naming the specific case, term or number it is about."
    )


def numbered_operation(number: int, operation: Mapping[str, Any]) -> str:
    """One operation as the merge sees it: ``#<number> <the operation as JSON>``."""
    return f"{OPERATION_LABEL.format(number=number)} {json.dumps(operation, ensure_ascii=False)}"


def merge_messages(
    playbook: Playbook,
    updates: Sequence[AceUpdate],
    *,
    token_budget: int | None,
    by_exception: bool = False,
) -> list[Message]:
    """The merge call: every operation of ``updates`` numbered from 1, in order, under its
    update's header (the numbers :func:`combee.methods.ace.merging.resolve_merge` reads).
    ``by_exception``: the reply lists only what to combine or drop, the rest is kept."""
    parts = [playbook_block(playbook), _budget_lines(playbook, token_budget)]
    number = 0
    for index, update in enumerate(updates, start=1):
        lines = [UPDATE_HEADER.format(index=index)]
        for operation in update.operations:
            number += 1
            lines.append(numbered_operation(number, operation))
        parts.append("\n".join(lines))
    if by_exception:
        return [
            {"role": "system", "content": MERGE_BY_EXCEPTION_SYSTEM},
            {"role": "user", "content": "\n\n".join(parts)},
        ]
    return _chat("merge", "\n\n".join(parts))


SUMMARIZE_SYSTEM = """\
You condense reflections on attempts at a task into one summary for a curator who maintains a \
playbook of lessons. Each reflection (or earlier summary) below holds what went wrong or right \
and the reusable lesson drawn from it.

Rules:
- Keep every distinct lesson, stated as one concrete, reusable rule that names the formula, \
term, conversion or check involved. Never replace specific lessons with generic advice.
- Lessons that say the same thing become one; keep the most precise wording.
- Note in the summary which kinds of mistakes were frequent and which approaches worked.

Reply with one JSON object and nothing else:
{"reasoning": "<how you grouped the lessons>",
 "summary": "<a short overview of what the reflections show>",
 "key_insights": ["<one distinct, specific lesson per entry>"]}"""

SYSTEM_PROMPTS["summarize"] = SUMMARIZE_SYSTEM


def summarize_messages(reflections: Sequence[Reflection]) -> list[Message]:
    """The condensing call over ``reflections`` (each under its ``### Reflection n`` header)."""
    parts = [
        f"{REFLECTION_HEADER.format(index=index)}\n{reflection.render()}"
        for index, reflection in enumerate(reflections, start=1)
    ]
    return _chat("summarize", "\n\n".join(parts))
