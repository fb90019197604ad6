"""Seeded synthetic lessons for the retention benchmark.

Each lesson teaches one specific, checkable rule tied to a unique made-up name (``the Quorvex
adjustment``), so whether it survived an aggregation is a string search in the playbook. The
rules come from several unrelated families (formulas, units, dates, tool calls, naming, limits),
each with its own wording, and the reflection around the rule is as long and as noisy as a real
reflector's answer: reasoning, the error, its root cause, the approach and the insight, with the
rule stated once, somewhere in the middle.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from combee.core.types import Reflection

_ONSETS = ("br", "k", "qu", "v", "z", "tr", "m", "d", "sl", "gr", "p", "th", "n", "f", "h", "cl")
_VOWELS = ("a", "o", "e", "i", "u", "ai", "ei", "ou")
_CODAS = ("rn", "x", "l", "th", "sk", "m", "nd", "r", "v", "st", "z", "k")


def made_up_name(rng: random.Random, taken: set[str]) -> str:
    """A pronounceable word that no other name of the set contains or is contained in, so a
    search for one name never finds another."""
    while True:
        parts = [rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(rng.randint(1, 2))]
        word = ("".join(parts) + rng.choice(_CODAS)).capitalize()
        folded = word.casefold()
        clash = any(folded in other.casefold() or other.casefold() in folded for other in taken)
        if len(word) >= 5 and not clash:
            taken.add(word)
            return word


@dataclass(frozen=True)
class Lesson:
    """One rule, the name that identifies it and the reflection that carries it."""

    name: str
    family: str
    rule: str
    reflection: Reflection


def _formula(rng: random.Random, name: str) -> tuple[str, str]:
    factor = rng.choice(("1.37", "0.82", "2.15", "0.965", "1.08"))
    metric = rng.choice(("net margin", "working-capital ratio", "coverage ratio", "yield spread"))
    return (
        f"the {name} adjustment: before reporting the {metric}, multiply it by {factor} and round "
        "to two decimals",
        f"The {metric} was reported raw.",
    )


def _units(rng: random.Random, name: str) -> tuple[str, str]:
    unit = rng.choice(("kilopascal", "nautical mile", "troy ounce", "kilowatt-hour", "hectare"))
    digits = rng.choice(("three significant figures", "one decimal", "a whole number"))
    return (
        f"the {name} convention: quantities in {unit}s are converted to SI base units first and "
        f"reported with {digits}",
        f"The answer mixed {unit}s with SI units.",
    )


def _dates(rng: random.Random, name: str) -> tuple[str, str]:
    form = rng.choice(("YYYY-MM-DD", "DD.MM.YYYY", "ISO week (YYYY-Www)", "Unix seconds"))
    zone = rng.choice(("UTC", "the customer's local zone", "the ledger's zone (UTC+2)"))
    return (
        f"the {name} date rule: every date in a {name} record is written as {form} in {zone}",
        "A date was written in the wrong format.",
    )


def _tools(rng: random.Random, name: str) -> tuple[str, str]:
    tool = rng.choice(("search_flights", "get_user_details", "cancel_reservation", "refund"))
    arg = rng.choice(("a confirmation_id", "the payment_method_id", "dry_run=true", "a reason"))
    return (
        f"the {name} precondition: call {tool} only after a {name} check, and always pass {arg}",
        f"{tool} was called without its precondition.",
    )


def _naming(rng: random.Random, name: str) -> tuple[str, str]:
    prefix = rng.choice(("acct_", "tmp-", "X", "v2/"))
    case = rng.choice(("snake_case", "kebab-case", "UPPER_CASE"))
    return (
        f"the {name} naming rule: identifiers of {name} objects start with '{prefix}' and use "
        f"{case}",
        "An identifier broke the naming rule.",
    )


def _limits(rng: random.Random, name: str) -> tuple[str, str]:
    cap = rng.choice(("3", "5", "12", "40"))
    what = rng.choice(("retries", "items per page", "open tickets", "seats per booking"))
    return (
        f"the {name} limit: never exceed {cap} {what} for a {name} account; ask before going over",
        f"The answer went past the allowed number of {what}.",
    )


FAMILIES: dict[str, Callable[[random.Random, str], tuple[str, str]]] = {
    "formula": _formula,
    "units": _units,
    "dates": _dates,
    "tools": _tools,
    "naming": _naming,
    "limits": _limits,
}

_NOISE = (
    "I re-read the question twice and checked the inputs against the context before answering.",
    "The arithmetic itself was fine; every intermediate value matched a manual recomputation.",
    "The playbook had nothing on this case, so the answer relied on general knowledge.",
    "Formatting of the final answer followed the requested style otherwise.",
    "Other parts of the trajectory, such as reading the table, were handled correctly.",
    "It is easy to miss because the context mentions it only in passing.",
    "A quick check against the gold answer shows the gap comes from this step alone.",
    "No tool errors or timeouts were involved; the mistake is one of knowledge, not execution.",
)


def _noise(rng: random.Random, count: int) -> str:
    return " ".join(rng.sample(_NOISE, count))


def make_lessons(count: int, *, seed: int = 0) -> list[Lesson]:
    """``count`` lessons with distinct names, families in rotation, all reproducible from
    ``seed``."""
    rng = random.Random(seed)
    taken: set[str] = set()
    families = list(FAMILIES)
    rng.shuffle(families)
    lessons = []
    for index in range(count):
        family = families[index % len(families)]
        name = made_up_name(rng, taken)
        rule, error = FAMILIES[family](rng, name)
        fields = {
            "reasoning": f"{_noise(rng, 2)} The task involved a {name} case. {_noise(rng, 1)}",
            "error_identification": f"{error} {_noise(rng, 1)}",
            "root_cause_analysis": (
                f"The generator did not know {rule}. {_noise(rng, 2)} Without that rule the "
                "answer looks plausible, which is why it slipped through."
            ),
            "correct_approach": (
                f"Recognise a {name} case from the question, then apply the rule before the "
                f"final answer. {_noise(rng, 1)}"
            ),
            "key_insight": rng.choice(
                (
                    f"Remember {rule}.",
                    f"{name} cases follow a rule of their own (see the root cause); apply it.",
                    f"Check the domain conventions first: {rule}.",
                )
            ),
            "bullet_tags": [],
        }
        reflection = Reflection(sample_id=f"lesson-{index:03d}", fields=fields, correct=False)
        lessons.append(Lesson(name, family, rule, reflection))
    return lessons


def retained(lessons: list[Lesson], playbook_text: str) -> list[str]:
    """The names of ``lessons`` that appear in ``playbook_text`` (case-insensitive)."""
    folded = playbook_text.casefold()
    return [lesson.name for lesson in lessons if lesson.name.casefold() in folded]
