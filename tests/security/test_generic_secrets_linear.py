"""The generic detectors' work grows in proportion to the text, whatever the text is made of.

Work is counted, not timed: each detector adds to ``read`` the characters it hands to a search
and the characters it measures. From 100 KB to 1 MB (ten times the text) the work must grow
about ten times, and stay within a small multiple of the text's length. The shapes below are
the ones that make a careless search read a text again and again: one megabyte-long word, many
words just long enough to be measured, a secret word before every value, a value that holds
secret words, paths and URLs, names before "=", capitals glued to a body.
"""

from __future__ import annotations

import random
import string
from collections import Counter
from collections.abc import Callable

import pytest

from combee.llm.generic_secrets import NamedSecrets, TokenShapes
from combee.llm.redact import redact

KB = 1_000
ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"


def repeated(unit: Callable[[random.Random], str], size: int) -> str:
    """Pieces made by ``unit`` until the text holds ``size`` characters (cut to it)."""
    rng = random.Random(size)
    pieces: list[str] = []
    length = 0
    while length < size:
        pieces.append(unit(rng))
        length += len(pieces[-1])
    return "".join(pieces)[:size]


def word(alphabet: str, n: int) -> Callable[[random.Random], str]:
    return lambda rng: "".join(rng.choices(alphabet, k=n)) + " "


def _parts(rng: random.Random) -> str:
    return "".join("/" + "".join(rng.choices(ALNUM, k=30)) for _ in range(3))


SHAPES: dict[str, Callable[[int], str]] = {
    "one hex word": lambda n: random.Random(n).randbytes(n // 2).hex(),
    "one base64 word": lambda n: "".join(random.Random(n).choices(B64, k=n)),
    "base64 words of a kilobyte": lambda n: repeated(word(B64, 1000), n),
    "random tokens of 40": lambda n: repeated(word(ALNUM, 40), n),
    "words of 19": lambda n: repeated(word(ALNUM, 19), n),
    "prose": lambda n: repeated(lambda r: r.choice(["the ", "key ", "token ", "of ", "dump "]), n),
    "key: value lines": lambda n: repeated(lambda r: f"api key: {word(ALNUM, 24)(r)}\n", n),
    "secret words in one value": lambda n: "token=" + "a-key=" * (n // 6),
    "separators": lambda n: "a" + "_b" * (n // 2),
    "prefixed words": lambda n: repeated(lambda r: "tok_" + word(ALNUM, 30)(r), n),
    "urls": lambda n: repeated(lambda r: "https://x.example.org" + _parts(r) + " ", n),
    "paths": lambda n: repeated(lambda r: _parts(r) + " ", n),
    "one megabyte-long path": lambda n: repeated(_parts, n),
    "names before =": lambda n: repeated(lambda r: "NAME_OF_IT=" + word(ALNUM, 30)(r), n),
    "glued capitals": lambda n: repeated(lambda r: "ABCDEFGH" + word(string.digits, 30)(r), n),
    "equals": lambda n: "=" * n,
}


def work(detector: TokenShapes | NamedSecrets, text: str) -> int:
    detector.apply(text, lambda kind, value: f"[REDACTED:{kind}]", Counter())
    return detector.read


@pytest.mark.parametrize("make", SHAPES.values(), ids=SHAPES.keys())
@pytest.mark.parametrize("detector", [TokenShapes, NamedSecrets])
def test_work_grows_in_proportion_to_the_text(
    detector: type[TokenShapes | NamedSecrets], make: Callable[[int], str]
) -> None:
    small, large = make(100 * KB), make(1000 * KB)
    counted_small, counted_large = work(detector(), small), work(detector(), large)
    assert len(small) <= counted_small <= 8 * len(small)
    assert len(large) <= counted_large <= 8 * len(large)
    assert 9 <= counted_large / counted_small <= 11


def test_a_megabyte_of_each_shape_is_redacted_whole() -> None:
    for make in SHAPES.values():
        text = make(1000 * KB)
        assert len(redact(text)) > 0
