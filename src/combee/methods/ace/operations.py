"""Curator delta operations and their atomic application to a playbook.

Operations are plain JSON objects, as the curator writes them:

- ``{"type": "ADD", "section": "strategies", "content": "..."}``
- ``{"type": "UPDATE", "bullet_id": "str-00003", "content": "..."}`` (keeps the counters)
- ``{"type": "MERGE", "bullet_ids": ["str-00003", "mis-00007"], "content": "..."}`` (one new
  bullet in the first bullet's section, counters summed, the merged bullets removed)
- ``{"type": "DELETE", "bullet_id": "str-00003"}``

Each operation is checked against the playbook as the earlier operations left it. An invalid one
is rejected with a reason and logged; the rest still apply. The input playbook never changes.

Token budget: after the operations, while the playbook's :meth:`~Playbook.token_count` exceeds the
budget, the bullet with the lowest ``helpful - harmful`` is evicted, the oldest (lowest id number)
first among equals. Untested bullets (0/0) therefore go before proven ones, and stale untested
bullets before fresh ones. Only when no bullet is left can the (header-only) playbook stay above a
budget smaller than its headers.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from combee.methods.ace.playbook import Bullet, Playbook, count_tokens, normalize_content

logger = logging.getLogger(__name__)

OP_TYPES: tuple[str, ...] = ("ADD", "UPDATE", "MERGE", "DELETE")


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


class _Rejected(Exception):
    pass


def _dedup_key(text: str) -> str:
    return normalize_content(text).casefold()


def _bullet_id(value: Any, name: str = "bullet_id") -> str:
    if not isinstance(value, str) or not value.strip():
        raise _Rejected(f"{name} must be a non-empty string")
    # Small models often copy the brackets of the rendered form.
    return value.strip().strip("[]").strip()


def _content(op: Mapping[str, Any]) -> str:
    value = op.get("content")
    if not isinstance(value, str):
        raise _Rejected("content must be a string")
    text = normalize_content(value)
    if not text:
        raise _Rejected("content is empty")
    return text


class _Draft:
    """A mutable working copy of a playbook; ``bullets`` keeps insertion order."""

    def __init__(self, playbook: Playbook) -> None:
        self.base = playbook
        self.bullets: dict[str, Bullet] = {b.id: b for b in playbook.bullets}
        self.next_id = playbook.next_id

    def existing(self, bullet_id: str) -> Bullet:
        bullet = self.bullets.get(bullet_id)
        if bullet is None:
            raise _Rejected(f"unknown bullet {bullet_id}")
        return bullet

    def check_unique(self, content: str, ignore: Iterable[str] = ()) -> None:
        key = _dedup_key(content)
        skip = set(ignore)
        for bullet in self.bullets.values():
            if bullet.id not in skip and _dedup_key(bullet.content) == key:
                raise _Rejected(f"content duplicates bullet {bullet.id}")

    def create(self, section: str, content: str, helpful: int = 0, harmful: int = 0) -> str:
        found = self.base.section(section)
        assert found is not None
        bullet_id = f"{found.slug}-{self.next_id:05d}"
        self.next_id += 1
        self.bullets[bullet_id] = Bullet(bullet_id, found.key, content, helpful, harmful)
        return bullet_id

    def playbook(self) -> Playbook:
        return self.base.with_bullets(self.bullets.values(), next_id=self.next_id)

    def apply(self, op: Any) -> dict[str, Any]:
        if not isinstance(op, Mapping):
            raise _Rejected("operation is not an object")
        kind = op.get("type")
        kind = kind.strip().upper() if isinstance(kind, str) else kind
        if kind == "ADD":
            return self._add(op)
        if kind == "UPDATE":
            return self._update(op)
        if kind == "MERGE":
            return self._merge(op)
        if kind == "DELETE":
            bullet_id = self.existing(_bullet_id(op.get("bullet_id"))).id
            del self.bullets[bullet_id]
            return {"type": "DELETE", "bullet_id": bullet_id}
        raise _Rejected(f"unknown operation type {kind!r}; use one of {', '.join(OP_TYPES)}")

    def _add(self, op: Mapping[str, Any]) -> dict[str, Any]:
        name = op.get("section")
        section = self.base.section(name) if isinstance(name, str) else None
        if section is None:
            allowed = ", ".join(s.key for s in self.base.sections)
            raise _Rejected(f"unknown section {name!r}; allowed: {allowed}")
        content = _content(op)
        self.check_unique(content)
        new_id = self.create(section.key, content)
        return {"type": "ADD", "section": section.key, "content": content, "new_id": new_id}

    def _update(self, op: Mapping[str, Any]) -> dict[str, Any]:
        old = self.existing(_bullet_id(op.get("bullet_id")))
        content = _content(op)
        self.check_unique(content, ignore=[old.id])
        self.bullets[old.id] = Bullet(old.id, old.section, content, old.helpful, old.harmful)
        return {"type": "UPDATE", "bullet_id": old.id, "content": content}

    def _merge(self, op: Mapping[str, Any]) -> dict[str, Any]:
        raw = op.get("bullet_ids")
        if not isinstance(raw, list):
            raise _Rejected("bullet_ids must be a list of bullet ids")
        ids = list(dict.fromkeys(_bullet_id(v, "each of bullet_ids") for v in raw))
        if len(ids) < 2:
            raise _Rejected("MERGE needs at least two distinct bullet_ids")
        merged = [self.existing(i) for i in ids]
        content = _content(op)
        self.check_unique(content, ignore=ids)
        for bullet in merged:
            del self.bullets[bullet.id]
        new_id = self.create(
            merged[0].section,
            content,
            helpful=sum(b.helpful for b in merged),
            harmful=sum(b.harmful for b in merged),
        )
        return {"type": "MERGE", "bullet_ids": ids, "content": content, "new_id": new_id}


def _evict(playbook: Playbook, token_budget: int) -> tuple[Playbook, list[str]]:
    total = playbook.token_count()
    if total <= token_budget:
        return playbook, []
    evicted: set[str] = set()
    order: list[str] = []
    # The token estimate is additive over lines, so a bullet's own line is exactly what its
    # removal saves.
    for bullet in sorted(playbook.bullets, key=lambda b: (b.net, b.number)):
        if total <= token_budget:
            break
        total -= count_tokens(bullet.render())
        evicted.add(bullet.id)
        order.append(bullet.id)
    kept = playbook.with_bullets(b for b in playbook.bullets if b.id not in evicted)
    return kept, order


def apply_operations(
    playbook: Playbook, operations: Iterable[Any], *, token_budget: int | None
) -> ApplyResult:
    """Apply ``operations`` in order to a copy of ``playbook``, then enforce ``token_budget``.

    Never raises for a bad operation: it lands in ``rejected`` with the reason.
    """
    draft = _Draft(playbook)
    applied: list[dict[str, Any]] = []
    rejected: list[tuple[Any, str]] = []
    for op in operations:
        try:
            applied.append(draft.apply(op))
        except _Rejected as why:
            logger.info("rejected playbook operation %r: %s", op, why)
            rejected.append((op, str(why)))
    result = draft.playbook()
    evicted: list[str] = []
    if token_budget is not None:
        result, evicted = _evict(result, token_budget)
        if evicted:
            logger.info(
                "evicted %d bullet(s) to meet the %d-token budget: %s",
                len(evicted),
                token_budget,
                ", ".join(evicted),
            )
    return ApplyResult(playbook=result, applied=applied, rejected=rejected, evicted=evicted)
