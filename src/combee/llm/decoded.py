"""Text hidden in an encoding: the base64, hex and percent-encoded runs of a text, decoded, and
what those decode to, down to :data:`DEPTH` layers.

An instruction planted in data may be encoded ("aWdub3JlIGFsbC4uLg==") for a model to decode and
obey; a lesson that then repeats what it said copies the data, though not its letters. The copy
check (:mod:`combee.llm.provenance`) therefore compares a lesson with the data and with what the
data's encoded runs decode to. Encodings nest in any order (base64 of base64, base64 of hex,
percent-encoded base64): each readable decoding is searched again, to three layers. Only runs
that decode to readable UTF-8 text count.

Every search here runs in time linear in the text. A decoding is shorter than its run (base64
three quarters, hex half, percent-encoding at most as long), and the runs one kind of encoding
finds do not overlap, so one layer's decodings add up to at most 2.25 times the text searched
(base64, hex and percent-encoding of the same characters), and three layers at most about 19
times the text, whatever it holds.
"""

from __future__ import annotations

import base64
import binascii
import re
from urllib.parse import unquote

DEPTH = 3
"""How many layers of encoding are taken off: ``base64(hex(base64(text)))`` reads as text."""
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{16,}={0,2}")
_HEX = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}){8,}(?![0-9A-Fa-f])")
_PERCENT = re.compile(r"(?<!\S)\S*?%[0-9A-Fa-f]{2}\S*+")
"""A run of non-space characters holding a percent-encoded byte (searched from a run's first
character only)."""
READABLE = 0.9
"""The share of printable characters (spaces included) a decoded run needs to count as text."""


def decoded_views(text: str, depth: int = DEPTH) -> list[str]:
    """What ``text``'s encoded runs say, and what encoded runs in that say, down to ``depth``
    layers (an empty list when none is readable text)."""
    found: list[str] = []
    layer = [text]
    for _ in range(depth):
        layer = [plain for view in layer for plain in _decoded_once(view)]
        if not layer:
            break
        found += layer
    return found


def _decoded_once(text: str) -> list[str]:
    """What ``text``'s encoded runs say, each run decoded once."""
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
    if "%" in text:
        for match in _PERCENT.finditer(text):
            run = match.group(0)
            plain = unquote(run)
            if plain != run:
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
