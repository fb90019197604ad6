"""A reflection's lesson, told apart from a remark by the reflector's own reply, and grounded in
what the feedback states.

The reflector says what its ``key_insight`` is about (``key_insight_about``, see
:data:`~combee.methods.ace.schemas.INSIGHT_SUBJECTS`): a rule for the task, in whatever voice
("The assistant should confirm the order number ...", "I need to convert ..."), is a lesson; a
remark on the playbook or on the attempt ("the playbook has no bullet about Plouquals") teaches
nothing and is no lesson. That field decides, never the words the text uses. A reply without
the field is read as a lesson.

The feedback is the ground truth of the attempt. Its **evidence** is what it states beyond the
verdict: ``wrong``, ``correct``, ``expected X, got Y`` and ``utility: passed (...)`` are the
verdict; ``The rule: ...``, ``expected actions: ...``, a failed check's text are evidence. When
a statement is labelled (``The rule:``, ``Hint:``, ``Reference:`` ...), the evidence is what
follows the first label, without it.

With the ``copy_rules`` repair on (the default), the lesson is then grounded:

- a remark, when there is evidence: the evidence (source ``feedback``);
- a lesson that leaves out evidence of up to :data:`JOINED_CHARS` (a rule, a reference): the
  evidence, then the lesson (without its sentences that contradict the evidence when
  ``drop_contradictions`` is on: :func:`contradicts`; ``feedback+reflector``, or ``feedback``
  when every sentence does); longer evidence (a list of expected calls) is shown to the curator
  beside the lesson instead (``reflector``);
- otherwise the lesson as written (``reflector``).

With it off the lesson is what the reflector wrote (``reflector``). Either way a remark with
nothing to replace it leaves no lesson; the reflection keeps its other fields (``dropped``).

A key insight states the evidence when it holds the evidence's distinctive terms (its numbers and
names: words with a capital letter past a sentence's start, identifiers with ``_``, ``.`` or
``(``) and no number the evidence lacks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from combee.core.types import Reflection
from combee.methods.ace.schemas import INSIGHT_ABOUT, REMARK_SUBJECTS

LESSON = "key_insight"
"""The reflection field that holds the lesson."""
EVIDENCE_CHARS = 600
"""At most this much of the feedback (or its evidence) reaches a lesson or the curator."""
JOINED_CHARS = 240
"""Evidence up to this long (a rule, a reference) is joined to a lesson that leaves it out;
longer evidence (a list of expected calls) is shown beside the lesson instead."""


_VERDICT_WORD = re.compile(
    r"^\s*(?:wrong|correct|incorrect|right|passed|failed|success|failure|ok)\b\s*[:.,;-]?\s*", re.I
)
_EXPECTED_GOT = re.compile(r"^\s*expected\b.{0,400}?,\s*got\b", re.I | re.S)
_UTILITY = re.compile(r"^\s*utility\s*:\s*(?:passed|failed)\b", re.I)
_LABEL = re.compile(
    r"^\s*(?:the\s+)?(?:rule|hint|note|reason|explanation|reference|lesson)\s*:\s*", re.I
)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_WHOLE_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(\[])")
_CLAUSE = re.compile(rf"{_SENTENCE.pattern}|\n+")
_WORD = re.compile(r"[\w.()\-]+")
_OPENING = re.compile(r"(?:^|[.!?;:]\s+)([A-Z][\w\-]+)")
_STARTER_WORDS = """
a an the this that these those each every all any some no not never always only if when
whenever while for in on at to from by with of as after before since until unless it its they
their there here we you your he she his her one two both either neither most many more less
also then so but and or however otherwise instead first second next last finally
use do does did is are be was were has have can must should may will would
check make take give keep write read add multiply divide subtract count convert round apply
avoid ensure verify compute calculate consider remember prefer treat call ask confirm return
answer state report express format include skip list look find set get put leave start stop
try follow compare search book cancel change update pay refund transfer send
expected required wrong correct note rule hint reference lesson example
"""
_STARTERS = frozenset(_STARTER_WORDS.split())


@dataclass(frozen=True)
class Grounded:
    """A reflector's fields with the lesson grounded, and where the lesson came from."""

    fields: dict[str, Any]
    source: str
    """``reflector``, ``feedback``, ``feedback+reflector`` or ``dropped`` (see the module)."""
    evidence: str = ""
    """The feedback's evidence (:func:`feedback_evidence`)."""


def feedback_evidence(feedback: str) -> str:
    """What ``feedback`` states beyond its verdict ("" when it is a verdict alone)."""
    kept: list[str] = []
    labelled: list[str] = []
    for clause in _CLAUSE.split(feedback.strip()):
        clause = _VERDICT_WORD.sub("", clause, count=1)
        if not clause.strip() or _EXPECTED_GOT.match(clause) or _UTILITY.match(clause):
            continue
        label = _LABEL.match(clause)
        clause = clause[label.end() :].strip() if label else clause.strip()
        if clause:
            (labelled if label or labelled else kept).append(clause)
    # A labelled statement ("The rule: ...", and what follows it) is the evidence; what comes
    # before it may be the tail of a quoted answer that held a full stop.
    return _cut(" ".join(labelled or kept))


def distinctive_terms(text: str) -> set[str]:
    """The numbers and names in ``text``, lowercased (see the module)."""
    terms = {number.replace(",", "") for number in _NUMBER.findall(text)}
    sentence_start = True
    for word in _WORD.findall(text):
        bare = word.strip(".()-")
        if (
            bare
            and not sentence_start
            and (any(c.isupper() for c in bare) or any(c in bare for c in "_("))
        ):
            terms.add(bare.lower())
        sentence_start = word.endswith(".")
    return {term for term in terms if term}


