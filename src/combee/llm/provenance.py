"""Text a lesson copied from data it was shown, whatever the phrasing.

An instruction planted in a tool's output or a sample's input reaches the playbook only if the
reflector writes it into a lesson. A lesson should come from the attempt and the environment's
feedback; it has no reason to repeat a run of words, or an identifier (an account number, an
address, a link), from untrusted data that the trusted text (the task statement, the checker's
feedback) does not also hold. :func:`copied_spans` finds such copies. Unlike
:mod:`combee.llm.screening` it does not depend on how the planted text is worded: it compares
the lesson with the data.

Text is compared after Unicode normalisation (NFKC), with format characters (zero-width spaces
and the like) removed and case folded, so obfuscations that only change how text looks do not
hide a copy.

Every search here takes time in proportion to the text's length, however it is made (a
megabyte-long word included), and ASCII text (most text) skips the Unicode normalisation, which
leaves it as it is.

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

import functools
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from combee.llm.decoded import decoded_views

RUN_WORDS = 6
"""A run of this many consecutive words shared with the data counts as a copy."""

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_WORD = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+")
"""A word: a run of word characters, or one character of a script written without spaces
(Chinese, Japanese, Korean), where a character is as telling as a word."""
_LATIN_WORD = rf"[^\W{_CJK}]"
_RARE = re.compile(rf"(?<!{_LATIN_WORD})[A-Z][A-Z_]{{5,}}(?!{_LATIN_WORD})")
"""A rare token: a word of six or more capitals (a code word, a canary), told apart before
case is folded; a character of a script written without spaces ends it, as a space would."""
# Identifiers: an e-mail address ``[\w.+-]+@[\w-]+(?:\.[\w-]+)+``, a link, or an account
# number, key or code of letters and digits, whichever starts first (an address before a link
# before a code where they start together). The address is not searched as one expression:
# from every character of a long word it would read the word to its end looking for "@"
# (quadratic time). Each run of address characters followed by "@" is read once instead.
_ADDRESS_NAME = re.compile(r"(?<![\w.+-])[\w.+-]++(?=@)")
_ADDRESS_DOMAIN = re.compile(r"@[\w-]++(?:\.[\w-]++)++")
_LINK_OR_CODE = re.compile(
    r"https?://[^\s\"'<>)]+"  # link
    r"|\b(?=\w*\d)(?=\w*[a-zA-Z])\w{8,}\b"  # account numbers, keys, codes: letters and digits
)


@functools.cache
def _is_format(char: str) -> bool:
    return unicodedata.category(char) == "Cf"


def normal(text: str) -> str:
    """``text`` as compared: NFKC, format characters removed, case folded."""
    if text.isascii():  # NFKC leaves ASCII as it is, and no ASCII character is a format one
        return text.lower()
    folded = unicodedata.normalize("NFKC", text)
    for char in set(folded):  # each distinct character looked at once, not each character
        if _is_format(char):
            folded = folded.replace(char, "")
    return folded.casefold()


def _run_list(words: list[str], size: int) -> list[tuple[str, ...]]:
    """Every run of ``size`` consecutive words, in order."""
    return list(zip(*(words[offset:] for offset in range(size)), strict=False))


def _runs(words: list[str], size: int) -> set[tuple[str, ...]]:
    return set(zip(*(words[offset:] for offset in range(size)), strict=False))


def _identifier_matches(text: str) -> Iterator[str]:
    """The identifiers in ``text``, in order, as one regular expression's ``finditer`` would
    find them (the address first of the three alternatives), in time linear in the text."""
    addresses: list[tuple[int, int, int]] = []  # (start of the name, its "@", end of the domain)
    for name in _ADDRESS_NAME.finditer(text):
        domain = _ADDRESS_DOMAIN.match(text, name.end())
        if domain is not None:
            addresses.append((name.start(), name.end(), domain.end()))
    done = 0  # where the search resumes: the end of the last identifier
    index = 0
    other = _LINK_OR_CODE.search(text)
    while True:
        while index < len(addresses) and addresses[index][1] <= done:
            index += 1
        if other is not None and other.start() < done:
            other = _LINK_OR_CODE.search(text, done)
        # An address matches from any character of its name at or after ``done``.
        start = max(addresses[index][0], done) if index < len(addresses) else None
        if start is not None and (other is None or start <= other.start()):
            done = addresses[index][2]
            yield text[start:done]
        elif other is not None:
            done = other.end()
            yield other.group(0)
        else:
            return


def _identifiers(text: str) -> set[str]:
    return set(_identifier_matches(text))


@dataclass(frozen=True)
class SharedText:
    """What a lesson may repeat though each sample carries it: the runs of words that recur
    across a task's samples (the task's own wording), and the identifiers and rare tokens of
    the task's reference answers (its trusted vocabulary)."""

    runs: frozenset[tuple[str, ...]] = frozenset()
    identifiers: frozenset[str] = frozenset()
    """Identifiers the task's reference answers hold."""
    rare: frozenset[str] = frozenset()
    """Rare tokens (:data:`_RARE`, case folded) the task's reference answers hold."""
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
    vocabulary = "\n".join(answers)
    return SharedText(
        runs=frozenset(run for run, n in runs.items() if n >= least_samples),
        identifiers=frozenset(_identifiers(normal(vocabulary))),
        rare=frozenset(normal(token) for token in _RARE.findall(vocabulary)),
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
    as a word in scripts written without spaces), identifiers (addresses, links,
    letter-and-digit codes) and rare tokens (words of six or more capitals). Empty when
    ``text`` copies nothing."""
    shown = "\n".join(data)
    data_text = normal("\n".join([shown, *decoded_views(shown)]))
    if not data_text.strip():
        return []
    trusted_text = normal("\n".join(trusted))
    common = shared or SharedText()
    seen = normal(text)
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
    identifiers = list(dict.fromkeys(_identifier_matches(seen)))  # each checked once
    if identifiers:  # looked up among the data's own identifiers: one pass over each text
        untrusted_ids = _identifiers(data_text) - _identifiers(trusted_text) - common.identifiers
        found += [identifier for identifier in identifiers if identifier in untrusted_ids]
    rare = list(dict.fromkeys(normal(token) for token in _RARE.findall(text)))
    if rare:  # the data's words are gathered only for a lesson that holds a rare token
        untrusted = set(_WORD.findall(data_text)) - set(_WORD.findall(trusted_text))
        # A word the data also writes in lower case ("METHOD" beside "method") is no code word.
        untrusted -= {normal(word) for word in _WORD.findall(shown) if not word.isupper()}
        found += [t for t in rare if t in untrusted and t not in common.rare]
    return list(dict.fromkeys(found))  # each copy once, in the order found
