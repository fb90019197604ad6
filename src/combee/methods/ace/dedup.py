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

from combee.errors import ConfigError
from combee.strategies.embedding import (
    EMBED_PACKAGES,
    Embedder,
    default_embedder,
    missing_packages,
    preload_default_embedder,
)

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

    Vectors are cached by text (unit length, as numpy rows), so each bullet is embedded once
    per run (up to a few thousand texts; then the cache starts again); :meth:`prepare` embeds
    an update's lessons in one batch before they are compared one by one. Comparing a lesson
    with the playbook is one matrix product; the specifics check runs only on the bullets at or
    above the threshold.
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

    def prepare(self, texts: Iterable[str]) -> None:
        """Embed, in one batch, every text of ``texts`` not embedded yet."""
        self._embed(list(texts))

    def closest(self, text: str, candidates: Sequence[str]) -> tuple[int, float] | None:
        """The index of the candidate ``text`` repeats and their similarity: the most similar
        one at or above the threshold whose specifics nest with those of ``text``; None when
        there is none."""
        if not candidates:
            return None
        self._embed([text, *candidates])
        np = self._np
        rows = np.stack([self._vectors[candidate] for candidate in candidates])
        scores = rows @ self._vectors[text]
        above = np.flatnonzero(scores >= self.threshold)
        if above.size == 0:
            return None
        mine = specifics(text)
        for index in above[np.argsort(-scores[above], kind="stable")]:
            if _nested(mine, specifics(candidates[index])):
                return int(index), float(scores[index])
        return None

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
