"""The merge by reference: the local updates' operations are numbered in one list, the merge
answers which numbers to keep, which to combine under one text and which to drop, and this code
builds the merged update from the operations themselves (kept ones copied verbatim). Past
:data:`LIST_KEEP_UP_TO` operations the merge is asked by exception: it lists only what to
combine or drop and everything else is kept, so its reply grows with the conflicts, not with the
lessons (a keep-list of thousands of numbers would outgrow any reply budget).

A lesson is not lost to the form of the reply: numbers may arrive as ``3``, ``"3"`` or ``"#3"``;
a number the reply does not place is kept (and counted as ``merge_unlisted``); a number placed
twice counts once (combine before keep before drop); a drop of a lesson whose specifics (numbers,
identifiers, quoted values, names, a name that opens a sentence among them) nothing else carries
is overruled (``merge_drop_overruled``; a repair, off with ACE's ``overrule_drops``). Exact
duplicates among the result are
dropped. A reply that places no valid number is not usable: the caller falls back to the union
of the local updates (:func:`union`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from combee.methods.ace.dedup import specifics
from combee.methods.ace.grounding import opening_names
from combee.methods.ace.playbook import normalize_content
from combee.methods.ace.update import AceUpdate

LIST_KEEP_UP_TO = 128
"""The most operations a merge is asked to list one by one (keep, combine or drop)."""

_NUMBER_RE = re.compile(r"^\s*(?:#|no\.?\s*|op(?:eration)?\s*)?(\d+)\s*$", re.IGNORECASE)


def operations_of(updates: Sequence[AceUpdate]) -> list[dict[str, Any]]:
    """Every operation of ``updates`` in order: operation ``n`` of the merge is item ``n - 1``."""
    return [op for update in updates for op in update.operations]


def _number(value: Any, count: int) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str):
        match = _NUMBER_RE.match(value)
        value = int(match[1]) if match else None
    return value if isinstance(value, int) and 1 <= value <= count else None


def _numbers(value: Any, count: int) -> list[int]:
    """The valid operation numbers in ``value`` (a list, one number, or "1, 2"), in order."""
    if isinstance(value, str):
        value = value.split(",")
    items = value if isinstance(value, list) else [value]
    found = (_number(item, count) for item in items)
    return list(dict.fromkeys(n for n in found if n is not None))


def _key(op: Mapping[str, Any]) -> str:
    kind = str(op.get("type", "")).strip().upper()
    content = op.get("content")
    if isinstance(content, str) and normalize_content(content):
        return f"{kind}|{normalize_content(content).casefold()}"
    return f"{kind}|{json.dumps(op, sort_keys=True, default=str)}"


def _drop_stands(op: Mapping[str, Any], carried: frozenset[str]) -> bool:
    """Whether a merge may drop ``op`` as a repeat or a conflict: a lesson naming something no
    kept lesson and no bullet names (a made-up term, a number, an identifier) is no repeat of
    them, and dropping it would lose that lesson, so such a drop is overruled. Operations
    without text (DELETE) and generic lessons (no specifics) may be dropped."""
    content = op.get("content")
    if not isinstance(content, str):
        return True
    return _named(content) <= carried


def _named(text: str) -> frozenset[str]:
    """What a lesson names: its specifics, and a name that opens one of its sentences."""
    return specifics(text) | opening_names(text)


def dedup(operations: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """``operations`` without exact repeats (same type and text, ignoring case and spacing), and
    how many repeats were left out."""
    seen: set[str] = set()
    kept: list[dict[str, Any]] = []
    for op in operations:
        key = _key(op)
        if key not in seen:
            seen.add(key)
            kept.append(op)
    return kept, len(operations) - len(kept)


def _notes(updates: Sequence[AceUpdate]) -> tuple[Counter[str], Counter[str], int]:
    dropped: Counter[str] = Counter()
    repaired: Counter[str] = Counter()
    for update in updates:
        dropped.update(update.dropped)
        repaired.update(update.repaired)
    return dropped, repaired, sum(update.combined for update in updates)


def carried(update: AceUpdate, others: Sequence[AceUpdate]) -> AceUpdate:
    """``update`` also carrying what ``others`` (empty updates beside it) counted."""
    if not any(u.dropped or u.repaired or u.combined for u in others):
        return update
    dropped, repaired, combined = _notes([update, *others])
    return AceUpdate(
        operations=update.operations,
        reasoning=update.reasoning,
        source=update.source,
        dropped=dict(dropped),
        repaired=dict(repaired),
        combined=combined,
    )


def union(updates: Sequence[AceUpdate], reasoning: str = "") -> AceUpdate:
    """The local updates' operations together, in order, exact repeats dropped."""
    operations = operations_of(updates)
    dropped, repaired, combined = _notes(updates)
    kept, repeats = dedup(operations)
    if repeats:
        dropped["duplicate"] += repeats
    return AceUpdate(
        operations=kept,
        reasoning=reasoning,
        source="merge-fallback",
        dropped=dict(dropped),
        repaired=dict(repaired),
        combined=combined,
    )


