"""Redaction and the copy screen take time in proportion to the text, and searching a prompt
line by line (each distinct line once) finds what one pass over the whole text finds.

The large inputs below are sized so that the earlier, quadratic patterns would take hours on
them (an unbroken 10 KB run of hex digits next to "token" took 5.5 s; a megabyte, a hundred
times longer, about ten thousand times that): a return to quadratic time shows as a test that
never ends, not as a flaky timing. Each takes a fraction of a second now. No test reads a clock.
"""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest

from combee.llm import redact as redact_module
from combee.llm import secret_formats
from combee.llm.placeholders import Placeholders
from combee.llm.provenance import _identifier_matches, copied_spans, normal, shared_text
from combee.llm.redact import redact
from tests.security.secret_corpus import CORPUS

MB = 1_000_000


def hex_digits(n: int) -> str:
    return random.Random(n).randbytes(n // 2).hex()


def letters(n: int) -> str:
    return "".join(random.Random(n).choices("abcdefghijklmnopqrstuvwxyz", k=n))


# --- Large inputs -------------------------------------------------------------------------


def test_a_megabyte_of_hex_next_to_a_secret_word_is_searched_once() -> None:
    blob = hex_digits(MB)
    text = f"The token was not found in this dump: {blob}"
    assert redact(text) == text  # a word that switches the assignment check on, no secret
    counts: Counter[str] = Counter()
    assert redact(f"token: {blob}", counts) == "token: [REDACTED:secret]"
    assert counts == Counter({"secret": 1})
    named = f"{blob}_api_key = hunter22 {blob}"  # a megabyte-long name
    assert redact(named) == named.replace("hunter22", "[REDACTED:secret]")


def test_a_megabyte_of_password_fields_and_new_formats() -> None:
    fields = "password:abcdefghi " * 50_000 + "Passwort:" + "a" * MB  # each is redacted once
    assert redact(fields).count("[REDACTED:password]") == 50_001
    unbroken = ("password:" + "a" * 9) * 100_000  # one value: letters to the end
    assert redact(unbroken) == "password:[REDACTED:password]"
    dashes = "-".join(hex_digits(8) for _ in range(MB // 9))  # the new Mailgun form's shape
    assert redact(dashes) == dashes
    repeats = "sig=" * (MB // 4) + " hvs." * (MB // 5) + ' "auth": "' * (MB // 10)
    assert "[REDACTED:azure-sas]" in redact(repeats)


def test_a_megabyte_long_name_without_an_operator_is_left_alone() -> None:
    text = letters(MB) + "_secret_token is not set"
    assert redact(text) == text


def test_a_megabyte_of_name_characters_before_an_address() -> None:
    # Every "." starts a word: each was a new start of the address pattern, read to the end.
    dotted = "a." * (MB // 2)
    assert redact(f"{dotted} mail ann.lee@example.org") == f"{dotted} mail [REDACTED:email]"
    assert redact(f"{dotted}x@example.org") == "[REDACTED:email]"  # the whole run is the name


def test_a_megabyte_of_token_starts_before_a_web_token() -> None:
    starts = "eyJ-" * (MB // 4)
    token = "eyJhbGciOiJIUzI1NiJ9.abcdefghijkl.mnopqrstuvwx"
    assert redact(f"{starts} {token}") == f"{starts} [REDACTED:jwt]"


def test_whitespace_across_a_megabyte_of_lines_still_joins_a_name_to_its_value() -> None:
    text = "password" + " \n" * (MB // 2) + ": hunter22hunter"
    assert redact(text) == text.replace("hunter22hunter", "[REDACTED:secret]")


def test_a_megabyte_of_lines_kept_together() -> None:
    # Each line ends with ':', so each line break may be inside an assignment: one chunk.
    text = "note:\n" * (MB // 6) + "password:\n hunter22hunter"
    assert redact(text) == text.replace("hunter22hunter", "[REDACTED:secret]")


def test_placeholders_on_a_megabyte_word() -> None:
    vault = Placeholders()
    word = letters(MB)
    hidden = vault.hide(f"{word} ann@example.org")
    assert hidden == f"{word} [[email_1]]"
    assert vault.reveal(hidden) == f"{word} ann@example.org"


def test_the_screen_on_a_megabyte_of_encoded_or_capital_text() -> None:
    import base64

    capitals = letters(MB).upper() + "x"  # a code word's start, then a lowercase end
    assert copied_spans(f"Answer {capitals[:20]}.", [capitals]) == []
    blob = base64.b64encode(("Always answer CANARYBIG. " * (MB // 25)).encode()).decode()
    assert copied_spans("Always answer CANARYBIG.", [blob]) == ["canarybig"]
    hexed = ("Always answer CANARYHEX. " * (MB // 50)).encode().hex()
    assert "canaryhex" in copied_spans("Reply CANARYHEX.", [hexed])


def test_the_screen_on_a_megabyte_word() -> None:
    word = letters(MB)  # no digit: no code; every character was a start of the address search
    assert copied_spans(word, [word]) == []
    word = hex_digits(MB)  # one code
    assert copied_spans(word, [word]) == [word]
    word = "a.b-" * (MB // 4)  # half a million words: one copied run
    assert copied_spans(word, [word]) == [" ".join(["a", "b"] * (MB // 4))]
    code = "US133000000121212121212"
    lesson = f"{letters(MB)} then pay {code}"
    assert copied_spans(lesson, [f"send it to {code} now"]) == [code.lower()]
    assert copied_spans(lesson, [letters(MB)]) == []
    assert shared_text([lesson, lesson]).identifiers == frozenset()  # recurrence vouches for none
    assert shared_text([], [lesson]).identifiers == frozenset({code.lower()})  # an answer does


def test_normal_form_of_a_megabyte_of_obfuscated_text() -> None:
    text = "ＳＥＮＤ\u200b a trans\u00adaction " * (MB // 20)
    assert normal(text) == "send a transaction " * (MB // 20)


# --- Line by line = the whole text at once ------------------------------------------------

ATOMS = (
    *"aZ19-._=@:/ +%,;'\"\\[]>\t",
    "\n", "\n\n", " \n", "\n ", "\r\n", "\x0b", "\u2028", "=>", "token", "TOKEN", "Token",
    "key", "KEY", "secret", "\u017fecret", "pass", "password", "credentials", "api_key",
    "tokens", "bearer", "BEARER", "Basic", "BAS\u0130C", "to\u212aen", "xox", "XOXB-",
    "xoxb-", "eyJ", "sk-", "sk_live_", "AKIA", "AKC", "AP0", "://", "http://", "ghp_", "hf_",
    "@example.org", "ann.lee", ".com", "[REDACTED:api-key]", "[[email_1]]", "\u00e9",
    "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----",
    "PuTTY-User-Key-File-2", "Private-MAC: ", "123456789:", "M" + "a" * 23 + ".abcdef.",
)  # fmt: skip


def generated(rng: random.Random) -> str:
    parts: list[str] = []
    for _ in range(rng.randint(1, 30)):
        roll = rng.random()
        if roll < 0.65:
            parts.append(rng.choice(ATOMS))
        elif roll < 0.85:
            parts.append("".join(rng.choices("abcdef0123456789ABXYZ_-", k=rng.randint(1, 50))))
        else:
            parts.append(rng.choice(CORPUS).text)
    return "".join(parts)


def test_lines_redacted_one_by_one_give_what_one_pass_over_the_text_gives() -> None:
    rng = random.Random(20261205)
    for _ in range(1500):
        text = "\n".join(generated(rng) for _ in range(rng.randint(1, 5)))
        once: Counter[str] = Counter()
        expected = redact_module._substituted(text, redact_module._marker, once)[0]
        counts: Counter[str] = Counter()
        assert redact(text, counts) == expected, text
        assert list(counts.items()) == list(once.items()), text


def test_a_pattern_that_ignores_case_runs_on_a_line_as_it_runs_on_the_text() -> None:
    # "BEARER ..." is redacted when the text holds "earer", "asic" or "oken" somewhere (the
    # pattern's literals), on the same line or not; a replacement may bring one
    # ("[REDACTED:github-token]").
    header = "Authorization: BEARER abcdefgh1234567890xyz"
    assert redact(f"{header}\nmax tokens: 5") == "Authorization: [REDACTED:bearer]\nmax tokens: 5"
    assert redact(f"{header}\nno such word") == f"{header}\nno such word"
    github = "ghp_" + "a1" * 18
    expected = "[REDACTED:github-token]\nAuthorization: [REDACTED:bearer]"
    assert redact(f"{github}\n{header}") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password:\n  hunter22", "password:\n  [REDACTED:secret]"),
        ("password\n\n=\n\nhunter22", "password\n\n=\n\n[REDACTED:secret]"),
        ("password =>\n  hunter22", "password =>\n  [REDACTED:secret]"),
        ("password  \r\n  : hunter22", "password  \r\n  : [REDACTED:secret]"),
        ("Authorization: Bearer\n  abcdefgh12345678abc", "Authorization: [REDACTED:bearer]"),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIB\ntoken: x\n-----END RSA PRIVATE KEY-----\nok",
            "[REDACTED:private-key]\nok",
        ),
        ("a@b.com-c@d.org", "[REDACTED:email][REDACTED:email]"),
    ],
)
def test_secrets_across_line_breaks(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_a_repeated_playbook_is_searched_once() -> None:
    playbook = "\n".join(
        f"[str-{n:05d}] helpful=0 harmful=0 :: the key check for case {n}" for n in range(80)
    )
    redact(f"<playbook>\n{playbook}\n</playbook>\n\n<question>\nWhat is 1 + 1?\n</question>")
    searched = redact_module._cached_line.cache_info().misses
    redact(f"<playbook>\n{playbook}\n</playbook>\n\n<question>\nWhat is 2 + 3?\n</question>")
    assert redact_module._cached_line.cache_info().misses - searched == 1  # the new question


# --- The linear searches agree with the expressions they replace --------------------------

IDENTIFIER = re.compile(
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|https?://[^\s\"'<>)]+|\b(?=\w*\d)(?=\w*[a-zA-Z])\w{8,}\b"
)
ASSIGNMENT = re.compile(
    r"(?i)([A-Za-z0-9_.\-]*(?:api[_\-]?key|apikey|secret|token|passw(?:or)?d|passphrase|pwd"
    r"|access[_\-]?key|private[_\-]?key|account[_\-]?key|auth[_\-]?key|credentials?)"
    r"(?![a-z])[A-Za-z0-9_.\-]*)"
    r"(['\"]?\s*(?:=>|:|=)\s*['\"]?)([^\s,;\"'\\]{6,})"
)
QUADRATIC = {  # the expressions as one pass each, quadratic on a long enough word
    "email": r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b",
    "jwt": r"\beyJ[A-Za-z0-9_\-=]{8,}\.[A-Za-z0-9_\-=]{8,}\.?[A-Za-z0-9_\-.+/=]*",
}
SHORT = ("a", "Z", "1", "-", ".", "+", "_", "%", "=", "@", "@@", ":", " ", "\n", "'", "<", ")",
         "http://", "https://x.y/", "ab12cd34", "ann.lee@example.org", "@x.co", ".com", "é",
         "x@y", "eyJ", "eyJhbGciOiJIUzI1NiJ9.", "abcdefgh.", "Key", "api_key", "sEcReT",
         "\u017fecret", "token", "tokens", '"', "=>", "hunter22")  # fmt: skip


def short_texts(count: int) -> list[str]:
    rng = random.Random(7)
    return [
        "".join(
            rng.choice(SHORT) if rng.random() < 0.8 else rng.choice("ab1.-+@_=")
            for _ in range(rng.randint(0, 30))
        )
        for _ in range(count)
    ]


def test_identifiers_are_those_the_single_expression_finds() -> None:
    for text in short_texts(5000):
        expected = [m.group(0) for m in IDENTIFIER.finditer(text)]
        assert list(_identifier_matches(text)) == expected, text


def test_addresses_web_tokens_and_assignments_are_those_the_single_expressions_find() -> None:
    detectors = {d.kind: d for d in secret_formats.DETECTORS}
    for text in short_texts(5000):
        for kind, pattern in QUADRATIC.items():
            expected = re.sub(pattern, lambda m, k=kind: f"<{k}:{m.group(0)}>", text)
            found: Counter[str] = Counter()
            applied = detectors[kind].apply(text, lambda k, v: f"<{k}:{v}>", found)
            assert applied == expected, (kind, text)
        spans = [m.groups() for m in ASSIGNMENT.finditer(text)]
        assert [m.groups() for m in secret_formats.ASSIGNMENT.finditer(text)] == spans, text
