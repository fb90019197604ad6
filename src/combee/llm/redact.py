"""Secret-like strings replaced before text leaves the process or lands on disk.

Every message the client sends and every reply it receives pass through :func:`redact`, so a
key, token, password or e-mail address in a task's data never reaches the endpoint, the response
cache, a reflection, a context version or a saved playbook. Each match becomes
``[REDACTED:<kind>]``. The patterns are our own: provider key formats (OpenAI, Anthropic, AWS,
Google, GitHub, GitLab, Slack, Stripe, Twilio, SendGrid, npm, PyPI, ...), private key blocks
(PEM, OpenSSH, PGP, PuTTY), JSON web tokens, Authorization headers, credentials in URLs,
assignments to a secret-named field (``AWS_SECRET_ACCESS_KEY=``, ``"SecretAccessKey": "..."``,
``AccountKey=``, ``password: ...``) and e-mail addresses.
"""

from __future__ import annotations

import base64
import functools
import re
from collections import Counter
from collections.abc import Callable
from urllib.parse import unquote, urlsplit

_PATTERNS: tuple[tuple[str, tuple[str, ...], re.Pattern[str]], ...] = (
    # (kind, literals one of which a match must contain, pattern): a text with none of the
    # literals is not searched, which keeps redaction cheap on long prompts. The formats are
    # those providers document for their keys; detect-secrets' detectors are the floor the
    # tests hold them to (tests/test_secret_formats.py).
    (
        "private-key",
        ("PRIVATE KEY",),
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
    ),
    (
        "private-key",
        ("PuTTY-User-Key-File",),
        re.compile(r"PuTTY-User-Key-File-\d.*?(?:Private-MAC: *\S+|\Z)", re.DOTALL),
    ),
    (
        "api-key",
        ("live", "test", "proj", "ant"),
        re.compile(r"\b(?:sk|pk|rk)[-_](?:live|test|proj|ant)[-_][A-Za-z0-9_\-]{16,}"),
    ),
    ("api-key", ("sk-",), re.compile(r"\bsk-[A-Za-z0-9_\-]{20,}")),
    (
        "github-token",
        ("gh", "github_pat_"),
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"),
    ),
    (
        "gitlab-token",
        ("gl", "GR1348941"),
        re.compile(
            r"\b(?:gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-[A-Za-z0-9_\-]{20,}"
            r"|GR1348941[A-Za-z0-9_\-]{20,})"
        ),
    ),
    ("slack-token", ("xox",), re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", re.IGNORECASE)),
    (
        "slack-webhook",
        ("hooks.slack.com",),
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/]+"),
    ),
    (
        "aws-key",
        ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        re.compile(r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
    ),
    ("google-key", ("AIza",), re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    ("hf-token", ("hf_",), re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    ("npm-token", ("npm_",), re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    ("pypi-token", ("pypi-",), re.compile(r"\bpypi-AgE[A-Za-z0-9_\-]{50,}")),
    ("sendgrid-key", ("SG.",), re.compile(r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}")),
    ("square-token", ("sq0",), re.compile(r"\bsq0(?:csp|atp|idp)-[0-9A-Za-z_\-]{22,}")),
    ("twilio-key", ("AC", "SK"), re.compile(r"\b(?:AC|SK)[0-9a-f]{32}\b")),
    ("mailchimp-key", ("-us",), re.compile(r"\b[0-9a-f]{32}-us\d{1,2}\b")),
    ("telegram-token", (":",), re.compile(r"\b\d{8,10}:[A-Za-z0-9_\-]{35}\b")),
    (
        "discord-token",
        (".",),
        re.compile(r"\b[MNO][A-Za-z0-9_\-]{23,25}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,}"),
    ),
    ("artifactory-token", ("AKC",), re.compile(r"\bAKC[A-Za-z0-9]{10,}\b")),
    (
        "artifactory-token",
        ("AP",),
        re.compile(r"\bAP[0-9A-F](?=[A-Za-z]*\d)[A-Za-z0-9]{8,}\b"),
    ),
    (
        "jwt",
        ("eyJ",),
        re.compile(r"\beyJ[A-Za-z0-9_\-=]{8,}\.[A-Za-z0-9_\-=]{8,}\.?[A-Za-z0-9_\-.+/=]*"),
    ),
    (
        "bearer",
        ("earer", "asic", "oken"),
        # Authorization headers: the credential after the scheme holds a digit, so prose
        # ("basic troubleshooting") is left alone.
        re.compile(
            r"(?i)(?<![A-Za-z])(?:bearer|basic|token)\s+(?=[A-Za-z0-9._~+/\-]*\d)"
            r"[A-Za-z0-9._~+/\-]{16,}=*"
        ),
    ),
    ("url-credentials", ("://",), re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+(?=@)")),
    (
        "email",
        ("@",),
        re.compile(r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b"),
    ),
)
_ASSIGNMENT_WORDS = ("key", "secret", "token", "pass", "pwd", "credential")
_ASSIGNMENT = re.compile(
    # A name that holds a secret word (AWS_SECRET_ACCESS_KEY, "SecretAccessKey", client_secret,
    # private_key_id, AccountKey, _authToken), then ':', '=' or '=>', then the value. A secret
    # word followed by more letters ("tokens", "passengers", "keyboard") does not count.
    r"(?i)([A-Za-z0-9_.\-]*(?:api[_\-]?key|apikey|secret|token|passw(?:or)?d|passphrase|pwd"
    r"|access[_\-]?key|private[_\-]?key|account[_\-]?key|auth[_\-]?key|credentials?)"
    r"(?![a-z])[A-Za-z0-9_.\-]*)"
    r"(['\"]?\s*(?:=>|:|=)\s*['\"]?)([^\s,;\"'\\]{6,})"
)


def redact(text: str, counts: Counter[str] | None = None) -> str:
    """``text`` with each secret-like string replaced; ``counts`` (when given) is increased by
    the number of replacements of each kind."""
    if not text:
        return text
    cleaned, found = _redacted(text)
    if counts is not None:
        counts.update(dict(found))
    return cleaned


@functools.lru_cache(maxsize=1024)
def _redacted(text: str) -> tuple[str, tuple[tuple[str, int], ...]]:
    """``text`` redacted and the replacements by kind; prompts repeat (a system prompt, a
    playbook), so each distinct text is searched once."""
    found: Counter[str] = Counter()
    return substitute(text, _marker, found), tuple(found.items())


def _marker(kind: str, value: str) -> str:
    return f"[REDACTED:{kind}]"


def substitute(text: str, replace: Callable[[str, str], str], found: Counter[str]) -> str:
    """``text`` with each secret-like string replaced by ``replace(kind, value)``; ``found``
    counts the replacements by kind."""
    for kind, literals, pattern in _PATTERNS:
        if not any(literal in text for literal in literals):
            continue
        text, count = pattern.subn(_replacer(kind, replace), text)
        if count:
            found[kind] += count
    lowered = text.lower()
    if any(word in lowered for word in _ASSIGNMENT_WORDS):
        text, count = _ASSIGNMENT.subn(lambda match: _secret_value(match, replace), text)
        if count:
            found["secret"] += count
    return text


def _replacer(kind: str, replace: Callable[[str, str], str]) -> Callable[[re.Match[str]], str]:
    return lambda match: replace(kind, match.group(0))


def _secret_value(match: re.Match[str], replace: Callable[[str, str], str]) -> str:
    value = match.group(3)
    if value.startswith("[REDACTED:") or value.startswith("[["):  # replaced by a pattern above
        return match.group(0)
    return f"{match.group(1)}{match.group(2)}{replace('secret', value)}"


def without_credentials(url: str | None) -> str | None:
    """``url`` with any ``user:password@`` removed, for messages, logs and ``config.json``."""
    if url is None:
        return None
    return re.sub(r"(?<=://)[^/\s@]+@", "", url)


def basic_auth(url: str | None) -> tuple[str | None, str | None]:
    """``url`` without its ``user:password@``, and the ``Authorization`` header value that sends
    them (HTTP Basic, in place of an API key); ``(url, None)`` when it holds none."""
    if url is None:
        return None, None
    parts = urlsplit(url)
    if parts.username is None:
        return url, None
    user, password = unquote(parts.username), unquote(parts.password or "")
    token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    return without_credentials(url), f"Basic {token}"
