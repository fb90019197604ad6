"""``diff_playbooks``: which bullets two ACE playbooks share, and how they differ."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from combee.errors import ConfigError
from combee.methods.ace.playbook import Bullet, Playbook

FIELDS = ("section", "content", "helpful", "harmful")


@dataclass(frozen=True)
class BulletChange:
    """One bullet id in both playbooks whose section, content or counters differ."""

    before: Bullet
    after: Bullet

    @property
    def id(self) -> str:
        return self.before.id

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(f for f in FIELDS if getattr(self.before, f) != getattr(self.after, f))


@dataclass
class PlaybookDiff:
    """``only_a``/``only_b``: bullets whose id is in one playbook only; ``changed``: same id,
    different section, content or counters; ``same``: how many ids are identical in both."""

    a: Playbook
    b: Playbook
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
    a: str | os.PathLike[str] | Playbook, b: str | os.PathLike[str] | Playbook
) -> PlaybookDiff:
    """Compare two playbooks (files or :class:`Playbook` objects) bullet by bullet, by id."""
    first = a if isinstance(a, Playbook) else read_playbook(a, "a")
    second = b if isinstance(b, Playbook) else read_playbook(b, "b")
    result = PlaybookDiff(a=first, b=second)
    for bullet in first.bullets:
        other = second.get(bullet.id)
        if other is None:
            result.only_a.append(bullet)
        elif other == bullet:
            result.same += 1
        else:
            result.changed.append(BulletChange(bullet, other))
    result.only_b = [bullet for bullet in second.bullets if bullet.id not in first]
    return result
