"""A curator's lesson text made whole: no copied bullet prefix, no bullet that begins or ends
mid-sentence. What the text says is the curator's to decide: it is never judged by its words."""

from __future__ import annotations

import re

from combee.llm.bounded import LESSON_CHARS
from combee.methods.ace.playbook import without_rendered_prefix

UNFINISHED_AT = LESSON_CHARS * 9 // 10
"""A lesson this long without a sentence end was most likely cut by the grammar's bound."""
_SENTENCE_ENDS = (".", "!", "?", '."', ".'", ".)", ";")
_SENTENCE_END_RE = re.compile(r"[.!?](?=\s+[A-Z(\"'])")

Repairs = list[tuple[str, str]]
"""(code, note) of each repair made."""


def lesson_text(written: str) -> tuple[str, Repairs]:
    """``written`` (normalised, not empty) as a bullet's text, and the repairs that took."""
    repairs: Repairs = []
    content = without_rendered_prefix(written)
    if content != written:
        repairs.append(("bullet_prefix", f"dropped a copied bullet prefix: {written!r}"))
    whole = whole_sentences(content)
    if whole != content:
        repairs.append(("unfinished_sentence", f"kept its whole sentences: {content!r}"))
    return whole, repairs


def whole_sentences(content: str) -> str:
    """``content`` cut to its whole sentences when it was cut off at the reply's length bound
    (long, or a fragment that begins in lower case, with no sentence end); else as it is."""
    ends = [m.end() for m in _SENTENCE_END_RE.finditer(content)]
    start = ends[0] if content[0].islower() and ends else 0  # begins mid-sentence
    cut_off = len(content) >= UNFINISHED_AT or content[0].islower()
    end = ends[-1] if cut_off and ends and not content.endswith(_SENTENCE_ENDS) else None
    whole = content[start:end].strip() if end is not None or start else content
    return whole or content
