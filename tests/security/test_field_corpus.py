"""Secrets in formats no named rule knows are redacted, and the token-like strings a task needs
are not: measured on the corpus of :mod:`tests.security.field_corpus` (formats from gitleaks'
and TruffleHog's public rules, values generated from a seed)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from combee.llm import generic_secrets
from combee.llm import redact as redact_module
from combee.llm.placeholders import Placeholders
from combee.llm.redact import redact
from tests.security.field_corpus import (
    CODE_NAMES,
    CODE_NAMES_TAKEN,
    FORMATS,
    INNOCENT,
    RANDOM_IDENTIFIERS,
    Format,
    core,
)
from tests.security.secret_corpus import ORDINARY


def leaks(item: Format) -> bool:
    return core(item.secret) in redact(item.text)


def test_the_corpus_is_as_broad_as_promised() -> None:
    assert len({f.name for f in FORMATS}) == len(FORMATS) >= 100
    assert len(set(INNOCENT)) == len(INNOCENT) >= 100
    assert {f.source.split(":")[0] for f in FORMATS} == {"gitleaks", "trufflehog"}


def test_at_least_95_percent_of_the_formats_are_redacted() -> None:
    missed = [f.name for f in FORMATS if leaks(f)]
    assert len(missed) <= len(FORMATS) * 0.05, missed
    assert missed == []


def test_at_most_2_percent_of_the_innocent_strings_are_changed() -> None:
    changed = [text for text in INNOCENT if redact(text) != text]
    assert len(changed) <= len(INNOCENT) * 0.02, changed
    assert changed == []
    assert [text for text in ORDINARY if redact(text) != text] == []


def test_names_in_code_are_left_alone() -> None:
    assert [text for text in CODE_NAMES if redact(text) != text] == []
    # The limit: short words broken by digits read as random
    assert all(redact(text) != text for text in CODE_NAMES_TAKEN)


def test_the_generic_detectors_find_what_the_named_rules_miss(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(redact_module, "GENERIC", ())
    redact_module._cached_text.cache_clear()
    redact_module._cached_line.cache_clear()
    unnamed = [f for f in FORMATS if leaks(f)]
    monkeypatch.undo()
    redact_module._cached_text.cache_clear()
    redact_module._cached_line.cache_clear()
    assert len(unnamed) >= 80  # most of the corpus has no rule of its own
    assert [f.name for f in unnamed if leaks(f)] == []


@pytest.mark.parametrize(
    "text",
    [
        "NEW_RELIC_USER_KEY=NRAK-4HQ7ZK2M9XW3PT8RV6YB1NC5DJA",
        "AGE_IDENTITY=AGE-SECRET-KEY-1QYZ9X8GF2TVDW0S3JN54KHCE6MUA7LQPZRY9X8GF2TVDW0S3JN54KHCE6MU",
        "GRAFANA_SA=glsa_Xq3LmP9vR2tK8wN4zB6cY1hJ5dF7gS0a_1f2e3d4c",
        "AWS secret key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        '{"signingKey": "q8Zr3Lw0Xv5Tn2Pb7Mk4Ys9Hd"}',
        "X-Api-Key: 7f3kq9x2m8p4v6w1z5t0r3n8b2c4",
        "the deploy token is 9fK2mQ7xL4pW8zR3tV6nB1cY5hD0",
    ],
)
def test_a_secret_next_to_a_secret_named_key_is_redacted(text: str) -> None:
    cleaned = redact(text)
    assert "[REDACTED:" in cleaned and text[-10:] not in cleaned


def test_a_name_before_the_value_is_kept() -> None:
    assert redact("NEW_RELIC_USER_KEY=NRAK-4HQ7ZK2M9XW3PT8RV6YB1NC5DJA") == (
        "NEW_RELIC_USER_KEY=[REDACTED:token]"
    )
    assert redact("trace_id=8b0666bffebbf3359bd500e44163d329") == (
        "trace_id=8b0666bffebbf3359bd500e44163d329"
    )


def test_counts_and_placeholders_cover_the_new_kinds() -> None:
    token = "pul-7c1e9b04f3a85d26e0b9a17c4d3f68521a9c7e3b"
    counts: Counter[str] = Counter()
    redact(f"use {token} and AWS secret key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", counts)
    assert counts == Counter({"token": 1, "named-secret": 1})
    assert redact("pul-" + "3f9a0c" * 6 + "8e2d") != "[REDACTED:token]"  # repeats: not random
    vault = Placeholders()
    hidden = vault.hide(f"pass {token} to the CLI; api key: 4hQ7zK2m9Xw3Pt8Rv6Yb")
    assert hidden == "pass [[token_1]] to the CLI; api key: [[named-secret_1]]"
    assert vault.reveal(hidden) == f"pass {token} to the CLI; api key: 4hQ7zK2m9Xw3Pt8Rv6Yb"


def test_random_identifiers_without_a_prefix_are_taken_for_keys() -> None:
    # By their characters alone a KSUID, a document id or a content id is a key: the price of
    # catching keys whose format no rule names. They are redacted, and say so in the docs.
    assert all(redact(text) == "[REDACTED:token]" for text in RANDOM_IDENTIFIERS)


def test_the_generic_detectors_run_after_the_named_ones() -> None:
    assert redact("ghp_" + "a1B2" * 9) == "[REDACTED:github-token]"
    assert redact("AWS_SECRET_ACCESS_KEY=" + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY") == (
        "AWS_SECRET_ACCESS_KEY=[REDACTED:secret]"
    )
    assert generic_secrets.GENERIC_KINDS == ("token", "named-secret")


@pytest.mark.parametrize("before", ["\n", "\t", '"', "\\", " "])
def test_a_secret_inside_a_json_string_is_redacted_and_the_json_stays_valid(before: str) -> None:
    """A model's structured reply that repeats a secret: after an escape (``\\n``), or a
    secret-named key written inside the string (``\\"api_key\\": \\"...\\"``)."""
    leaked = []
    for item in FORMATS:
        reply = json.dumps({"reasoning": f"x{before}{item.text}{before}y"})
        cleaned = redact(reply)
        json.loads(cleaned)  # still one valid JSON object
        if core(item.secret) in cleaned:
            leaked.append(item.name)
    assert leaked == []


def test_the_gateways_ids_and_padded_counts_are_not_taken_for_keys() -> None:
    """A trace id quoted in a reflector's prompt or a lesson stays whole, as a random part and
    a count, in the form the gateway writes and in the earlier one without the hyphen."""
    import secrets

    from combee.serve.conversations import new_id

    written = [new_id("tr") for _ in range(500)]
    earlier = [f"tr-{secrets.token_hex(6)}{n:010x}" for n in range(1, 500)]
    quoted = [f"Lesson of trace {trace_id}." for trace_id in written + earlier]
    assert [text for text in quoted if redact(text) != text] == []
