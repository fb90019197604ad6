"""Code words (six or more capitals, a canary) in canonical form: folded, with the hyphens,
dots, slashes or underscores between capital groups removed and single capitals spaced out
joined. Part of the canonical form of :mod:`combee.llm.canonical`."""

from __future__ import annotations

import re

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_LATIN_WORD = rf"[^\W{_CJK}]"
RARE = re.compile(rf"(?<!{_LATIN_WORD})[A-Z][A-Z_]{{5,}}(?!{_LATIN_WORD})")
"""A code word: six or more capitals, told apart before case is folded; a character of a
script written without spaces ends it, as a space would."""
_CAPITAL_CHAIN = re.compile(
    r"[A-Z](?<![^\W_][A-Z])[A-Z]*+(?P<sep>[-./])[A-Z]++(?:(?P=sep)[A-Z]++)*+"
)
_SPACED_CAPITALS = re.compile(r"[A-Z](?<![^\W_][A-Z])(?: [A-Z](?![^\W_]))++")


def code_words(text: str) -> list[str]:
    """The code words in ``text`` (folded with :func:`fold`), as keys (lower case, without
    underscores or the separators between capital groups), in order, each once."""
    found = [token.replace("_", "").lower() for token in RARE.findall(text)]
    found += _joined_capitals(text)
    return list(dict.fromkeys(word for word in found if len(word) >= 6))


def _joined_capitals(text: str) -> list[str]:
    joined = []
    for match in _CAPITAL_CHAIN.finditer(text):
        if not continues(text, match.end()):
            joined.append(re.sub(r"[-./]", "", match.group(0)).lower())
    for match in _SPACED_CAPITALS.finditer(text):
        if len(match.group(0)) >= 11:  # six capitals or more
            joined.append(match.group(0).replace(" ", "").lower())
    return joined


def word_keys(words: list[str], text: str) -> set[str]:
    """The keys a code word is looked up among: ``words`` (case folded) without underscores,
    and the capital groups of ``text`` (folded with :func:`fold`) joined."""
    keys = {word.replace("_", "") for word in words}
    keys.update(_joined_capitals(text))
    return keys


def continues(text: str, end: int) -> bool:
    """Whether the word or number at ``end`` goes on (a letter, a digit, or a decimal part)."""
    if end >= len(text):
        return False
    after = text[end]
    if after.isalnum() or after == "_":
        return True
    return after in ".," and end + 1 < len(text) and text[end + 1].isdigit()
