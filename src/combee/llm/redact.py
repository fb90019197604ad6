"""Secret-like strings replaced before text leaves the process or lands on disk.

Every message the client sends and every reply it receives pass through :func:`redact`, so a
key, token, password or e-mail address in a task's data never reaches the endpoint, the response
cache, a reflection, a context version or a saved playbook. Each match becomes
``[REDACTED:<kind>]``. The patterns are our own: provider key prefixes, private key blocks, JSON
web tokens, credentials in URLs, ``password=...``-style assignments and e-mail addresses.
"""

from __future__ import annotations

import functools
import re
from collections import Counter

_PATTERNS: tuple[tuple[str, tuple[str, ...], re.Pattern[str]], ...] = (
    # (kind, literals one of which a match must contain, pattern): a text with none of the
    # literals is not searched, which keeps redaction cheap on long prompts.
    (
        "private-key",
        ("PRIVATE KEY",),
        re.compile(
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)",
            re.DOTALL,
        ),
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
    ("slack-token", ("xox",), re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
    ("aws-key", ("AKIA", "ASIA"), re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("google-key", ("AIza",), re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    ("hf-token", ("hf_",), re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    (
        "jwt",
        ("eyJ",),
        re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    ),
    ("url-credentials", ("://",), re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+(?=@)")),
    (
        "email",
        ("@",),
        re.compile(r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b"),
    ),
)
_ASSIGNMENT_WORDS = ("key", "secret", "token", "pass", "pwd", "auth")
_ASSIGNMENT = re.compile(
    r"(?i)\b(api[_-]?key|secret|token|password|passwd|pwd|access[_-]?key|auth)"
    r"(['\"]?\s*[:=]\s*['\"]?)([^\s,;\"'\\]{6,})"
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
    for kind, literals, pattern in _PATTERNS:
        if not any(literal in text for literal in literals):
            continue
        text, count = pattern.subn(f"[REDACTED:{kind}]", text)
        if count:
            found[kind] += count
    lowered = text.lower()
    if any(word in lowered for word in _ASSIGNMENT_WORDS):
        text, count = _ASSIGNMENT.subn(r"\1\2[REDACTED:secret]", text)
        if count:
            found["secret"] += count
    return text, tuple(found.items())


def without_credentials(url: str | None) -> str | None:
    """``url`` with any ``user:password@`` removed, for messages, logs and ``config.json``."""
    if url is None:
        return None
    return re.sub(r"(?<=://)[^/\s@]+@", "", url)
