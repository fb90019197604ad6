"""Curator delta operations and their atomic application to a playbook.

Operations are plain JSON objects, as the curator writes them:

- ``{"type": "ADD", "section": "strategies", "content": "..."}``
- ``{"type": "UPDATE", "bullet_id": "str-00003", "content": "..."}`` (keeps the counters)
- ``{"type": "MERGE", "bullet_ids": ["str-00003", "mis-00007"], "content": "..."}`` (one new
  bullet in the first bullet's section, counters summed, the merged bullets removed)
- ``{"type": "DELETE", "bullet_id": "str-00003"}``

Each operation is checked against the playbook as the earlier operations left it. A lesson is not
lost to its form: defects a reader can see through are repaired, logged and counted (a missing or
unknown section files the lesson under the catch-all section; a bullet id with brackets, spaces,
capitals, a wrong slug or missing zeros names the bullet with that number; a missing type is read
off the fields; an ADD's stray ``bullet_id`` is ignored; an UPDATE or MERGE whose bullets never
existed adds its text as a new bullet; a lesson cut off at the reply's length bound keeps its
whole sentences). What still cannot apply (no text, a duplicate, an UPDATE that restates its
bullet, a bullet this update already removed)
is rejected with a reason and logged; the rest still apply. The input
playbook never changes.

Token budget: after the operations, while the playbook's :meth:`~Playbook.token_count` exceeds the
budget, the bullet with the lowest ``helpful - harmful`` is evicted, the oldest (lowest id number)
first among equals. Untested bullets (0/0) therefore go before proven ones, and stale untested
bullets before fresh ones. Only when no bullet is left can the (header-only) playbook stay above a
budget smaller than its headers.
"""

from __future__ import annotations

import functools
import logging
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from combee.llm.placeholders import general
from combee.methods.ace.dedup import NearDuplicates, keeps_more
from combee.methods.ace.eviction import evict_to_budget
from combee.methods.ace.lesson_text import lesson_text
from combee.methods.ace.playbook import (
    Bullet,
    Playbook,
    Section,
    normalize_content,
)
from combee.methods.ace.update import lesson_texts

logger = logging.getLogger(__name__)

OP_TYPES: tuple[str, ...] = ("ADD", "UPDATE", "MERGE", "DELETE")

_ID_RE = re.compile(r"([a-z]+)\s*-\s*(\d+)")
_NUMBER_RE = re.compile(r"\d+")


@dataclass(frozen=True)
class ApplyResult:
    """What one application did."""

    playbook: Playbook
    applied: list[dict[str, Any]] = field(default_factory=list)
    """The operations that took effect, normalised; ADD and MERGE carry the new ``new_id``."""
    rejected: list[tuple[Any, str]] = field(default_factory=list)
    """(operation as given, why it was rejected)."""
    evicted: list[str] = field(default_factory=list)
    """Ids of bullets removed to meet the token budget, in eviction order."""
    dropped: dict[str, int] = field(default_factory=dict)
    """Lessons that did not reach the playbook, counted by reason (one per rejected operation,
    plus what the update itself dropped before it was applied)."""
    repaired: dict[str, int] = field(default_factory=dict)
    """Operations that applied after a repair, counted by the defect repaired."""
    combined: int = 0
    """Operations the update's merge folded into combined ones (set by the caller)."""
    near_duplicates: int = 0
    """ADDs that repeated an existing bullet in other words and were folded into it."""


