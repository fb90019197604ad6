"""CPU time of secret redaction and of the copy screen: how it grows with the text's length, and
what one LLM call pays for redacting a prompt whose playbook repeats from call to call.

1. ``redact`` and the copy screen (``copied_spans`` with the text as the lesson and as the data)
   on ``--sizes`` characters after a sentence holding the word "token" (which switches the
   secret-assignment check on): one unbroken word of random hex digits, of base64 characters
   or of lower-case letters (no digit: the screen's code pattern fails on it, so every
   character is a new start for the others), and prose of log-line words. Each is timed as the
   fastest of several runs with empty caches after a warm-up, and shown per KB, with the ratio of
   the time at each size to the time at the smallest: time in proportion to the text keeps
   it near the ratio of the sizes (10 for 10 KB -> 100 KB); quadratic time makes it that
   ratio squared. Each measurement runs in a child process stopped after ``--limit`` seconds,
   so a quadratic implementation shows as "> limit", not a hang.
2. The CPU per call of redacting an ACE generator prompt (a playbook of about ``--playbook-chars``
   characters, a Formula question and its context) as the LLM client does it
   (``Redaction.messages``), over ``--calls`` calls, no two with the same question: with the same
   playbook in every call (a training iteration: the playbook is frozen while the batch runs),
   and with a different playbook in every call (only the system prompt repeats).

    python benchmarks/redaction_scaling.py [--sizes 10000,100000,1000000] [--limit 120]
        [--calls 1000] [--playbook-chars 8000] [--parts scaling,calls]
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import time
from collections.abc import Callable
from dataclasses import replace
from multiprocessing.connection import Connection

from combee.llm import redact as redact_module
from combee.llm.provenance import copied_spans
from combee.llm.redact import redact
from combee.llm.redaction import Redaction
from combee.methods.ace.playbook import Bullet, Playbook
from combee.methods.ace.prompts import generator_messages
from combee.tasks.base import Sample
from combee.tasks.registry import get_task

TOPICS = (
    "current ratio", "quick ratio", "debt to equity", "return on equity", "gross margin",
    "net present value", "internal rate of return", "payback period", "earnings per share",
    "price to earnings", "dividend yield", "working capital", "inventory turnover",
    "asset turnover", "interest coverage", "operating margin", "free cash flow", "WACC",
    "compound interest", "annuity payment", "bond yield", "Sharpe ratio", "beta", "CAPM",
)  # fmt: skip
SECTIONS = ("strategies", "formulas", "mistakes", "checks", "domain")


ALPHABETS = {
    "hex": "0123456789abcdef",
    "base64": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
    "letters": "abcdefghijklmnopqrstuvwxyz",
}
_PROSE_WORDS = """the token key password account refund policy flight agent user said that it was
not found in this log while reading its records for the customer who asked again"""
PROSE = _PROSE_WORDS.split()


def word(shape: str, chars: int) -> str:
    """``chars`` random characters of ``shape`` after a sentence holding the word "token": one
    unbroken word of hex digits, base64 characters or letters, or prose (words of a log line,
    "token", "key" and "password" among them)."""
    rng = random.Random(chars)
    head = "The token was not found in this dump: "
    if shape == "prose":
        words: list[str] = []
        size = 0
        while size < chars:
            words.append(rng.choice(PROSE))
            size += len(words[-1]) + 1
        return head + " ".join(words)[:chars]
    return head + "".join(rng.choices(ALPHABETS[shape], k=chars))


def clear_caches() -> None:
    """Empty every cache of the redaction module (whatever it keeps), so a text is new."""
    for value in vars(redact_module).values():
        if callable(getattr(value, "cache_clear", None)):
            value.cache_clear()


def playbook(chars: int, tag: str = "") -> Playbook:
    """Bullets of the kind ACE writes, about ``chars`` characters rendered; ``tag`` makes every
    bullet's text differ from another playbook's."""
    rng = random.Random(7)
    bullets: list[Bullet] = []
    size = 0
    while size < chars:
        n = len(bullets) + 1
        topic = rng.choice(TOPICS)
        content = (
            f"For {topic}{tag}, take the figures the question states for this period, convert "
            f"millions to units first, and round only the final value to {rng.randint(2, 4)} "
            f"decimals; the key check is that the inputs come from the same year."
        )
        bullet = Bullet(f"{SECTIONS[n % 5][:3]}-{n:05d}", SECTIONS[n % 5], content, n % 4, n % 2)
        bullets.append(bullet)
        size += len(bullet.render()) + 1
    return Playbook(bullets=tuple(bullets), next_id=len(bullets) + 1)


def _child(work: Callable[[], object], repeats: int, out: Connection) -> None:
    clear_caches()
    work()  # once to warm up (imports, compiled patterns), then timed with empty caches
    fastest = float("inf")
    for _ in range(repeats):
        clear_caches()
        started = time.process_time()
        work()
        fastest = min(fastest, time.process_time() - started)
    out.send(fastest)


def timed(work: Callable[[], object], limit: float, repeats: int = 1) -> float | None:
    """CPU seconds of one ``work`` in a child process: the fastest of ``repeats`` runs after a
    warm-up run (other work on the machine only ever slows a run down, so the fastest is the
    least disturbed); None when it ran past ``limit``."""
    receive, send = multiprocessing.Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(target=_child, args=(work, repeats, send))
    child.start()
    ready = receive.poll(limit)
    seconds = receive.recv() if ready else None
    if child.is_alive():
        child.kill()
    child.join()
    return seconds


def shown(seconds: float | None, limit: float) -> str:
    return f"> {limit:g} s" if seconds is None else f"{seconds:.4f} s"


def scaling(sizes: list[int], limit: float) -> None:
    checks: dict[str, Callable[[str], object]] = {
        "redact": redact,
        "screen": lambda text: copied_spans(text, [text]),
    }
    for shape in ("hex", "base64", "prose", "letters"):
        for name, check in checks.items():
            figures: list[float | None] = []
            for size in sizes:
                text = word(shape, size)
                repeats = max(3, 300_000 // size)  # small texts timed over many runs
                work = lambda t=text, c=check: c(t)  # type: ignore[misc]  # noqa: E731
                figures.append(timed(work, limit, repeats))
                ratio = ""
                if figures[0] and figures[-1] is not None and size != sizes[0]:
                    ratio = f"  ({figures[-1] / figures[0]:.1f}x the time of {sizes[0]:,})"
                per_kb = "" if figures[-1] is None else f"  {figures[-1] / size * 1e6:.3f} ms/KB"
                print(
                    f"{name:<6} {shape:<7} {size:>9,} chars: {shown(figures[-1], limit)}"
                    f"{per_kb}{ratio}",
                    flush=True,
                )


def question(samples: list[Sample], i: int) -> Sample:
    """The ``i``-th call's sample, its question made unique (no two calls send the same text)."""
    sample = samples[i % len(samples)]
    return replace(sample, question=f"Case {i}. {sample.question}")


