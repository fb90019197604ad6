"""``diff_playbooks``: which bullets two ACE playbooks share, and how they differ.

Bullets are paired by id only where the two playbooks number their bullets alike (see
:mod:`combee.report.lineage`); otherwise by content, since two runs give the same id to
unrelated lessons."""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from combee.errors import ConfigError
from combee.methods.ace.playbook import Bullet, Playbook, normalize_content
from combee.report.lineage import shared_numbering

FIELDS = ("section", "content", "helpful", "harmful")
Pairing = Literal["id", "content"]
PAIRINGS: tuple[Pairing, ...] = ("id", "content")


@dataclass(frozen=True)
class BulletChange:
    """One lesson in both playbooks (the same id, or the same content) whose section, content
    or counters differ."""

    before: Bullet
    after: Bullet

    @property
    def id(self) -> str:
        """A's id (B's is ``after.id``: another when paired by content)."""
        return self.before.id

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(f for f in FIELDS if getattr(self.before, f) != getattr(self.after, f))


@dataclass
class PlaybookDiff:
    """``only_a``/``only_b``: bullets in one playbook only; ``changed``: paired bullets that
    differ; ``same``: how many paired bullets are identical. ``paired_by``: ``id`` or
    ``content``, and ``why`` (the reason, or what the caller chose)."""

    a: Playbook
    b: Playbook
    paired_by: Pairing = "id"
    why: str = ""
    only_a: list[Bullet] = field(default_factory=list)
    only_b: list[Bullet] = field(default_factory=list)
    changed: list[BulletChange] = field(default_factory=list)
    same: int = 0

    @property
    def identical(self) -> bool:
        return not (self.only_a or self.only_b or self.changed)

    def to_dict(self) -> dict[str, Any]:
        def bullet(b: Bullet) -> dict[str, Any]:
            return {
                "id": b.id,
                "section": b.section,
                "content": b.content,
                "helpful": b.helpful,
                "harmful": b.harmful,
            }

        return {
            "bullets": {"a": len(self.a), "b": len(self.b)},
            "paired_by": self.paired_by,
            "why": self.why,
            "only_a": [bullet(b) for b in self.only_a],
            "only_b": [bullet(b) for b in self.only_b],
            "changed": [
                {"id": c.id, "fields": list(c.fields), "a": bullet(c.before), "b": bullet(c.after)}
                for c in self.changed
            ],
            "same": self.same,
        }


def read_playbook(path: str | os.PathLike[str], setting: str) -> Playbook:
    """The playbook in ``path``; a file that cannot be read or parsed is a ConfigError naming
    ``setting`` and the file (and the line that does not parse)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "it is not UTF-8 text"
        raise ConfigError(f"({file}) cannot be read: {reason}", setting=setting) from None
    try:
        return Playbook.parse(text)
    except ValueError as error:
        raise ConfigError(f"({file}) is not an ACE playbook: {error}", setting=setting) from None


def diff_playbooks(
    a: str | os.PathLike[str] | Playbook,
    b: str | os.PathLike[str] | Playbook,
    *,
    by: Pairing | None = None,
) -> PlaybookDiff:
    """Compare two playbooks (files or :class:`Playbook` objects) bullet by bullet. ``by``:
    ``id`` or ``content``; None pairs by id when both are files numbered alike (versions of one
    run, or a run and the playbook it started from), else by content."""
    if by is not None and by not in PAIRINGS:
        raise ConfigError(f"must be one of {', '.join(PAIRINGS)} (got {by!r})", setting="by")
    first = a if isinstance(a, Playbook) else read_playbook(a, "a")
    second = b if isinstance(b, Playbook) else read_playbook(b, "b")
    if by is not None:
        why = "as asked"
    else:
        if isinstance(a, Playbook) or isinstance(b, Playbook):
            shared = None
        else:
            shared = shared_numbering(Path(a), Path(b))
        by = "id" if shared else "content"
        why = shared or "nothing says the two number their bullets alike"
    result = PlaybookDiff(a=first, b=second, paired_by=by, why=why)
    pairs = _by_id(first, second) if by == "id" else _by_content(first, second)
    paired_b = {id(after) for _, after in pairs if after is not None}
    for before, after in pairs:
        if after is None:
            result.only_a.append(before)
        else:
            change = BulletChange(before, after)
            if change.fields:
                result.changed.append(change)
            else:
                result.same += 1
    result.only_b = [bullet for bullet in second.bullets if id(bullet) not in paired_b]
    return result


def _by_id(a: Playbook, b: Playbook) -> list[tuple[Bullet, Bullet | None]]:
    return [(bullet, b.get(bullet.id)) for bullet in a.bullets]


def _by_content(a: Playbook, b: Playbook) -> list[tuple[Bullet, Bullet | None]]:
    """Each of A's bullets with B's first unpaired bullet of the same text (case and spacing
    aside)."""
    waiting: defaultdict[str, list[Bullet]] = defaultdict(list)
    for bullet in b.bullets:
        waiting[_key(bullet)].append(bullet)
    pairs: list[tuple[Bullet, Bullet | None]] = []
    for bullet in a.bullets:
        same_text = waiting[_key(bullet)]
        pairs.append((bullet, same_text.pop(0) if same_text else None))
    return pairs


def _key(bullet: Bullet) -> str:
    return normalize_content(bullet.content).casefold()