class _Rejected(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@functools.lru_cache(maxsize=65536)
def _dedup_key(text: str) -> str:
    # Cached: every operation compares its text with every bullet's, and a bullet's text is
    # the same from one comparison to the next.
    return normalize_content(text).casefold()


def _content(op: Mapping[str, Any]) -> str:
    value = op.get("content")
    if not isinstance(value, str):
        raise _Rejected("no_content", "content must be a string")
    text = general(normalize_content(value))  # a bullet outlives its episode's placeholders
    if not text:
        raise _Rejected("no_content", "content is empty")
    return text


def _kind(op: Mapping[str, Any]) -> tuple[Any, str | None]:
    """The operation type, and the repair it took to read it (None: as written)."""
    raw = op.get("type")
    if raw is None and isinstance(op.get("content"), str):
        if isinstance(op.get("bullet_ids"), list):
            return "MERGE", "missing_type"
        return ("UPDATE" if op.get("bullet_id") is not None else "ADD"), "missing_type"
    if not isinstance(raw, str):
        return raw, None
    kind = raw.strip().upper()
    if kind not in OP_TYPES:
        words = re.findall(r"[A-Z]+", kind)
        found = [t for t in OP_TYPES if t in words]
        kind = found[0] if len(found) == 1 else kind
    return kind, ("type_format" if kind in OP_TYPES and kind != raw else None)


class _Draft:
    """A mutable working copy of a playbook; ``bullets`` keeps insertion order."""

    def __init__(self, playbook: Playbook, near: NearDuplicates | None = None) -> None:
        self.base = playbook
        self.near = near
        self.folded = 0
        self.bullets: dict[str, Bullet] = {}
        # Bullet ids by their content's dedup key, so that a check is one lookup, not a scan.
        self._by_key: dict[str, set[str]] = {}
        for bullet in playbook.bullets:
            self.put(bullet)
        self.removed: dict[int, str] = {}
        self.next_id = playbook.next_id
        self.repairs: list[tuple[str, str]] = []

    def repair(self, code: str, note: str) -> None:
        self.repairs.append((code, note))

    def text(self, op: Mapping[str, Any]) -> str:
        """The operation's lesson text, made whole (:mod:`combee.methods.ace.lesson_text`)."""
        text, repairs = lesson_text(_content(op))
        for code, note in repairs:
            self.repair(code, note)
        return text

    def find(self, value: Any, name: str = "bullet_id") -> Bullet | None:
        """The bullet ``value`` names, None when it names no bullet that ever existed.

        Raises :class:`_Rejected` for a value that is no id at all, or for a bullet that an
        earlier operation of this update removed.
        """
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str) or not value.strip():
            raise _Rejected("bad_bullet_id", f"{name} must be a non-empty string")
        if value in self.bullets:
            return self.bullets[value]
        text = value.strip().strip("[]").strip().casefold()
        match = _ID_RE.search(text)
        number = _NUMBER_RE.search(text)
        wanted = int(match[2]) if match else int(number[0]) if number else None
        slug = match[1] if match else None
        if wanted is None:
            return None
        removed = self.removed.get(wanted)
        if removed is not None and slug in (None, removed.split("-")[0]):
            raise _Rejected("removed_bullet", f"unknown bullet {removed}")
        for bullet in self.bullets.values():
            # Numbers are global, but a slug that disagrees may mean another lesson: no guess.
            if bullet.number == wanted and slug in (None, bullet.id.split("-")[0]):
                self.repair("bullet_id_format", f"{name} {value!r} read as {bullet.id}")
                return bullet
        return None

    def check_unique(self, content: str, ignore: Iterable[str] = ()) -> None:
        same = self._by_key.get(_dedup_key(content), set()) - set(ignore)
        if same:
            raise _Rejected("duplicate", f"content duplicates bullet {min(same)}")

    def put(self, bullet: Bullet) -> None:
        """Adds a bullet, or replaces the bullet of the same id."""
        old = self.bullets.get(bullet.id)
        if old is not None:
            self._by_key[_dedup_key(old.content)].discard(old.id)
        self.bullets[bullet.id] = bullet
        self._by_key.setdefault(_dedup_key(bullet.content), set()).add(bullet.id)

    def create(self, section: Section, content: str, helpful: int = 0, harmful: int = 0) -> str:
        bullet_id = f"{section.slug}-{self.next_id:05d}"
        self.next_id += 1
        self.put(Bullet(bullet_id, section.key, content, helpful, harmful))
        return bullet_id

    def remove(self, bullet: Bullet) -> None:
        del self.bullets[bullet.id]
        self._by_key[_dedup_key(bullet.content)].discard(bullet.id)
        self.removed[bullet.number] = bullet.id

    def playbook(self) -> Playbook:
        return self.base.with_bullets(self.bullets.values(), next_id=self.next_id)

    def apply(self, op: Any) -> dict[str, Any]:
        self.repairs = []
        if not isinstance(op, Mapping):
            raise _Rejected("not_an_object", "operation is not an object")
        kind, how = _kind(op)
        if how is not None:
            self.repair(how, f"type {op.get('type')!r} read as {kind}")
        if kind == "ADD":
            if op.get("bullet_id") is not None or op.get("bullet_ids") is not None:
                self.repair("stray_bullet_id", "an ADD names no bullet; its bullet id is ignored")
            return self._add(op, self._section(op))
        if kind == "UPDATE":
            return self._update(op)
        if kind == "MERGE":
            return self._merge(op)
        if kind == "DELETE":
            bullet = self.find(op.get("bullet_id"))
            if bullet is None:
                raise _Rejected("unknown_bullet", f"unknown bullet {op.get('bullet_id')}")
            self.remove(bullet)
            return {"type": "DELETE", "bullet_id": bullet.id}
        allowed = ", ".join(OP_TYPES)
        raise _Rejected("unknown_type", f"unknown operation type {kind!r}; use one of {allowed}")

    def _section(self, op: Mapping[str, Any], fallback: Section | None = None) -> Section:
        name = op.get("section")
        section = self.base.section(name) if isinstance(name, str) else None
        if section is not None:
            return section
        if fallback is not None:
            return fallback
        catch_all = self.base.catch_all
        code = "missing_section" if name is None else "unknown_section"
        self.repair(code, f"section {name!r} is not a section; filed under {catch_all.key!r}")
        return catch_all

    def _add(self, op: Mapping[str, Any], section: Section) -> dict[str, Any]:
        content = self.text(op)
        self.check_unique(content)
        repeated = self._repeated(content)
        if repeated is not None:
            return repeated
        new_id = self.create(section, content)
        return {"type": "ADD", "section": section.key, "content": content, "new_id": new_id}

    def _repeated(self, content: str) -> dict[str, Any] | None:
        """Folds a lesson that repeats a bullet into it (the text with more specifics, or
        the longer, stays); None when it repeats none."""
        if self.near is None or not self.bullets:
            return None
        bullets = list(self.bullets.values())
        found = self.near.closest(content, [b.content for b in bullets])
        if found is None:
            return None
        old, similarity = bullets[found[0]], found[1]
        self.folded += 1
        if not keeps_more(content, old.content):
            raise _Rejected(
                "near_duplicate", f"repeats bullet {old.id} (similarity {similarity:.2f})"
            )
        self.repair("near_duplicate", f"repeats {old.id} ({similarity:.2f}); updates it")
        self.put(Bullet(old.id, old.section, content, old.helpful, old.harmful))
        return {"type": "UPDATE", "bullet_id": old.id, "content": content}

    def _as_add(self, op: Mapping[str, Any], code: str, named: Any) -> dict[str, Any]:
        """An UPDATE or MERGE of bullets that never existed: its text becomes a new bullet (in
        the section its id's slug names, when it names one)."""
        self.text(op)
        slug = _ID_RE.search(named.casefold()) if isinstance(named, str) else None
        section = self._section(op, fallback=self.base.by_slug(slug[1]) if slug else None)
        self.repair(code, f"no bullet {named!r}; the text is added as a new bullet")
        return self._add(op, section)

    def _update(self, op: Mapping[str, Any]) -> dict[str, Any]:
        old = self.find(op.get("bullet_id"))
        if old is None:
            return self._as_add(op, "update_to_add", op.get("bullet_id"))
        content = self.text(op)
        self._check_changes(old, content)
        self.check_unique(content, ignore=[old.id])
        self.put(Bullet(old.id, old.section, content, old.helpful, old.harmful))
        return {"type": "UPDATE", "bullet_id": old.id, "content": content}

    def _check_changes(self, old: Bullet, content: str) -> None:
        """An UPDATE that restates its bullet (the same text, or the same lesson in other
        words with no specific the bullet lacks) teaches nothing: it is dropped, not counted as
        applied."""
        if _dedup_key(content) == _dedup_key(old.content):
            raise _Rejected("restated", f"restates bullet {old.id} as it is")
        if self.near is None or keeps_more(content, old.content):
            return
        if self.near.closest(content, [old.content]) is not None:
            raise _Rejected("restated", f"restates bullet {old.id} in other words")

    def _merge(self, op: Mapping[str, Any]) -> dict[str, Any]:
        raw = op.get("bullet_ids")
        if isinstance(raw, str):
            raw = [raw]
        if not isinstance(raw, list):
            raise _Rejected("bad_bullet_id", "bullet_ids must be a list of bullet ids")
        found: dict[str, Bullet] = {}
        for value in raw:
            try:
                bullet = self.find(value, "each of bullet_ids")
            except _Rejected as why:
                if why.code != "bad_bullet_id":
                    raise
                bullet = None
            if bullet is not None:
                found.setdefault(bullet.id, bullet)
        merged = list(found.values())
        if len(merged) < len(raw):
            self.repair("merge_partial", f"MERGE of {raw!r} keeps the bullets that exist")
        if not merged:
            return self._as_add(op, "merge_to_add", raw[0] if raw else None)
        if len(merged) == 1:
            self.repair("merge_to_update", f"MERGE of one bullet updates {merged[0].id}")
            return self._update({**op, "bullet_id": merged[0].id})
        ids = [b.id for b in merged]
        content = self.text(op)
        self.check_unique(content, ignore=ids)
        for bullet in merged:
            self.remove(bullet)
        section = self.base.section(merged[0].section)
        assert section is not None
        new_id = self.create(
            section,
            content,
            helpful=sum(b.helpful for b in merged),
            harmful=sum(b.harmful for b in merged),
        )
        return {"type": "MERGE", "bullet_ids": ids, "content": content, "new_id": new_id}