def resolve_merge(
    updates: Sequence[AceUpdate],
    reply: Mapping[str, Any],
    *,
    by_exception: bool = False,
    known: str = "",
    overrule_drops: bool = True,
) -> AceUpdate | None:
    """The merged update a by-reference reply describes, or None when it places no number or
    drops every one.
    ``by_exception``: the reply lists only what to combine or drop; the rest is kept, and a
    reply that lists nothing keeps everything. ``known``: the playbook's text; a drop stands
    only for a lesson whose specifics (names, numbers, identifiers) the playbook or the merged
    operations still carry (see :func:`_drop_stands`), when ``overrule_drops`` is on (a repair:
    it keeps text the merge dropped)."""
    operations = operations_of(updates)
    count = len(operations)
    placed: dict[int, str] = {}
    combined_at: dict[int, dict[str, Any]] = {}
    groups = reply.get("combine")
    for group in groups if isinstance(groups, list) else ():
        if not isinstance(group, Mapping):
            continue
        numbers = [n for n in _numbers(group.get("numbers"), count) if n not in placed]
        text = group.get("content")
        base = next((operations[n - 1] for n in numbers if "content" in operations[n - 1]), None)
        if not numbers or base is None or not isinstance(text, str) or not text.strip():
            continue  # its numbers stay unplaced, so they are kept as written
        combined_at[numbers[0]] = {**base, "content": text}
        placed.update(dict.fromkeys(numbers, "combine"))
    for field in ("keep", "drop"):
        for number in _numbers(reply.get(field), count):
            placed.setdefault(number, field)
    if not placed and not by_exception:
        return None
    if len(placed) == count and all(role == "drop" for role in placed.values()):
        return None  # curators only propose what is new: dropping all of it is no answer
    dropped, repaired, combined = _notes(updates)
    combined += sum(1 for role in placed.values() if role == "combine")
    carried_specifics = _named(known).union(
        *(
            _named(str(operations[n - 1].get("content", "")))
            for n in range(1, count + 1)
            if placed.get(n) in ("keep", None) and n not in combined_at
        ),
        *(_named(str(op["content"])) for op in combined_at.values()),
    )
    for number, placement in list(placed.items()) if overrule_drops else ():
        if placement == "drop" and not _drop_stands(operations[number - 1], carried_specifics):
            placed[number] = "keep"
            repaired["merge_drop_overruled"] += 1
    result: list[dict[str, Any]] = []
    for number, op in enumerate(operations, start=1):
        role = placed.get(number)
        if number in combined_at:
            result.append(combined_at[number])
        elif role in ("keep", None):
            result.append(dict(op))
            if role is None and not by_exception:
                repaired["merge_unlisted"] += 1
        elif role == "drop":
            dropped["merge_drop"] += 1
    result, repeats = dedup(result)
    if repeats:
        dropped["duplicate"] += repeats
    return AceUpdate(
        operations=result,
        reasoning=str(reply.get("reasoning", "")),
        source="merge",
        dropped=dict(dropped),
        repaired=dict(repaired),
        combined=combined,
    )