def opening_names(text: str) -> set[str]:
    """The names that open a sentence of ``text`` ("Duplix distances are ..."), lowercased: a
    capitalised first word that is not one of the words sentences open with as often as names
    do. :func:`distinctive_terms` leaves every first word out."""
    return {match[1].lower() for match in _OPENING.finditer(text)} - _STARTERS


def named_terms(text: str) -> set[str]:
    """:func:`distinctive_terms` and :func:`opening_names`."""
    return distinctive_terms(text) | opening_names(text)


def states(lesson: str, evidence: str) -> bool:
    """Whether ``lesson`` holds every distinctive term of ``evidence`` and no number that
    ``evidence`` lacks (one that may contradict it: "multiplied by 0.5, not 3"). True when the
    evidence has no distinctive term: there is nothing specific to miss."""
    wanted = distinctive_terms(evidence)
    if not wanted:
        return True
    folded = lesson.lower().replace(",", "")
    if not all(term in folded for term in wanted):
        return False
    return {n.replace(",", "") for n in _NUMBER.findall(lesson)} <= wanted


def contradicts(text: str, evidence: str) -> bool:
    """Whether ``text`` speaks of what ``evidence`` names (every name of it) with other numbers:
    it holds a number the evidence lacks and lacks one the evidence holds ("The yield of a
    Stibrou is its base value multiplied by 0.5." against "... multiplied by 3."). Numbers are
    whole words ("04" in "ZFA04Y" is none); names have three characters or more (a unit such
    as the "C" of "18 C" is none); evidence without a number or a name contradicts nothing."""
    wanted = _numbers(evidence)
    numbers = {n.replace(",", "") for n in _NUMBER.findall(evidence)}
    # A unit or an initial ("18 C") names nothing: the rule must be about something named.
    names = {name for name in named_terms(evidence) - numbers if len(name) >= 3}
    if not wanted or not names:
        return False
    folded = text.lower().replace(",", "")
    if not all(re.search(rf"(?<!\w){re.escape(name)}(?!\w)", folded) for name in names):
        return False
    have = _numbers(text)
    return bool(have - wanted) and not wanted <= have


def _numbers(text: str) -> set[str]:
    return {n.replace(",", "") for n in _WHOLE_NUMBER.findall(text)}


def without_contradictions(lesson: str, evidence: str) -> str:
    """``lesson`` without its sentences that contradict ``evidence`` (:func:`contradicts`)."""
    return " ".join(s for s in _SENTENCE.split(lesson.strip()) if not contradicts(s, evidence))


def is_remark(fields: Mapping[str, Any]) -> bool:
    """Whether the reflector said its key insight is a remark on the playbook or the attempt."""
    return fields.get(INSIGHT_ABOUT) in REMARK_SUBJECTS


def ground(
    fields: Mapping[str, Any],
    feedback: str,
    *,
    copy_rules: bool = True,
    drop_contradictions: bool = True,
) -> Grounded:
    """``fields`` (a reflector's reply) with its lesson grounded in ``feedback`` (see the
    module), without the subject field it was judged by: ``copy_rules`` carries a rule the
    feedback states into the lesson; ``drop_contradictions`` leaves out the lesson's sentences
    that contradict it."""
    lesson = "" if is_remark(fields) else str(fields.get(LESSON) or "").strip()
    # The subject has done its work: the curator reads lessons, not what they were about.
    fields = {key: value for key, value in fields.items() if key != INSIGHT_ABOUT}
    evidence = feedback_evidence(feedback) if feedback else ""
    if not evidence or not copy_rules:
        if not lesson:
            return Grounded({**fields, LESSON: ""}, "dropped", evidence)
        return Grounded({**fields, LESSON: lesson}, "reflector", evidence)
    if not lesson:
        return Grounded({**fields, LESSON: evidence}, "feedback", evidence)
    if len(evidence) > JOINED_CHARS or states(lesson, evidence):
        return Grounded({**fields, LESSON: lesson}, "reflector", evidence)
    consistent = without_contradictions(lesson, evidence) if drop_contradictions else lesson
    if not consistent:
        return Grounded({**fields, LESSON: evidence}, "feedback", evidence)
    joined = f"{evidence} {consistent}"
    return Grounded({**fields, LESSON: joined}, "feedback+reflector", evidence)


def grounded_reflection(
    sample_id: str,
    reply: Mapping[str, Any],
    *,
    correct: bool,
    feedback: str,
    shown_data: tuple[str, ...] = (),
    trusted: tuple[str, ...] = (),
    copy_rules: bool = True,
    drop_contradictions: bool = True,
) -> Reflection:
    """A reflector's ``reply`` on one attempt as a :class:`Reflection` whose lesson is grounded
    in ``feedback`` (:func:`ground`); the curator sees the feedback too unless the lesson
    already carries it."""
    grounded = ground(
        reply, feedback, copy_rules=copy_rules, drop_contradictions=drop_contradictions
    )
    carried = grounded.source.startswith("feedback")
    return Reflection(
        sample_id=sample_id,
        fields=grounded.fields,
        correct=correct,
        shown_data=shown_data,
        trusted=trusted,
        feedback="" if carried else _cut(" ".join(feedback.split())),
        lesson_source=grounded.source,
        evidence=grounded.evidence,
    )


def _cut(text: str) -> str:
    """``text`` cut at a word within :data:`EVIDENCE_CHARS`, marked."""
    if len(text) <= EVIDENCE_CHARS:
        return text
    return text[:EVIDENCE_CHARS].rsplit(" ", 1)[0] + " [...]"
