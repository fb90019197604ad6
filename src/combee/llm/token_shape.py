"""What a random token looks like, told from its characters alone: which classes (lower case,
upper case, digits) it mixes, how much of it reads like words, how often letters meet digits,
and its Shannon entropy. Identifiers people write are made of words ("Handler2Factory",
"report_2026_q3"); a generated token forms words by chance only. Each measure reads its text
once."""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
_UPPER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_DIGIT = frozenset("0123456789")
HEX = frozenset("0123456789abcdefABCDEF")
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]+")
_WORDY = re.compile(r"[A-Z]?[a-z]{3,}|[A-Z]{4,}")
_NAME_PARTS = re.compile(r"[A-Z]?[a-z]{2,}|[A-Z]{4,}")
_LETTERS_OR_DIGITS = re.compile(r"[A-Za-z]+|[0-9]+")
_DIGITS = re.compile(r"[0-9]+")
_CASE_RUNS = re.compile(r"[a-z]+|[A-Z]+")


def _c_log_c(most: int) -> list[float]:
    """c·log2(c) for every count from 0 to ``most``."""
    return [0.0] + [c * math.log2(c) for c in range(1, most + 1)]


_C_LOG_C = _c_log_c(1024)


@dataclass(frozen=True)
class Shape:
    """The measures of one text, over its letters and digits (other characters skipped)."""

    length: int
    """Letters and digits."""
    others: int
    """Every other character."""
    lower: bool
    upper: bool
    digits: bool
    entropy: float
    """Bits per character of the letters and digits, as counted in the text."""
    wordy: float
    """The share of letters and digits in runs that read like words: three or more lower-case
    letters (after one capital or none), or four or more capitals."""
    name_like: float
    """The same share with runs of two lower-case letters counted too, as names write short
    words (``CreateVpcRequest``): 0.85 or more in a name, less in random text."""
    letter_digit_rate: float
    """The share of consecutive letters and digits where a letter meets a digit."""
    case_mix: float
    """The share of consecutive letters (digits skipped) where the case changes: about a half
    in random text, a quarter or less in names made of words (``CreateVpcRequest``), a few
    in words glued to a hash (``74563ba2...-Paper.pdf``)."""

    @property
    def classes(self) -> int:
        return self.lower + self.upper + self.digits

    def random(self, min_length: int, *, prefixed: bool = False) -> bool:
        """Whether the text reads as generated. Mixed case: few word-like runs (a random mix of
        62 characters forms them rarely; an identifier such as ``Wav2Vec2ForPreTraining`` is
        made of them). One case and digits: letters and digits alternate often, as they do in
        hex, base32 or lower-case alphanumerics, and rarely in words with a number. After a
        vendor's prefix (``prefixed``), which is evidence of its own, the bar is lower."""
        if self.length < min_length or self.others * 6 > self.length + self.others:
            return False
        if self.upper and self.lower:
            if self.case_mix >= 0.3:
                if prefixed:
                    return self.wordy < 0.65 and self.entropy >= 3.0
                return self.wordy < 0.5 and self.entropy >= 3.5
            if not prefixed:  # words glued to a hash or a number
                return False
        if self.digits and (self.upper or self.lower):
            return self.letter_digit_rate >= 0.2 and self.entropy >= 3.0
        return False


def shape(text: str) -> Shape:
    letters = _NOT_ALNUM.sub("", text)
    counts = Counter(letters)
    length = len(letters)
    entropy = 0.0
    if length:
        table = _C_LOG_C if length < len(_C_LOG_C) else _c_log_c(length)
        weights = sum(map(table.__getitem__, counts.values()))
        entropy = math.log2(length) - weights / length
    wordy = sum(map(len, _WORDY.findall(letters)))
    name_like = sum(map(len, _NAME_PARTS.findall(letters)))
    runs = len(_LETTERS_OR_DIGITS.findall(letters))
    only_letters = _DIGITS.sub("", letters)
    case_changes = len(_CASE_RUNS.findall(only_letters)) - 1
    return Shape(
        length=length,
        others=len(text) - length,
        lower=not _LOWER.isdisjoint(counts),
        upper=not _UPPER.isdisjoint(counts),
        digits=not _DIGIT.isdisjoint(counts),
        entropy=entropy,
        wordy=wordy / length if length else 0.0,
        name_like=name_like / length if length else 0.0,
        letter_digit_rate=(runs - 1) / (length - 1) if length > 1 else 0.0,
        case_mix=case_changes / (len(only_letters) - 1) if len(only_letters) > 1 else 0.0,
    )


def hex_groups(text: str) -> bool:
    """Whether ``text`` is hexadecimal groups joined by hyphens (a UUID, a GUID, a MAC address
    or a serial written for people to read): an identifier, not a token."""
    groups = text.split("-")
    return len(groups) >= 3 and all(0 < len(g) <= 12 and HEX.issuperset(g) for g in groups)
