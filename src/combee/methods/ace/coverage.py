"""A curator's update that keeps every rule the feedback stated.

A curator reading several reflections often writes bullets for some of them and a remark (or
nothing) for the rest. When a reflection's feedback stated what was expected in a sentence or two
(a rule, a reference answer, a failed check: its :attr:`~combee.core.types.Reflection.evidence`),
that statement is the ground truth of the attempt, and leaving it out loses a lesson that no
later step can bring back. So after each curator call: a short evidence whose names and numbers
(whole words, a name that opens a sentence included) no single operation of the reply and no
single bullet of the playbook holds is added as a bullet, in the lesson's words when the lesson
states it, else in the feedback's; it is counted as ``omitted_rule`` among the repairs. Evidence
with nothing specific in it (no number, no name) is left to the curator's judgement, as are
lessons that only the reflector wrote.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from combee.core.types import Reflection
from combee.methods.ace.grounding import (
    JOINED_CHARS,
    LESSON,
    named_terms,
    states,
    without_remarks,
)
from combee.methods.ace.playbook import Playbook
from combee.methods.ace.update import AceUpdate

REPAIR = "omitted_rule"
"""The repair counted for each rule added back."""


def _holds(terms: set[str], texts: Sequence[str]) -> bool:
    patterns = [re.compile(rf"(?<!\w){re.escape(term)}(?!\w)") for term in terms]
    return any(all(p.search(text) for p in patterns) for text in texts)


def _written(op: dict[str, Any]) -> str:
    content = op.get("content")
    return _folded(without_remarks(content)) if isinstance(content, str) else ""


def _folded(text: str) -> str:
    return text.lower().replace(",", "")


def with_stated_rules(
    update: AceUpdate, context: Playbook, reflections: Sequence[Reflection]
) -> AceUpdate:
    """``update`` with an ADD for each short evidence of ``reflections`` that neither its
    operations nor ``context``'s bullets carry (see the module)."""
    texts = [_written(op) for op in update.operations]
    texts += [_folded(bullet.content) for bullet in context.bullets]
    added: list[dict[str, Any]] = []
    section = context.sections[0].key
    for reflection in reflections:
        evidence = reflection.evidence
        terms = named_terms(evidence) if len(evidence) <= JOINED_CHARS else set()
        if not terms or _holds(terms, texts):
            continue
        lesson = str(reflection.fields.get(LESSON) or "")
        content = lesson if lesson and states(lesson, evidence) else evidence
        added.append({"type": "ADD", "section": section, "content": content})
        texts.append(_folded(content))
    if not added:
        return update
    repaired = {**update.repaired, REPAIR: update.repaired.get(REPAIR, 0) + len(added)}
    return AceUpdate(
        operations=[*update.operations, *added],
        reasoning=update.reasoning,
        source=update.source,
        dropped=dict(update.dropped),
        repaired=repaired,
        combined=update.combined,
    )
