"""Secret-like strings replaced before text leaves the process or lands on disk.

Every message the client sends and every reply it receives pass through :func:`redact`, so a
key, token, password or e-mail address in a task's data never reaches the endpoint, the response
cache, a reflection, a context version or a saved playbook. Each match becomes
``[REDACTED:<kind>]``. The patterns are our own: provider key prefixes, private key blocks, JSON
web tokens, credentials in URLs, ``password=...``-style assignments and e-mail addresses.
"""

from __future__ import annotations

import re
from collections import Counter

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "private-key",
        re.compile(
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)",
            re.DOTALL,
        ),
    ),
    ("api-key", re.compile(r"\b(?:sk|pk|rk)[-_](?:live|test|proj|ant)[-_][A-Za-z0-9_\-]{16,}")),
    ("api-key", re.compile(r"\bsk-[A-Za-z0-9_\-]{20,}")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
    ("aws-key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("google-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    ("hf-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
    ("url-credentials", re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+(?=@)")),
    (
        "email",
        re.compile(r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b"),
    ),
)
_ASSIGNMENT = re.compile(
    r"(?i)\b(api[_-]?key|secret|token|password|passwd|pwd|access[_-]?key|auth)"
    r"(['\"]?\s*[:=]\s*['\"]?)([^\s,;\"'\\]{6,})"
)


def redact(text: str, counts: Counter[str] | None = None) -> str:
    """``text`` with each secret-like string replaced; ``counts`` (when given) is increased by
    the number of replacements of each kind."""
    if not text:
        return text
    for kind, pattern in _PATTERNS:
        text, found = pattern.subn(f"[REDACTED:{kind}]", text)
        if found and counts is not None:
            counts[kind] += found
    text, found = _ASSIGNMENT.subn(r"\1\2[REDACTED:secret]", text)
    if found and counts is not None:
        counts["secret"] += found
    return text


def without_credentials(url: str | None) -> str | None:
    """``url`` with any ``user:password@`` removed, for messages, logs and ``config.json``."""
    if url is None:
        return None
    return re.sub(r"(?<=://)[^/\s@]+@", "", url)