def apply_operations(
    playbook: Playbook,
    operations: Iterable[Any],
    *,
    token_budget: int | None,
    quiet: bool = False,
    near_duplicates: NearDuplicates | None = None,
) -> ApplyResult:
    """Apply ``operations`` in order to a copy of ``playbook``, then enforce ``token_budget``.

    Never raises for a bad operation: it is repaired (counted in ``repaired``) or lands in
    ``rejected`` with the reason (counted in ``dropped``). Each is logged unless ``quiet`` (a
    trial application that is not the update itself). With ``near_duplicates``, an ADD that
    repeats a bullet in other words updates it or is dropped (counted in ``near_duplicates``).
    """
    say = logger.debug if quiet else logger.info
    operations = list(operations)
    if near_duplicates is not None:  # one batch of embeddings instead of one per lesson
        near_duplicates.prepare(lesson_texts(operations), [b.content for b in playbook.bullets])
    draft = _Draft(playbook, near_duplicates)
    applied: list[dict[str, Any]] = []
    rejected: list[tuple[Any, str]] = []
    dropped: Counter[str] = Counter()
    repaired: Counter[str] = Counter()
    for op in operations:
        try:
            applied.append(draft.apply(op))
        except _Rejected as why:
            say("rejected playbook operation %r: %s", op, why)
            rejected.append((op, str(why)))
            dropped[why.code] += 1
            continue
        if draft.repairs:
            notes = "; ".join(note for _, note in draft.repairs)
            say("repaired playbook operation %r: %s", op, notes)
            repaired.update({code for code, _ in draft.repairs})
    result = draft.playbook()
    evicted: list[str] = []
    if token_budget is not None:
        result, evicted = evict_to_budget(result, token_budget)
        if evicted:
            say(
                "evicted %d bullet(s) to meet the %d-token budget: %s",
                len(evicted),
                token_budget,
                ", ".join(evicted),
            )
    return ApplyResult(
        playbook=result,
        applied=applied,
        rejected=rejected,
        evicted=evicted,
        dropped=dict(dropped),
        repaired=dict(repaired),
        near_duplicates=draft.folded,
    )
