"""The ACE playbook: sections of numbered bullets with helpful/harmful counters.

Rendered form (what the generator reads, and what :meth:`Playbook.parse` reads back)::

    ## Strategies and rules
    [str-00001] helpful=2 harmful=0 :: Convert "5 million" to 5000000 before dividing.

    ## Formulas and computation
    [fml-00002] helpful=0 harmful=1 :: ...

Every section header is always rendered, in a fixed order, even when the section is empty, so the
generator and the curator always see the full set of sections. Bullet ids are ``<slug>-<number>``
with a five-digit, globally increasing number; the slug names the section the bullet was created in.
Playbooks are immutable: every change returns a new playbook.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
_HEADER_RE = re.compile(r"^## (?P<title>.+?)\s*$")
_BULLET_RE = re.compile(
    r"^\[(?P<id>[a-z]+-(?P<num>\d{5,}))\] helpful=(?P<helpful>\d+) harmful=(?P<harmful>\d+)"
    r" :: (?P<content>.*\S)\s*$"
)
_RENDERED_PREFIX_RE = re.compile(r"(\s*\[[a-z]+-\d{5,}\]\s*(helpful=\d+\s+harmful=\d+\s*)?::)+\s*")
_ID_RE = re.compile(r"[a-z]+-\d{5,}")
_SPACE_RE = re.compile(r"\s+")
_KEY_RE = re.compile(r"[^a-z0-9]+")


def count_tokens(text: str) -> int:
    """Approximate the number of LLM tokens in ``text`` without a network tokenizer.

    Counts runs of word characters and single punctuation characters. On English prose this lands
    within about 15% of BPE tokenizers (long or rare words are undercounted, punctuation-heavy text
    overcounted); it is deterministic and additive over lines, which is what budgeting needs.
    """
    return len(_TOKEN_RE.findall(text))


def normalize_content(text: str) -> str:
    """Bullet text on one line: runs of whitespace (newlines included) become one space."""
    return _SPACE_RE.sub(" ", text).strip()


def without_rendered_prefix(text: str) -> str:
    """``text`` without a leading bullet rendering (``[mis-00004] helpful=0 harmful=5 ::``),
    which a model that copied the playbook puts before its lesson; unchanged when nothing
    would be left."""
    copied = _RENDERED_PREFIX_RE.match(text)
    rest = text[copied.end() :].strip() if copied else ""
    return rest or text


def _key(text: str) -> str:
    return _KEY_RE.sub(" ", text.lower().replace("&", " and ")).strip()


@dataclass(frozen=True)
class Section:
    """One playbook section: ``key`` is what operations name, ``title`` is the rendered header,
    ``slug`` prefixes the ids of bullets created in it."""

    key: str
    title: str
    slug: str


CATCH_ALL_KEY = "other"
"""The key of the section that takes a lesson whose section is missing or unknown."""

DEFAULT_SECTIONS: tuple[Section, ...] = (
    Section("strategies", "Strategies and rules", "str"),
    Section("formulas", "Formulas and computation", "fml"),
    Section("mistakes", "Common mistakes", "mis"),
    Section("checks", "Verification checks", "chk"),
    Section("domain", "Domain knowledge", "dom"),
    Section(CATCH_ALL_KEY, "Other", "oth"),
)


@dataclass(frozen=True)
class Bullet:
    """One lesson in the playbook."""

    id: str
    section: str
    """The key of the section holding the bullet."""
    content: str
    helpful: int = 0
    harmful: int = 0

    @property
    def number(self) -> int:
        """The numeric part of the id (ids are globally increasing by creation)."""
        return int(self.id.rsplit("-", 1)[1])

    @property
    def net(self) -> int:
        return self.helpful - self.harmful

    def render(self) -> str:
        return f"[{self.id}] helpful={self.helpful} harmful={self.harmful} :: {self.content}"


@dataclass(frozen=True)
class Playbook:
    """An immutable ACE playbook.

    ``bullets`` is kept in render order: grouped by section in ``sections`` order, insertion order
    within a section (the constructor sorts them stably). ``next_id`` is the number the next
    created bullet gets (never reused after a delete).
    """

    bullets: tuple[Bullet, ...] = ()
    next_id: int = 1
    sections: tuple[Section, ...] = DEFAULT_SECTIONS

    def __post_init__(self) -> None:
        seen: set[str] = set()
        keys = {s.key for s in self.sections}
        for bullet in self.bullets:
            if bullet.id in seen:
                raise ValueError(f"duplicate bullet id {bullet.id}")
            if bullet.section not in keys:
                raise ValueError(f"bullet {bullet.id} is in unknown section {bullet.section!r}")
            if not _ID_RE.fullmatch(bullet.id):
                raise ValueError(f"bullet id {bullet.id!r} is not <slug>-<5 digits>")
            if not bullet.content or bullet.content != normalize_content(bullet.content):
                raise ValueError(f"bullet {bullet.id} content must be one non-empty line")
            if bullet.helpful < 0 or bullet.harmful < 0:
                raise ValueError(f"bullet {bullet.id} has a negative counter")
            seen.add(bullet.id)
        if self.bullets and self.next_id <= max(b.number for b in self.bullets):
            raise ValueError("next_id must exceed every bullet number")
        rank = {s.key: i for i, s in enumerate(self.sections)}
        ordered = tuple(sorted(self.bullets, key=lambda b: rank[b.section]))
        if ordered != self.bullets:
            object.__setattr__(self, "bullets", ordered)

    def __len__(self) -> int:
        return len(self.bullets)

    def __contains__(self, bullet_id: object) -> bool:
        return bullet_id in self._by_id

    @cached_property
    def _by_id(self) -> dict[str, Bullet]:
        return {b.id: b for b in self.bullets}

    @property
    def bullet_ids(self) -> list[str]:
        return [b.id for b in self.bullets]

    def get(self, bullet_id: str) -> Bullet | None:
        return self._by_id.get(bullet_id)

    def section(self, name: str) -> Section | None:
        """The section called ``name`` by key, title or slug, ignoring case and punctuation."""
        wanted = _key(name)
        for section in self.sections:
            if wanted in (_key(section.key), _key(section.title), _key(section.slug)):
                return section
        return None

    @property
    def catch_all(self) -> Section:
        """Where a lesson goes when its section is missing or unknown: the section keyed
        ``other`` (:data:`CATCH_ALL_KEY`), else the last section."""
        for section in self.sections:
            if section.key == CATCH_ALL_KEY:
                return section
        return self.sections[-1]

    def by_slug(self, slug: str) -> Section | None:
        """The section whose bullet ids start with ``slug``."""
        return next((s for s in self.sections if s.slug == slug), None)

    def in_section(self, key: str) -> list[Bullet]:
        return [b for b in self.bullets if b.section == key]

    def with_bullets(self, bullets: Iterable[Bullet], next_id: int | None = None) -> Playbook:
        return replace(
            self, bullets=tuple(bullets), next_id=self.next_id if next_id is None else next_id
        )

    def with_counts(self, helpful: Mapping[str, int], harmful: Mapping[str, int]) -> Playbook:
        """Add ``helpful[id]`` and ``harmful[id]`` to the counters; unknown ids are ignored."""
        return self.with_bullets(
            replace(
                b,
                helpful=b.helpful + helpful.get(b.id, 0),
                harmful=b.harmful + harmful.get(b.id, 0),
            )
            for b in self.bullets
        )

    @cached_property
    def _rendered(self) -> str:
        blocks = []
        for section in self.sections:
            lines = [f"## {section.title}"]
            lines.extend(b.render() for b in self.in_section(section.key))
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks)

    def render(self) -> str:
        """The text form: every section header in order, each followed by its bullets."""
        return self._rendered

    def token_count(self) -> int:
        """Approximate tokens of :meth:`render` (see :func:`count_tokens`)."""
        return count_tokens(self.render())

    @staticmethod
    def parse(text: str, sections: Sequence[Section] = DEFAULT_SECTIONS) -> Playbook:
        """Read a rendered playbook back. Blank lines are ignored; a header may be absent.

        ``next_id`` becomes one past the largest bullet number. Raises ValueError naming the line
        for a line that is neither a known header nor a bullet, a bullet before any header, or a
        repeated id.
        """
        by_title = {s.title: s for s in sections}
        current: Section | None = None
        bullets: list[Bullet] = []
        seen: set[str] = set()
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            header = _HEADER_RE.match(line)
            if header:
                found = by_title.get(header["title"])
                if found is None:
                    raise ValueError(f"line {number}: unknown section {header['title']!r}")
                current = found
                continue
            match = _BULLET_RE.match(line)
            if match is None:
                raise ValueError(f"line {number}: not a section header or a bullet: {line!r}")
            if current is None:
                raise ValueError(f"line {number}: bullet before any section header")
            if match["id"] in seen:
                raise ValueError(f"line {number}: duplicate bullet id {match['id']}")
            seen.add(match["id"])
            bullets.append(
                Bullet(
                    id=match["id"],
                    section=current.key,
                    content=match["content"],
                    helpful=int(match["helpful"]),
                    harmful=int(match["harmful"]),
                )
            )
        next_id = max((b.number for b in bullets), default=0) + 1
        return Playbook(bullets=tuple(bullets), next_id=next_id, sections=tuple(sections))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form that, unlike the rendered text, also keeps ``next_id``."""
        return {
            "next_id": self.next_id,
            "sections": [[s.key, s.title, s.slug] for s in self.sections],
            "bullets": [
                {
                    "id": b.id,
                    "section": b.section,
                    "content": b.content,
                    "helpful": b.helpful,
                    "harmful": b.harmful,
                }
                for b in self.bullets
            ],
        }

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> Playbook:
        sections = tuple(Section(*s) for s in data.get("sections", ())) or DEFAULT_SECTIONS
        bullets = tuple(Bullet(**b) for b in data.get("bullets", ()))
        return Playbook(bullets=bullets, next_id=int(data.get("next_id", 1)), sections=sections)


EMPTY_PLAYBOOK = Playbook()
"""A playbook with the default sections and no bullets."""

__all__ = [
    "CATCH_ALL_KEY",
    "DEFAULT_SECTIONS",
    "EMPTY_PLAYBOOK",
    "Bullet",
    "Playbook",
    "Section",
    "count_tokens",
    "normalize_content",
    "without_rendered_prefix",
]
