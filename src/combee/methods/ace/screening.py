"""Reflections kept out of curation: those that carry an instruction planted in the data
(:mod:`combee.llm.screening`) or repeat untrusted text they were shown
(:mod:`combee.llm.provenance`)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence

from combee.core.types import Reflection
from combee.llm.provenance import SharedText, copied_spans
from combee.llm.screening import planted_instruction
from combee.methods.ace.lesson_counts import LessonCounts

log = logging.getLogger(__name__)


def screen_reflections(
    reflections: Sequence[Reflection],
    *,
    lessons: LessonCounts,
    screen: bool,
    shared: SharedText | None,
) -> tuple[list[Reflection], dict[str, int]]:
    """The reflections to curate, and how many were kept out by kind (see
    :meth:`combee.methods.ace.method.AceMethod.screen`); counted in ``lessons``."""
    lessons.sources.update(r.lesson_source for r in reflections if r.lesson_source)
    if not screen:
        return list(reflections), {}
    kept: list[Reflection] = []
    screened: Counter[str] = Counter()
    for reflection in reflections:
        kind = planted_instruction(reflection.fields) or _copied(reflection, shared)
        if kind is None:
            kept.append(reflection)
        else:
            screened[kind] += 1
            log.info("reflection on sample %s kept out (%s)", reflection.sample_id, kind)
    if screened:
        log.warning(
            "%d of %d reflection(s) kept out of curation: %s",
            screened.total(),
            len(reflections),
            ", ".join(
                f"{n} {_SCREENED_AS.get(k, 'carry a planted instruction')} ({k})"
                for k, n in screened.items()
            ),
        )
    lessons.screened.update(screened)
    return kept, dict(screened)


_SCREENED_AS = {"copied-from-data": "repeat text their sample showed"}
"""How a kind of screened reflection reads; every other kind is a planted instruction."""


def _copied(reflection: Reflection, shared: SharedText | None) -> str | None:
    text = "\n".join(str(v) for v in reflection.fields.values() if isinstance(v, str))
    spans = copied_spans(text, reflection.shown_data, reflection.trusted, shared=shared)
    if spans:
        # Counted, never quoted: the spans are data the reflector was shown (an address, a key
        # the redaction does not know), which the log must not keep.
        log.info(
            "reflection on %s copies %d span(s) of data it was shown (%d characters)",
            reflection.sample_id,
            len(spans),
            sum(map(len, spans)),
        )
    return "copied-from-data" if spans else None
