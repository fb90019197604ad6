"""Text a lesson copied from data it was shown, whatever the phrasing.

An instruction planted in a tool's output or a sample's input reaches the playbook only if the
reflector writes it into a lesson. A lesson should come from the attempt and the environment's
feedback; it has no reason to repeat a run of words, or an identifier (an account number, an
address, a link), from untrusted data that the trusted text (the task statement, the checker's
feedback) does not also hold. :func:`copied_spans` finds such copies. Unlike
:mod:`combee.llm.screening` it does not depend on how the planted text is worded: it compares
the lesson with the data.

Text is compared as it looks (:func:`combee.llm.canonical.fold`): after Unicode normalisation
(NFKC), with format characters (zero-width spaces and the like) removed, look-alike letters of
other scripts (Cyrillic "С", Greek "Α") read as the ASCII letters they imitate, and case folded,
so obfuscations that only change how text looks do not hide a copy.

Identifiers and code words are compared in canonical form (:mod:`combee.llm.canonical`), since
a model that copies one rarely keeps its writing: an IBAN printed in groups of four, with
hyphens or dots, is the IBAN written solid; a phone or card number is its digits; ``name (at)
host (dot) com`` is an e-mail address and ``www dot host dot com`` a domain; a link stands for
its host and its registrable domain as well, so a lesson that names only the domain of a
planted link copies it; ``CANARY-WORD`` and ``C A N A R Y`` are code words. Numbers that are not
identifiers (an amount, a decimal, a year, a date) stay numbers, so a lesson that repeats a
question's figures is no copy. Data is also read through its encodings, nested up to three
layers (:mod:`combee.llm.decoded`). The count of planted text in lessons
(:mod:`combee.methods.ace.agent`) uses this same function, so it sees every copy the screen
sees.

Every search here takes time in proportion to the text's length, however it is made (a
megabyte-long word, a megabyte of digit groups or of hex included), and ASCII text (most text)
skips the Unicode normalisation, which leaves it as it is.

On a question-answer task the data a lesson must not copy is the sample's question and context,
yet a good lesson repeats the task's own wording (a formula as the task defines it, its list of
options, its answer format), which every sample carries. :func:`shared_text` gathers the runs of
words that recur across a task's samples; a lesson may repeat them. An instruction planted in a
single sample is that sample's own text, and a lesson that copies it is kept out.

Recurrence does not vouch for an identifier, a link, an address or a rare token: an order
planted in every sample recurs as much as the task's wording, and what it asks for (an account
to pay, a link to visit, a code word to answer) is such a token. A lesson may name one only when
trusted text holds it: the sample's own reference and feedback, or any of the task's reference
answers (a label of a tagging task, which its list of options repeats in every question). So a
planted order is judged by one rule whether it sits in one sample or in all of them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from combee.llm.canonical import (
    code_words,
    fold,
    identifier_keys,
    identifier_matches,
    identifiers,
    word_keys,
)
from combee.llm.decoded import decoded_views

RUN_WORDS = 6
"""A run of this many consecutive words shared with the data counts as a copy."""

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_WORD = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+")
"""A word: a run of word characters, or one character of a script written without spaces
(Chinese, Japanese, Korean), where a character is as telling as a word."""


def _lower(folded: str) -> str:
    return folded.lower() if folded.isascii() else folded.casefold()


def normal(text: str) -> str:
    """``text`` as compared: folded (:func:`combee.llm.canonical.fold`: NFKC, format
    characters removed, look-alikes of ASCII letters and digits replaced by them) and case
    folded."""
    return _lower(fold(text))


def _run_list(words: list[str], size: int) -> list[tuple[str, ...]]:
    """Every run of ``size`` consecutive words, in order."""
    return list(zip(*(words[offset:] for offset in range(size)), strict=False))


def _runs(words: list[str], size: int) -> set[tuple[str, ...]]:
    return set(zip(*(words[offset:] for offset in range(size)), strict=False))


def _identifier_matches(text: str) -> Iterator[str]:
    """The e-mail addresses, links and letter-and-digit codes in ``text``, in order, as one
    regular expression's ``finditer`` would find them, in time linear in the text."""
    for found in identifier_matches(text):
        yield text[found[0] : found[1]] if isinstance(found, tuple) else found.group(0)


