"""The update an ACE curator or merger proposes: delta operations not yet applied."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from combee.methods.ace import schemas
from combee.methods.ace.playbook import normalize_content

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AceUpdate:
    """Delta operations for a playbook, as the model wrote them (validated only on apply)."""

    operations: list[dict[str, Any]] = field(default_factory=list)
    reasoning: str = ""
    source: str = ""
    """Which role produced it: "curator", "merge", "merge-fallback" (the merge failed or kept
    nothing, so the local updates stand), or "none" when no call was needed."""
    dropped: dict[str, int] = field(default_factory=dict)
    """Lessons left out before any apply (by a merge, or on the way to this update), by reason."""
    repaired: dict[str, int] = field(default_factory=dict)
    """Lessons recovered on the way to this update (e.g. ones a merge's reply did not list)."""
    combined: int = 0
    """Operations a merge folded into combined ones."""

    def render(self) -> str:
        """The operations as a JSON array, one operation per line."""
        if not self.operations:
            return "[]"
        lines = ",\n".join("  " + json.dumps(op, ensure_ascii=False) for op in self.operations)
        return f"[\n{lines}\n]"


def lesson_texts(operations: Sequence[Any]) -> list[str]:
    """The lesson text of every operation that carries one, normalised as bullets are."""
    return [
        normalize_content(op["content"])
        for op in operations
        if isinstance(op, Mapping) and isinstance(op.get("content"), str)
    ]


def curator_update(reply: Mapping[str, Any]) -> AceUpdate:
    """A curator's reply as its update: the operations it marks as remarks on the playbook or
    the attempt left out, logged and counted (``remark``); the rest without their ``about``
    field (one without it, from an endpoint that ignores the schema, is a lesson)."""
    operations = reply.get("operations")
    if isinstance(operations, Mapping):
        operations = [operations]  # one operation written without its list
    items = operations if isinstance(operations, list) else []
    ops = [dict(op) for op in items if isinstance(op, Mapping)]
    dropped = {"not_an_object": len(items) - len(ops)} if len(ops) < len(items) else {}
    lessons: list[dict[str, Any]] = []
    remarks: list[str] = []
    for op in ops:
        if op.pop(schemas.OPERATION_ABOUT, None) in schemas.REMARK_SUBJECTS:
            remarks.append(str(op.get("content", ""))[:200])
        else:
            lessons.append(op)
    if remarks:
        dropped["remark"] = len(remarks)
        log.info("%d operation(s) the curator marked as remarks left out: %s",
                 len(remarks), "; ".join(remarks))  # fmt: skip
    reasoning = str(reply.get("reasoning", ""))
    return AceUpdate(operations=lessons, reasoning=reasoning, source="curator", dropped=dropped)
