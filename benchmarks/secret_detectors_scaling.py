"""CPU time of each secret detector, and of the generic detectors' counted work, as the text
grows: every named format of ``combee.llm.secret_formats``, the assignment pattern, the two
generic detectors of ``combee.llm.generic_secrets`` and ``redact`` as a whole.

Each detector runs on ``--sizes`` characters of each text shape (prose, one word of hex, words
of base64 of a kilobyte, random 40-character tokens, ``api key: <token>`` lines, paths of three
random parts), and is
timed as the fastest of ``--repeat`` runs. Printed per KB, with the ratio of the time per KB at
the largest size to the time per KB at the size before it: near 1 for time in proportion to
the text (at 1 KB a call's fixed cost dominates).
The generic detectors' ``read`` counters (characters handed to a search or measured) are
printed per character; the tests hold them to a tenfold growth for ten times the text.

    python benchmarks/secret_detectors_scaling.py [--sizes 1000,10000,100000,1000000]
        [--repeat 3] [--shapes prose,hex,base64,tokens,keyed,paths]
"""

from __future__ import annotations

import argparse
import random
import string
import time
from collections import Counter
from collections.abc import Callable

from combee.llm import redact as redact_module
from combee.llm.generic_secrets import NamedSecrets, TokenShapes
from combee.llm.redact import redact
from combee.llm.secret_formats import ASSIGNMENT, DETECTORS, MULTILINE

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
PROSE = [
    "the", "token", "key", "password", "account", "refund", "policy", "flight", "agent", "user",
    "said", "that", "it", "was", "not", "found", "in", "this", "log", "while", "reading", "its",
    "records", "for", "customer", "who", "asked", "again",
]  # fmt: skip


def _filled(size: int, piece: Callable[[random.Random], str]) -> str:
    rng = random.Random(size)
    pieces: list[str] = []
    length = 0
    while length < size:
        pieces.append(piece(rng))
        length += len(pieces[-1])
    return "".join(pieces)[:size]


def _word(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choices(alphabet, k=n))


SHAPES: dict[str, Callable[[int], str]] = {
    "prose": lambda n: _filled(n, lambda r: r.choice(PROSE) + " "),
    "hex": lambda n: random.Random(n).randbytes(n // 2 + 1).hex()[:n],
    "base64": lambda n: _filled(n, lambda r: _word(r, B64, 1000) + " "),
    "tokens": lambda n: _filled(n, lambda r: _word(r, ALNUM, 40) + " "),
    "keyed": lambda n: _filled(n, lambda r: f"api key: {_word(r, ALNUM, 24)}\n"),
    "paths": lambda n: _filled(
        n, lambda r: "".join("/" + _word(r, ALNUM, 30) for _ in range(3)) + " "
    ),
}


def _marker(kind: str, value: str) -> str:
    return f"[REDACTED:{kind}]"


def _detectors() -> dict[str, Callable[[str], object]]:
    named: dict[str, Callable[[str], object]] = {}
    for index, detector in enumerate((*MULTILINE, *DETECTORS)):
        name = f"{index:02d} {detector.kind}"
        named[name] = lambda text, d=detector: d.apply(text, _marker, Counter())
    named["assignment"] = lambda text: ASSIGNMENT.sub("x", text)
    named["generic token"] = lambda text: TokenShapes().apply(text, _marker, Counter())
    named["generic named"] = lambda text: NamedSecrets().apply(text, _marker, Counter())
    named["redact (all)"] = _redact_uncached
    return named


def _redact_uncached(text: str) -> str:
    redact_module._cached_text.cache_clear()
    redact_module._cached_line.cache_clear()
    return redact(text)


def _fastest(run: Callable[[str], object], text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        run(text)
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000,1000000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--shapes", default=",".join(SHAPES))
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    detectors = _detectors()
    for shape in args.shapes.split(","):
        texts = [SHAPES[shape](size) for size in sizes]
        print(f"\n## {shape}: ms per KB at " + ", ".join(f"{s // 1000} KB" for s in sizes))
        print(f"{'detector':28}" + "".join(f"{s // 1000:>10} KB" for s in sizes) + "   ratio")
        for name, run in detectors.items():
            per_kb = [_fastest(run, t, args.repeat) * 1000 / (len(t) / 1000) for t in texts]
            ratio = per_kb[-1] / per_kb[-2] if per_kb[-2] else float("nan")
            print(f"{name:28}" + "".join(f"{v:13.4f}" for v in per_kb) + f"{ratio:8.2f}")
        for finder in (TokenShapes, NamedSecrets):
            counts = []
            for text in texts:
                counted = finder()
                counted.apply(text, _marker, Counter())
                counts.append(counted.read / len(text))
            print(
                f"{finder.__name__ + ' read/char':28}"
                + "".join(f"{c:13.3f}" for c in counts)
                + f"{counts[-1] / counts[-2]:8.2f}"
            )


if __name__ == "__main__":
    main()
