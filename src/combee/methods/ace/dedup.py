"""Near-duplicate lessons: an ADD that repeats an existing bullet in other words.

ACE's grow-and-refine step: before a new bullet lands, its embedding is compared with the
playbook's bullets; at or above a cosine similarity threshold, and when neither text names a
specific the other lacks (a number, a name, an identifier, a quoted value), it is the same
lesson. The text with more specifics (or, as many, the longer) is kept in the existing bullet,
with its counters, and no new bullet is made. Large batches otherwise fill the playbook with
paraphrases. The specifics check matters: an embedding barely tells "the Vouthul convention:
..." from "the Hoquoth convention: ..." with the same words, yet they are two lessons.

Off unless a :class:`NearDuplicates` is given; :func:`default_near_duplicates` makes one on the
bundled ``all-MiniLM-L6-v2`` when the ``embed`` extra is installed.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Sequence
from types import ModuleType
from typing import Any

from combee.embedding.sentences import (
    EMBED_PACKAGES,
    Embedder,
    default_embedder,
    missing_packages,
    preload_default_embedder,
)
from combee.errors import ConfigError

DEFAULT_THRESHOLD = 0.86
"""Cosine similarity (all-MiniLM-L6-v2) at which two lessons with the same specifics count as
one: close paraphrases score about 0.87-0.98, related but different advice lower."""
_SPECIFIC = re.compile(
    r"""(?x)
    "[^"]+" | '[^']+' | `[^`]+`          # quoted values
    | \b[\w+]*\d[\w.:/+-]*                 # anything with a digit: 252, 1.08, UTC+2, v2
    | \b\w+(?:[_.-]\w+)+                   # identifiers: dry_run, kebab-case, DD.MM.YYYY
    | (?<=[\w,;:)][ ])[A-Z]\w*             # a capital inside a sentence: names, SI, ISO
    """
)
ENV_SWITCH = "COMBEE_DEDUP"
"""Set to ``0`` (or ``off``, ``false``, ``no``) to make the default off."""
_OFF = {"0", "off", "false", "no"}
_MAX_CACHED = 4096


class NearDuplicates:
    """Finds the bullet a new lesson repeats, by cosine similarity of embeddings.

    Only texts whose specifics nest are compared, so a lesson that names what no bullet names
    is never embedded. Vectors are cached by text (unit length, as numpy rows), so each bullet
    is embedded once per run (up to a few thousand texts; then the cache starts again);
    :meth:`prepare` embeds what an update's comparisons will need in one batch. Comparing a
    lesson with its candidates is one matrix product.
    """

    def __init__(self, embedder: Embedder, *, threshold: float = DEFAULT_THRESHOLD) -> None:
        if not (isinstance(threshold, int | float) and 0.0 < threshold <= 1.0):
            raise ConfigError(
                f"must be a similarity in (0, 1], got {threshold!r}", setting="dedup_threshold"
            )
        self.embedder = embedder
        self.threshold = float(threshold)
        self._vectors: dict[str, Any] = {}
        self._np: Any = _numpy()

    def prepare(self, lessons: Iterable[str], bullets: Iterable[str]) -> None:
        """Embed, in one batch, the texts that comparing ``lessons`` (in order, each with the
        bullets and the lessons before it) will need."""
        pool = _SpecificsIndex(bullets)
        needed: dict[str, None] = {}
        for lesson in lessons:
            partners = pool.nesting(lesson)
            if partners:
                needed[lesson] = None
                needed.update(dict.fromkeys(partners))
            pool.add(lesson)
        self._embed(list(needed))

    def closest(self, text: str, candidates: Sequence[str]) -> tuple[int, float] | None:
        """The index of the candidate ``text`` repeats and their similarity: the most similar
        one whose specifics nest with those of ``text``, if it reaches the threshold."""
        mine = specifics(text)
        nesting = [
            i for i, candidate in enumerate(candidates) if _nested(mine, specifics(candidate))
        ]
        if not nesting:
            return None
        self._embed([text, *(candidates[i] for i in nesting)])
        rows = self._np.stack([self._vectors[candidates[i]] for i in nesting])
        scores = rows @ self._vectors[text]
        best = int(scores.argmax())  # the first of equals, as candidates are ordered
        if scores[best] < self.threshold:
            return None
        return nesting[best], float(scores[best])

    def _embed(self, texts: Sequence[str]) -> None:
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if not missing:
            return
        if len(self._vectors) + len(missing) > _MAX_CACHED:
            self._vectors.clear()
            missing = list(dict.fromkeys(texts))
        np = self._np
        vectors = np.asarray(self.embedder.embed(missing), dtype=np.float32)
        if vectors.shape[0] != len(missing):
            raise ValueError(
                f"the embedder returned {vectors.shape[0]} vectors for {len(missing)} texts"
            )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
        for text, vector in zip(missing, vectors, strict=True):
            self._vectors[text] = vector


class _SpecificsIndex:
    """Texts by the specifics they name, to find those whose specifics nest with a new
    text's without comparing it with every text."""

    def __init__(self, texts: Iterable[str] = ()) -> None:
        self._plain: list[str] = []  # texts that name no specific: they nest with any
        self._by_specific: dict[str, list[str]] = {}
        self._all: list[str] = []
        for text in texts:
            self.add(text)

    def add(self, text: str) -> None:
        self._all.append(text)
        found = specifics(text)
        if not found:
            self._plain.append(text)
        for specific in found:
            self._by_specific.setdefault(specific, []).append(text)

    def nesting(self, text: str) -> list[str]:
        mine = specifics(text)
        if not mine:
            return list(self._all)
        sharing = dict.fromkeys(t for s in mine for t in self._by_specific.get(s, ()))
        return [*self._plain, *(t for t in sharing if _nested(mine, specifics(t)))]


