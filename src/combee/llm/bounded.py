"""Bounding a JSON schema so the embedded model's grammar always closes its reply in time.

A small model tends to ramble in a free-text field until the token limit cuts the JSON in half,
so the grammar llama.cpp decodes with bounds the reply as a whole:

- identifiers (fields named ``id``, ``*_id``, ``ids``, ``*_ids``) are short strings, and arrays
  of identifiers, numbers or tags hold a few items (or as many as the schema allows);
- an array of free text (lessons, operations with their text) is the payload: each item keeps
  room for a full lesson and the reply budget decides how many items fit, so a small budget
  means fewer lessons, never lessons cut into fragments;
- free-text fields outside such arrays are notes: short when the schema carries a payload
  array, otherwise they share the budget, up to the largest string bound the grammar parser
  accepts. No string is left open: a small model rambles in an open field until the token
  limit cuts the JSON, and on a CPU that costs minutes per call.

The budget is about two characters per allowed token, with a margin; a reply that uses one
character per token (digits, a rambling small model) is still whole, because the embedded
backend raises its token limit to :func:`longest_reply` of the bounded schema.

No string bound exceeds :data:`MAX_STRING_CHARS` and no array more than :data:`MAX_ITEMS`
items: llama.cpp expands a bound into nested rules and refuses (then crashes on) grammars
whose nesting passes about a thousand. Only the grammar is bounded: replies are validated
against the caller's schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

CHARS_PER_TOKEN = 2.0
"""Characters the budget counts per allowed token (English averages 3-4; digits and JSON
punctuation are often one token each)."""
MAX_STRING_CHARS = 800
"""The largest string bound sent: llama.cpp's parser refuses bounds past about 1000."""
MAX_ITEMS = 64
"""The most items any array may hold in the grammar."""
LESSON_CHARS = 280
"""Room for one lesson: one or two full sentences."""
MIN_LESSON_CHARS = 64
NOTE_CHARS = 240
"""A note beside a payload array (``reasoning`` after the operations)."""
MIN_NOTE_CHARS = 16
ID_CHARS = 16
ID_ITEMS = 6
"""Items of an array of identifiers or tags whose schema sets no ``maxItems``."""
NESTED_ID_ITEMS = 4
"""The same inside a payload item (the bullets one MERGE operation names)."""

_ID_NAME = re.compile(r"(?:.*_)?ids?")


