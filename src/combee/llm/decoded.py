"""Text hidden in an encoding: the base64, hex and percent-encoded runs of a text, decoded.

An instruction planted in data may be encoded ("aWdub3JlIGFsbC4uLg==") for a model to decode and
obey; a lesson that then repeats what it said copies the data, though not its letters. The copy
check (:mod:`combee.llm.provenance`) therefore compares a lesson with the data and with what the
data's encoded runs decode to. Only runs that decode to readable UTF-8 text count. Every search
here runs in time linear in the text.
"""

from __future__ import annotations

import base64
import binascii
import re
from urllib.parse import unquote

_BASE64 = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{16,}={0,2}")
_HEX = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}){8,}(?![0-9A-Fa-f])")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
READABLE = 0.9
"""The share of printable characters (spaces included) a decoded run needs to count as text."""


def decoded_views(text: str) -> list[str]:
    """What ``text``'s encoded runs say, each run decoded once (an empty list when none is
    readable text)."""
    found: list[str] = []
    for match in _BASE64.finditer(text):
        run = match.group(0)
        try:
            raw = base64.b64decode(run + "=" * (-len(run) % 4), validate=True)
        except (binascii.Error, ValueError):
            continue
        _keep_readable(raw, found)
    for match in _HEX.finditer(text):
        _keep_readable(bytes.fromhex(match.group(0)), found)
    if _PERCENT.search(text) is not None:
        plain = unquote(text)
        if plain != text:
            found.append(plain)
    return found


def _keep_readable(raw: bytes, found: list[str]) -> None:
    try:
        plain = raw.decode("utf-8")
    except UnicodeDecodeError:
        return
    readable = sum(1 for char in plain if char.isprintable() or char.isspace())
    if plain and readable >= READABLE * len(plain) and any(c.isalpha() for c in plain):
        found.append(plain)
