"""Prompts of the four ACE roles, as chat messages.

Each user message is built from tagged blocks (``<playbook>``, ``<question>``, ...) and numbered
headers (``### Reflection 3``, ``### Local update 2``) so a scripted test model can read it back.
"""

from __future__ import annotations

from collections.abc import Sequence

from combee.core.types import Reflection, Trajectory
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
advice such as "be careful".

Reply with one JSON object and nothing else:
{"reasoning": "<your analysis>",
 "error_identification": "<what exactly was wrong, or empty if nothing>",
 "root_cause_analysis": "<why it went wrong>",
 "correct_approach": "<how to solve it correctly>",
 "key_insight": "<the reusable rule>",
 "bullet_tags": [{"id": "<cited bullet id>", "tag": "helpful|harmful|neutral"}]}"""

CURATOR_SYSTEM = """\
You curate a playbook of lessons for solving a task. You get the current playbook and a list of \
reflections on recent attempts. Turn the lessons in them into edit operations on the playbook.

Rules:
- Only add what the playbook does not already say. If a bullet covers a lesson, leave it, or \
UPDATE it when the reflections sharpen or correct it.
- Keep lessons specific: name the formula, the term, the conversion, the check. Drop vague advice.
- Several reflections teaching the same lesson make one operation, not several.
- MERGE bullets that overlap, DELETE bullets that the reflections show to be wrong.
- Put each new bullet in one of the allowed sections, named by its key.
- Respect the token budget: when the playbook outgrows it, the lowest-rated bullets are dropped, \
so prefer tightening existing bullets to piling up new ones.
- Reply with an empty operations list when there is nothing new to learn.

Operations:
{"type": "ADD", "section": "<section key>", "content": "<the lesson>"}
{"type": "UPDATE", "bullet_id": "<id>", "content": "<the improved lesson>"}
{"type": "MERGE", "bullet_ids": ["<id>", "<id>"], "content": "<one lesson replacing them>"}
{"type": "DELETE", "bullet_id": "<id>"}

Reply with one JSON object and nothing else:
{"reasoning": "<which lessons are new and why>", "operations": [<operations>]}"""

MERGE_SYSTEM = """\
You merge several proposed updates to one playbook into a single update. Each local update is a \
list of edit operations that another curator proposed for the same current playbook, from a \
different group of reflections.

Rules:
- Keep every specific, useful lesson from any local update.
- Operations that teach the same lesson become one (keep the most precise wording, or combine them).
- When updates conflict (one edits or deletes a bullet another relies on), choose the change best \
supported and drop the other.
- Do not repeat what the current playbook already says.
- Use only bullet ids from the current playbook and only the allowed section keys.
- Respect the token budget: prefer UPDATE and MERGE of overlapping bullets over new ADDs.

Operations:
{"type": "ADD", "section": "<section key>", "content": "<the lesson>"}
{"type": "UPDATE", "bullet_id": "<id>", "content": "<the improved lesson>"}
{"type": "MERGE", "bullet_ids": ["<id>", "<id>"], "content": "<one lesson replacing them>"}
{"type": "DELETE", "bullet_id": "<id>"}

Reply with one JSON object and nothing else:
{"reasoning": "<how you combined the updates>", "operations": [<operations>]}"""

SYSTEM_PROMPTS: dict[str, str] = {
    "generator": GENERATOR_SYSTEM,
    "reflector": REFLECTOR_SYSTEM,
    "curator": CURATOR_SYSTEM,
    "merge": MERGE_SYSTEM,
}

EMPTY_NOTE = "(The playbook has no bullets yet.)"
REFLECTION_HEADER = "### Reflection {index}"
UPDATE_HEADER = "### Local update {index}"
ALLOWED_SECTIONS_LABEL = "Allowed sections:"


def block(tag: str, text: str) -> str:
    """``text`` wrapped in ``<tag>`` ... ``</tag>`` lines."""
    return f"<{tag}>\n{text.strip()}\n</{tag}>"


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
    return _chat("curator", "\n\n".join(parts))


def merge_messages(
    playbook: Playbook, updates: Sequence[AceUpdate], *, token_budget: int | None
) -> list[Message]:
    parts = [playbook_block(playbook), _budget_lines(playbook, token_budget)]
    for index, update in enumerate(updates, start=1):
        parts.append(f"{UPDATE_HEADER.format(index=index)}\n```json\n{update.render()}\n```")
    return _chat("merge", "\n\n".join(parts))
