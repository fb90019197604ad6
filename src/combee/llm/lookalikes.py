"""Text as it looks (:func:`fold`): NFKC, format characters dropped, and each letter, digit or
identifier punctuation mark that Unicode's confusables data (UTS #39, as shipped by
``confusable_homoglyphs``) lists as a look-alike of an ASCII one replaced by it. Part of the
canonical form of :mod:`combee.llm.canonical`."""

from __future__ import annotations

import functools
import importlib.resources
import json
import unicodedata

_FOLD_TARGETS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-./@:")
"""What a look-alike is folded to: ASCII letters and digits, and the punctuation of an
identifier."""


def _kind(char: str) -> str:
    if char.isupper():
        return "upper"
    if char.islower():
        return "lower"
    if char.isdigit():
        return "digit"
    return "other"


def _ascii_options(homoglyphs: list[dict[str, str]]) -> list[str]:
    options = []
    for entry in homoglyphs:
        char = entry.get("c", "").replace("\u200e", "")
        if len(char) == 1 and char in _FOLD_TARGETS:
            options.append(char)
    return options


@functools.cache
def _fold_table() -> dict[int, str]:
    """Each non-ASCII letter, digit or punctuation mark with an ASCII look-alike, mapped to it
    (one of the same kind: a capital to a capital, a digit to a digit, where one is listed)."""
    # The package's table: Unicode's confusables.txt as JSON, read once, when first needed.
    source = importlib.resources.files("confusable_homoglyphs").joinpath("confusables.json")
    data: dict[str, list[dict[str, str]]] = json.loads(source.read_text(encoding="utf-8"))
    table: dict[int, str] = {}
    for char, homoglyphs in data.items():
        if len(char) != 1 or char.isascii():
            continue
        options = _ascii_options(homoglyphs)
        if not options:
            continue
        kind = _kind(char)
        category = unicodedata.category(char)[0]
        wider = [*options, *(o for c in options for o in _ascii_options(data.get(c, [])))]
        if category == "L":  # a letter folds to a letter
            wider = [o for o in wider if o.isalpha()]
        elif category == "N":  # a digit to a digit, or else to what it looks like
            wider = [o for o in wider if o.isdigit()] or wider
        else:  # a mark to a mark
            wider = [o for o in wider if not o.isalnum()]
        same = [o for o in wider if _kind(o) == kind]
        if same or wider:
            table[ord(char)] = (same or wider)[0]
    return table


@functools.cache
def _is_format(char: str) -> bool:
    return unicodedata.category(char) == "Cf"


def fold(text: str) -> str:
    """``text`` as it looks: NFKC, format characters removed, look-alikes of ASCII letters,
    digits and identifier punctuation replaced by them; case kept. ASCII text is returned as
    it is."""
    if text.isascii():
        return text
    folded = unicodedata.normalize("NFKC", text)
    for char in set(folded):  # each distinct character looked at once, not each character
        if _is_format(char):
            folded = folded.replace(char, "")
    if folded.isascii():
        return folded
    return folded.translate(_fold_table())
