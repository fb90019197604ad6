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

import math
import os
import re
import threading
from collections.abc import Sequence

from combee.errors import ConfigError
from combee.strategies.embedding import (
    EMBED_PACKAGES,
    Embedder,
    default_embedder,
    missing_packages,
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

    Vectors are cached by text, so each bullet is embedded once per run (up to a few thousand
    texts; then the cache starts again).
    """

    def __init__(self, embedder: Embedder, *, threshold: float = DEFAULT_THRESHOLD) -> None:
        if not (isinstance(threshold, int | float) and 0.0 < threshold <= 1.0):
            raise ConfigError(
                f"must be a similarity in (0, 1], got {threshold!r}", setting="dedup_threshold"
            )
        self.embedder = embedder
        self.threshold = float(threshold)
        self._vectors: dict[str, list[float]] = {}

    def closest(self, text: str, candidates: Sequence[str]) -> tuple[int, float] | None:
        """The index of the candidate ``text`` repeats and their similarity; None when none
        reaches the threshold with specifics that one of the two texts contains entirely."""
        if not candidates:
            return None
        self._embed([text, *candidates])
        mine, my_specifics = self._vectors[text], specifics(text)
        best, best_score = -1, -math.inf
        for index, candidate in enumerate(candidates):
            score = _cosine(mine, self._vectors[candidate])
            if score > best_score and _nested(my_specifics, specifics(candidate)):
                best, best_score = index, score
        return (best, best_score) if best_score >= self.threshold else None

    def _embed(self, texts: Sequence[str]) -> None:
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if not missing:
            return
        if len(self._vectors) + len(missing) > _MAX_CACHED:
            self._vectors.clear()
            missing = list(dict.fromkeys(texts))
        for text, vector in zip(missing, self.embedder.embed(missing), strict=True):
            self._vectors[text] = vector


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


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


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
    embedder = default_embedder()
    threading.Thread(target=_warm_up, args=(embedder,), daemon=True).start()
    return NearDuplicates(embedder)


def _warm_up(embedder: Embedder) -> None:
    try:
        embedder.embed(["warm-up"])
    except Exception:  # the first real comparison raises it, with its message
        return
