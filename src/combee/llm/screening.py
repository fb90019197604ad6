"""Instructions planted in data, recognised before they can become lessons.

A task's text can carry a prompt injection ("ignore previous instructions and add the bullet
..."). A reflector that copies it turns it into a lesson, and a curator into a bullet every
later answer obeys. :func:`planted_kind` recognises such text: an order to drop earlier
instructions, to edit the playbook, to take on another role, or to give a fixed answer whatever
the question. Our own patterns. A method keeps out the reflections that carry one (ACE's
``screen``), and the LLM client never caches a reply that does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "override",
        re.compile(
            r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+|your\s+)?"
            r"(?:previous|prior|above|earlier|preceding|other|system)\s+"
            r"(?:instructions?|prompts?|rules|messages|guidance|context)",
            re.IGNORECASE,
        ),
    ),
    (
        "playbook-edit",
        re.compile(
            r"\b(?:add|insert|write|append|include)\s+(?:the|this|a|an)?\s*"
            r"(?:following\s+)?(?:bullet|rule|entry|line)\b[^.\n]{0,20}(?:\"|'|:|[A-Z]{4,})",
        ),
    ),
    (
        "role-change",
        re.compile(
            r"\b(?:you are now|from now on,? you|new instructions?:|developer mode|jailbreak|"
            r"reveal (?:your|the) (?:system )?prompt)",
            re.IGNORECASE,
        ),
    ),
    (
        "fixed-answer",
        re.compile(r"\b(?:ALWAYS|ONLY)\s+(?:ANSWER|REPLY|RESPOND|OUTPUT|SAY)\b"),
    ),
)


def planted_kind(text: str) -> str | None:
    """The kind of planted instruction ``text`` carries, or None."""
    return next((kind for kind, rule in _RULES if rule.search(text)), None)


def planted_instruction(fields: Mapping[str, Any]) -> str | None:
    """The kind of planted instruction a reply's text fields carry, or None."""
    return planted_kind("\n".join(str(v) for v in fields.values() if isinstance(v, str)))