def bounded_schema(schema: Mapping[str, Any], max_tokens: int) -> dict[str, Any]:
    """A copy of ``schema`` whose every reply fits in about ``max_tokens`` tokens."""
    chars = max(64, int(max_tokens * CHARS_PER_TOKEN))
    root: dict[str, Any] = _fresh(schema)
    payload: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    fixed: list[dict[str, Any]] = []
    _mark(root, "", False, (payload, notes, fixed))
    for array in fixed:
        # Identifiers and tags never take more than a quarter of the budget.
        fitting = (chars // 4) // (_size(array.get("items")) + 2)
        array["maxItems"] = max(int(array.get("minItems", 0)), min(array["maxItems"], fitting))
    if payload:
        for note in notes:
            _cap(note, max(MIN_NOTE_CHARS, min(NOTE_CHARS, chars // 8)))
        _size_payload(root, payload, chars)
    else:
        _share_notes(root, notes, chars)
    return root


def _fresh(value: Any) -> Any:
    """A copy in plain dicts and lists that shares no node (a schema may reuse one dict for
    several fields, and each field gets its own bound)."""
    if isinstance(value, Mapping):
        return {str(key): _fresh(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_fresh(item) for item in value]
    return value


def _is_free_string(node: Mapping[str, Any]) -> bool:
    return node.get("type") == "string" and "enum" not in node and "const" not in node


def _cap(node: dict[str, Any], chars: int) -> None:
    node["maxLength"] = min(int(node.get("maxLength", chars)), chars)


def _branches(node: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    for key in ("anyOf", "oneOf"):
        for branch in node.get(key) or ():
            if isinstance(branch, dict):
                yield branch


def _has_free_text(node: Any, name: str) -> bool:
    if not isinstance(node, dict):
        return False
    if _is_free_string(node):
        return not _ID_NAME.fullmatch(name)
    if any(_has_free_text(b, name) for b in _branches(node)):
        return True
    properties = node.get("properties")
    if isinstance(properties, dict) and any(
        _has_free_text(child, key) for key, child in properties.items()
    ):
        return True
    return node.get("type") == "array" and _has_free_text(node.get("items"), name)


_Found = tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]


def _mark(node: Any, name: str, in_array: bool, found: _Found) -> None:
    """Bound identifiers, lesson strings and small arrays; collect the payload arrays, the
    notes and the arrays of identifiers outside payload items (``found``, in that order)."""
    if not isinstance(node, dict):
        return
    payload, notes, fixed = found
    for branch in _branches(node):
        _mark(branch, name, in_array, found)
    if _is_free_string(node):
        if _ID_NAME.fullmatch(name):
            _cap(node, ID_CHARS)
        elif in_array:
            _cap(node, LESSON_CHARS)
        else:
            notes.append(node)
    properties = node.get("properties")
    if isinstance(properties, dict):
        for key, child in properties.items():
            _mark(child, key, in_array, found)
    if node.get("type") == "array":
        items = node.get("items")
        if not in_array and _has_free_text(items, name):
            payload.append(node)
        else:
            most = NESTED_ID_ITEMS if in_array else MAX_ITEMS
            node["maxItems"] = min(int(node.get("maxItems", ID_ITEMS)), most)
            if not in_array:
                fixed.append(node)
        _mark(items, name, True, found)


def longest_reply(schema: Mapping[str, Any]) -> int:
    """The longest JSON text a bounded schema admits, in characters: with at least one
    character per token, a token limit this large never cuts a reply the grammar allows."""
    return _size(schema) + 2 * sum(1 for _ in _nodes(schema))


def _size(node: Any) -> int:
    """The longest JSON text ``node`` admits, in characters (open strings count as empty)."""
    if not isinstance(node, dict):
        return 12
    options = list(_branches(node))
    if options:
        return max(_size(option) for option in options)
    if "enum" in node or "const" in node:
        values = node.get("enum", [node.get("const")])
        return max((len(json.dumps(v)) for v in values), default=4)
    kind = node.get("type")
    if kind == "string":
        return 2 + int(node.get("maxLength", 0))
    if kind == "array":
        return 2 + int(node.get("maxItems", 0)) * (_size(node.get("items")) + 2)
    if kind == "object":
        properties = node.get("properties") or {}
        return 2 + sum(len(json.dumps(k)) + 4 + _size(v) for k, v in properties.items())
    return {"boolean": 5, "null": 4}.get(str(kind), 12)


def _nodes(node: Any) -> Iterator[dict[str, Any]]:
    if not isinstance(node, dict):
        return
    yield node
    for branch in _branches(node):
        yield from _nodes(branch)
    for child in (node.get("properties") or {}).values():
        yield from _nodes(child)
    yield from _nodes(node.get("items"))


def _size_payload(root: dict[str, Any], payload: list[dict[str, Any]], chars: int) -> None:
    """As many full-length items in each payload array as the budget left over holds (at least
    one, with shorter lessons when even one does not fit)."""
    limits = [min(int(a.get("maxItems", MAX_ITEMS)), MAX_ITEMS) for a in payload]
    for array in payload:
        array["maxItems"] = 0
    share = max(0, chars - _size(root)) // len(payload)
    for array, limit in zip(payload, limits, strict=True):
        lessons = [
            node
            for node in _nodes(array["items"])
            if int(node.get("maxLength", 0)) >= MIN_LESSON_CHARS
        ]
        item = _size(array["items"]) + 2
        while item > share and lessons and lessons[0]["maxLength"] > MIN_LESSON_CHARS:
            for node in lessons:
                node["maxLength"] = max(MIN_LESSON_CHARS, int(node["maxLength"]) - 16)
            item = _size(array["items"]) + 2
        fitting = max(1, share // item)
        array["maxItems"] = max(int(array.get("minItems", 0)), min(fitting, limit))


def _share_notes(root: dict[str, Any], notes: list[dict[str, Any]], chars: int) -> None:
    """Free-text fields share what the rest leaves, each up to :data:`MAX_STRING_CHARS`."""
    if not notes:
        return
    given = [note.get("maxLength") for note in notes]
    for note in notes:
        note["maxLength"] = 0
    share = max(MIN_NOTE_CHARS, (chars - _size(root)) // len(notes))
    for note, bound in zip(notes, given, strict=True):
        note["maxLength"] = min(
            share, MAX_STRING_CHARS, MAX_STRING_CHARS if bound is None else bound
        )


def open_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` without string bounds (its arrays still bounded)."""
    root: dict[str, Any] = _fresh(schema)
    for node in _nodes(root):
        node.pop("maxLength", None)
    return root