@dataclass(frozen=True)
class SharedText:
    """What a lesson may repeat though each sample carries it: the runs of words that recur
    across a task's samples (the task's own wording), and the identifiers and rare tokens of
    the task's reference answers (its trusted vocabulary)."""

    runs: frozenset[tuple[str, ...]] = frozenset()
    identifiers: frozenset[str] = frozenset()
    """Identifiers the task's reference answers hold."""
    rare: frozenset[str] = frozenset()
    """Code words (:func:`combee.llm.canonical.code_words`) the task's reference answers
    hold."""
    samples: int = 0
    """How many samples it was gathered from."""


def shared_text(
    texts: Iterable[str],
    answers: Iterable[str] = (),
    *,
    least_samples: int = 2,
    run_words: int = RUN_WORDS,
) -> SharedText:
    """The runs of words that recur in at least ``least_samples`` of ``texts`` (one text per
    sample), and the identifiers and rare tokens of ``answers`` (the samples' references)."""
    runs: Counter[tuple[str, ...]] = Counter()
    count = 0
    for text in texts:
        runs.update(_runs(_WORD.findall(normal(text)), run_words))
        count += 1
    vocabulary = fold("\n".join(answers))
    return SharedText(
        runs=frozenset(run for run, n in runs.items() if n >= least_samples),
        identifiers=frozenset(identifier_keys(vocabulary)),
        rare=frozenset(code_words(vocabulary)),
        samples=count,
    )


def copied_spans(
    text: str,
    data: Iterable[str],
    trusted: Iterable[str] = (),
    *,
    shared: SharedText | None = None,
    run_words: int = RUN_WORDS,
) -> list[str]:
    """The parts of ``text`` copied from ``data`` (or from what its encoded runs decode to:
    :mod:`combee.llm.decoded`) and found neither in ``trusted`` nor in ``shared`` (text the
    task's samples have in common): runs of ``run_words`` consecutive words (a character counts
    as a word in scripts written without spaces), identifiers (addresses, links, domains,
    letter-and-digit codes, IBANs, card, phone and account numbers) and code words (six or
    more capitals), the last two compared in canonical form (:mod:`combee.llm.canonical`) and
    reported so. Empty when ``text`` copies nothing."""
    shown = "\n".join(data)
    data_folded = fold("\n".join([shown, *decoded_views(shown)]))
    data_text = _lower(data_folded)
    if not data_text.strip():
        return []
    trusted_folded = fold("\n".join(trusted))
    trusted_text = _lower(trusted_folded)
    common = shared or SharedText()
    folded = fold(text)
    seen = _lower(folded)
    found: list[str] = []
    words = _WORD.findall(seen)
    lesson_runs = _run_list(words, run_words)
    candidate_runs = set(lesson_runs) & _runs(_WORD.findall(data_text), run_words)
    candidate_runs -= _runs(_WORD.findall(trusted_text), run_words)
    candidate_runs -= common.runs
    covered = [False] * len(words)
    for start, run in enumerate(lesson_runs):
        if run in candidate_runs:
            covered[start : start + run_words] = [True] * run_words
    span: list[str] = []
    for word, copied in zip([*words, ""], [*covered, False], strict=True):
        if copied:
            span.append(word)
        elif span:
            found.append(" ".join(span))
            span = []
    named = identifiers(folded)
    if named:  # looked up among the data's own identifiers: one pass over each text
        untrusted_ids = (
            identifier_keys(data_folded) - identifier_keys(trusted_folded) - common.identifiers
        )
        found += [ident.shown for ident in named if not untrusted_ids.isdisjoint(ident.keys)]
    rare = code_words(folded)
    if rare:  # the data's words are gathered only for a lesson that holds a code word
        untrusted = word_keys(_WORD.findall(data_text), data_folded)
        untrusted -= word_keys(_WORD.findall(trusted_text), trusted_folded)
        # A word the data also writes in lower case ("METHOD" beside "method") is no code word.
        untrusted -= {
            word.replace("_", "").lower()
            for word in _WORD.findall(fold(shown))
            if not word.isupper()
        }
        found += [t for t in rare if t in untrusted and t not in common.rare]
    return list(dict.fromkeys(found))  # each copy once, in the order found