@functools.lru_cache(maxsize=_MAX_CACHED)
def specifics(text: str) -> frozenset[str]:
    """The numbers, names, identifiers and quoted values ``text`` names (case-folded)."""
    return frozenset(match.casefold().strip(".,;:") for match in _SPECIFIC.findall(text))


def keeps_more(new: str, old: str) -> bool:
    """Whether ``new`` is the better text of two repeats: whole sentences over a fragment,
    then more specifics, then longer."""
    return _rank(new) > _rank(old)


def _rank(text: str) -> tuple[bool, int, int]:
    whole = text[:1].isupper() and text.rstrip().endswith((".", "!", "?", ")", '"'))
    return whole, len(specifics(text)), len(text)


def _nested(a: frozenset[str], b: frozenset[str]) -> bool:
    return a <= b or b <= a


def _numpy() -> ModuleType:
    try:
        import numpy
    except ImportError:
        raise ConfigError(
            "near-duplicate folding needs numpy, which is not installed; "
            "install it with pip install 'combee[embed]'",
            setting="dedup",
        ) from None
    return numpy


def default_near_duplicates(enabled: bool | None = None) -> NearDuplicates | None:
    """``enabled`` None: on when the ``embed`` extra is installed, unless the environment
    sets ``COMBEE_DEDUP=0``; True: on, or a ConfigError naming what to install; False: off.

    The embedding model starts loading in the background at once, so its load overlaps the
    first rollouts instead of holding up the first update."""
    if enabled is None and os.environ.get(ENV_SWITCH, "").strip().lower() in _OFF:
        return None
    if enabled is False:
        return None
    missing = missing_packages(EMBED_PACKAGES)
    if missing:
        if enabled:
            raise ConfigError(
                f"needs {', '.join(missing)}, which is not installed; "
                "install it with pip install 'combee[embed]'",
                setting="dedup",
            )
        return None
    preload_default_embedder()
    return NearDuplicates(default_embedder())