def per_call(calls: int, playbook_chars: int) -> None:
    samples = list(get_task("formula").load().train)
    frozen = playbook(playbook_chars)
    prompts = {
        "same playbook": [generator_messages(frozen, question(samples, i)) for i in range(calls)],
        "distinct playbooks": [
            generator_messages(playbook(playbook_chars, f" (run {i})"), question(samples, i))
            for i in range(calls)
        ],
    }
    sample_prompt = prompts["same playbook"][0]
    chars = sum(len(str(m["content"])) for m in sample_prompt)
    print(f"prompt: {chars:,} characters (system prompt, playbook, context, question)")
    for name, messages in prompts.items():
        clear_caches()
        redaction = Redaction(True)
        started = time.process_time()
        for message_list in messages:
            redaction.messages(tuple(message_list), None)  # type: ignore[arg-type]
        seconds = time.process_time() - started
        print(f"{name:<20} {calls} calls: {seconds / calls * 1e6:8.1f} us CPU per call")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--limit", type=float, default=120.0, help="seconds per measurement")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--playbook-chars", type=int, default=8000)
    parser.add_argument("--parts", default="scaling,calls", help="scaling, calls or both")
    args = parser.parse_args()
    sizes = sorted(int(size) for size in args.sizes.split(","))
    if "scaling" in args.parts:
        scaling(sizes, args.limit)
    if "calls" in args.parts:
        per_call(args.calls, args.playbook_chars)


if __name__ == "__main__":
    main()
