"""A curator's update checked against the rules the feedback stated: what it left out is added,
what contradicts them is dropped.

Both steps are repairs, declared settings of ACE and off with them: ``copy_rules`` adds text
the curator did not write, ``drop_contradictions`` leaves out text it did.

A curator reading several reflections often writes bullets for some of them and nothing (or
something generic) for the rest. When a reflection's feedback stated what was expected in a
sentence or two (a rule, a reference answer, a failed check: its
:attr:`~combee.core.types.Reflection.evidence`), that statement is the ground truth of the
attempt, and leaving it out loses a lesson that no later step can bring back. So after each
curator call (``copy_rules``): a short evidence whose names and numbers
(whole words, a name that opens a sentence included) no single operation of the reply and no
single bullet of the playbook holds is added as a bullet, in the lesson's words when the lesson
states it, else in the feedback's; it is counted as ``omitted_rule`` among the repairs. Evidence
with nothing specific in it (no number, no name) is left to the curator's judgement, as are
lessons that only the reflector wrote.

An operation that speaks of everything such a rule names with other numbers ("The yield of a
Stibrou is its base value multiplied by 0.5." where the feedback said 3;
:func:`~combee.methods.ace.grounding.contradicts`) is dropped first (``drop_contradictions``)
and counted as ``contradicts_feedback``: a playbook that states a rule and its contradiction
misleads the generator more than one that states the rule alone.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from combee.core.types import Reflection
from combee.methods.ace.grounding import JOINED_CHARS, LESSON, contradicts, named_terms, states
from combee.methods.ace.playbook import Playbook
from combee.methods.ace.update import AceUpdate

REPAIR = "omitted_rule"
"""The repair counted for each rule added back."""


CONTRADICTED = "contradicts_feedback"
"""The drop counted for each operation that contradicts a rule the feedback stated."""


def _contradicts(op: dict[str, Any], rules: Sequence[str]) -> bool:
    content = op.get("content")
    return isinstance(content, str) and any(contradicts(content, rule) for rule in rules)


def _holds(terms: set[str], texts: Sequence[str]) -> bool:
    patterns = [re.compile(rf"(?<!\w){re.escape(term)}(?!\w)") for term in terms]
    return any(all(p.search(text) for p in patterns) for text in texts)


def _written(op: dict[str, Any]) -> str:
    content = op.get("content")
    return _folded(content) if isinstance(content, str) else ""


def _folded(text: str) -> str:
    return text.lower().replace(",", "")


def with_stated_rules(
    update: AceUpdate,
    context: Playbook,
    reflections: Sequence[Reflection],
    *,
    copy_rules: bool = True,
    drop_contradictions: bool = True,
) -> AceUpdate:
    """``update`` without its operations that contradict a short evidence of ``reflections``
    (``drop_contradictions``), with an ADD for each such evidence that neither its operations
    nor ``context``'s bullets carry (``copy_rules``; see the module)."""
    rules = [r.evidence for r in reflections if 0 < len(r.evidence) <= JOINED_CHARS]
    if drop_contradictions:
        kept = [op for op in update.operations if not _contradicts(op, rules)]
    else:
        kept = list(update.operations)
    texts = [_written(op) for op in kept]
    texts += [_folded(bullet.content) for bullet in context.bullets]
    added: list[dict[str, Any]] = []
    section = context.sections[0].key
    for reflection in reflections if copy_rules else ():
        evidence = reflection.evidence
        terms = named_terms(evidence) if len(evidence) <= JOINED_CHARS else set()
        if not terms or _holds(terms, texts):
            continue
        lesson = str(reflection.fields.get(LESSON) or "")
        content = lesson if lesson and states(lesson, evidence) else evidence
        added.append({"type": "ADD", "section": section, "content": content})
        texts.append(_folded(content))
    if not added and len(kept) == len(update.operations):
        return update
    repaired = Counter(update.repaired) + Counter({REPAIR: len(added)})
    dropped = Counter(update.dropped) + Counter({CONTRADICTED: len(update.operations) - len(kept)})
    return AceUpdate(
        operations=[*kept, *added],
        reasoning=update.reasoning,
        source=update.source,
        dropped=dict(dropped),
        repaired=dict(repaired),
        combined=update.combined,
    )
