"""Secret-like strings replaced before text leaves the process or lands on disk.

Every message the client sends and every reply it receives pass through :func:`redact`, so a
key, token, password or e-mail address in a task's data never reaches the endpoint, the response
cache, a reflection, a context version or a saved playbook. Each match becomes
``[REDACTED:<kind>]``. The patterns are our own: provider key formats (OpenAI, Anthropic, AWS,
Google, GitHub, GitLab, Slack, Stripe, Twilio, SendGrid, Mailgun, Shopify, Vault, npm, PyPI,
...), private key blocks (PEM, OpenSSH, PGP, PuTTY), JSON web tokens, Authorization headers,
credentials in URLs, assignments to a secret-named field (``AWS_SECRET_ACCESS_KEY=``,
``"SecretAccessKey": "..."``, ``AccountKey=``, ``password: ...``), password fields in several
languages, and e-mail addresses. Formats no pattern names are found by their structure
(:mod:`combee.llm.generic_secrets`): a vendor prefix before a long random body, a long word
that mixes cases and digits at random, a random-looking value after a secret-named key.

The cost stays in proportion to the text. A prompt is mostly text that recurs from call to call
(the system prompt, the playbook), so a text is searched line by line and each distinct line
once (lines a secret may span stay together); and every pattern runs in time linear in the
text's length, however the text is made (one unbroken run of hex digits, a megabyte-long word).
"""

from __future__ import annotations

import base64
import functools
import re
from collections import Counter
from collections.abc import Sequence
from urllib.parse import unquote, urlsplit

from combee.llm.generic_secrets import GENERIC, GENERIC_KINDS
from combee.llm.secret_formats import (
    ASSIGNMENT,
    ASSIGNMENT_WORDS,
    DETECTORS,
    FOLDS,
    KIND_ORDER,
    MULTILINE,
    NAME_AFTER,
    OPERATOR_AFTER,
    Detector,
    Replace,
)

Found = tuple[tuple[str, int], ...]
Flags = int
"""Bits, for the three patterns that ignore case (Slack tokens 1, Authorization headers 2,
assignments 4): whether the text held the pattern's literals when its turn came."""
_ASSIGNMENT_FLAG = 4
_KIND_ORDER = {
    **KIND_ORDER,
    **{kind: max(KIND_ORDER.values()) + 1 + i for i, kind in enumerate(GENERIC_KINDS)},
}


def redact(text: str, counts: Counter[str] | None = None) -> str:
    """``text`` with each secret-like string replaced; ``counts`` (when given) is increased by
    the number of replacements of each kind."""
    if not text:
        return text
    cleaned, found = _redacted(text)
    if counts is not None:
        counts.update(dict(found))
    return cleaned


def substitute(text: str, replace: Replace, found: Counter[str]) -> str:
    """``text`` with each secret-like string replaced by ``replace(kind, value)``; ``found``
    counts the replacements by kind."""
    if not _redacted(text)[1]:  # nothing to replace (known line by line, mostly cached)
        return text
    return _substituted(text, replace, found)[0]


def _substituted(
    text: str,
    replace: Replace,
    found: Counter[str],
    detectors: Sequence[Detector] = (*MULTILINE, *DETECTORS),
    forced: Flags = 0,
) -> tuple[str, Flags]:
    """Every detector in turn over the whole text (each over the text the previous ones left),
    then the assignments; a detector whose literals the text lacks is skipped, unless it
    ignores case and its bit is in ``forced``. Returns the text and its :data:`Flags`."""
    flags = 0
    for detector in detectors:
        if detector.present(text):
            flags |= detector.flag
        elif not detector.flag & forced:
            continue
        text = detector.apply(text, replace, found)
    lowered = text.lower()
    if any(word in lowered for word in ASSIGNMENT_WORDS):
        flags |= _ASSIGNMENT_FLAG
    if (flags | forced) & _ASSIGNMENT_FLAG and _assignable(text):
        text, count = ASSIGNMENT.subn(lambda match: _secret_value(match, replace), text)
        if count:
            found["secret"] += count
    for finder in GENERIC:
        text = finder.apply(text, replace, found)
    return text, flags


def _assignable(text: str) -> bool:
    """Whether a secret word in ``text`` is followed, after the rest of its name, by ':', '='
    or '=>' (case as the assignment pattern ignores it): the pattern cannot match otherwise,
    and this is quicker to tell than trying the pattern at every word."""
    folded = text.translate(FOLDS).lower()  # as long as text: "İ" is mapped to "i" first
    for word in ASSIGNMENT_WORDS:
        at = folded.find(word)
        read = 0  # where the name read last ended: another occurrence before it is in that name
        while at != -1:
            end = at + len(word)
            if end > read:
                if OPERATOR_AFTER.match(text, end):
                    return True
                read = NAME_AFTER.match(text, end).end()  # type: ignore[union-attr]
            at = folded.find(word, end)
    return False


def _marker(kind: str, value: str) -> str:
    return f"[REDACTED:{kind}]"


def _secret_value(match: re.Match[str], replace: Replace) -> str:
    value = match.group(3)
    if value.startswith("[REDACTED:") or value.startswith("[["):  # replaced by a pattern above
        return match.group(0)
    return f"{match.group(1)}{match.group(2)}{replace('secret', value)}"


# --- Line by line, each distinct line once ------------------------------------------------
#
# Redacting the lines of a text one by one gives what redacting the whole text gives, when:
#
# - no match spans a line break: the private keys are redacted in the whole text first (they
#   come first in the order anyway), and a line break inside whitespace that an Authorization
#   header or an assignment may read across keeps its lines together (_joined);
# - each pattern runs on a line exactly when it would run on the whole text. A pattern is
#   skipped when the text (as the patterns before it left it) lacks its literals; for a
#   pattern that must contain one of them this is decided by the line itself, but the three
#   patterns that ignore case match "XOXB-..." or "BEARER ..." only in a text that also holds
#   "xox" or "earer" somewhere. So a line is redacted knowing whether the whole text holds
#   those literals (three flags, found by redacting the lines: see _redacted_now), and only
#   when the line could match such a pattern at all (_Line.relevant) do the flags become part
#   of what its result is cached under.

# Whitespace with a line break in it, read across by an Authorization header after its scheme
# or by an assignment around its ':', '=' or '=>': its line breaks keep their lines together.
# Found from the line breaks (a search for a literal character is fast; one that must try
# every character is not): a break right after the scheme or operator (_BREAK_AFTER), after
# trailing spaces (_BREAK_AFTER_SPACE, then looked at), or before an operator (_BREAK_BEFORE).
_BREAK_AFTER = re.compile(
    r"\n(?:(?<=[=:]\n)|(?<==>\n)|(?i:(?<=bearer\n)|(?<=basic\n)|(?<=token\n)))\s*+"
)
_BREAK_AFTER_SPACE = re.compile(r"\n(?<=[^\S\n]\n)\s*+")
_BREAK_BEFORE = re.compile(r"\n[^\S\n]*+(?=[=:])")
_READ_ACROSS = re.compile(r"(?:[=:]|=>|(?i:bearer|basic|token))\Z")
_FOLDED_WORDS = ((1, ("xox",)), (2, ("bearer", "basic", "token")), (4, ASSIGNMENT_WORDS))
_CACHED_LINE_CHARS = 16_000
_CACHED_TEXT_CHARS = 64_000


def _joined(text: str) -> list[tuple[int, int]]:
    """The spans, from a line break to the end of its whitespace, whose line breaks no cut may
    fall on (see _BREAK_AFTER), in order."""
    spans = [(m.start(), m.end()) for m in _BREAK_AFTER.finditer(text)]
    for space in _BREAK_AFTER_SPACE.finditer(text):
        start = _space_before(text, space.start(), "\n")
        if text[start - 1 : start] != "\n" and _READ_ACROSS.search(text, max(0, start - 6), start):
            spans.append(space.span())
    for before in _BREAK_BEFORE.finditer(text):
        start = _space_before(text, before.start())
        spans.append((text.index("\n", start), before.end()))
    spans.sort()
    return spans


def _space_before(text: str, end: int, stop: str = "") -> int:
    """Where the whitespace that ends at ``end`` starts (not reading back past ``stop``)."""
    start = end
    while start and text[start - 1].isspace() and text[start - 1] != stop:
        start -= 1
    return start


def _chunks(text: str) -> list[str]:
    """``text`` cut at every line break no match can span: ``"\\n".join`` gives it back."""
    lines = text.split("\n")
    if len(lines) == 1:
        return lines
    spans = _joined(text)
    if not spans:
        return lines
    chunks: list[str] = []
    pending: list[str] = []  # the pieces of the chunk under way
    done = 0
    for start, end in spans:
        if end <= done:
            continue
        start = max(start, done)
        lines = text[done:start].split("\n")
        if len(lines) > 1:
            chunks.append("".join([*pending, lines[0]]))
            chunks += lines[1:-1]
            pending = []
        pending += (lines[-1], text[start:end])
        done = end
    lines = text[done:].split("\n")
    chunks.append("".join([*pending, lines[0]]))
    return chunks + lines[1:]


class _Line:
    """One line (or lines kept together) and its redactions, by the flags that matter."""

    __slots__ = ("literals", "relevant", "results", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        lowered = text.lower()
        folded = text.translate(FOLDS).lower()
        self.literals = sum(
            flag
            for flag, literals in ((1, ("xox",)), (2, ("earer", "asic", "oken")))
            if any(literal in text for literal in literals)
        ) | (_ASSIGNMENT_FLAG if any(w in lowered for w in ASSIGNMENT_WORDS) else 0)
        """The :data:`Flags` of the line as it is (before any replacement)."""
        self.relevant = sum(
            flag for flag, words in _FOLDED_WORDS if any(w in folded for w in words)
        )
        """The patterns that ignore case that could match here at all: only their flags
        change the line's redaction."""
        self.results: dict[Flags, tuple[str, Found, Flags]] = {}

    def redacted(self, flags: Flags) -> tuple[str, Found, Flags]:
        """The line redacted as a line of a text with these :data:`Flags`, the replacements,
        and the line's own flags."""
        key = flags & self.relevant
        result = self.results.get(key)
        if result is None:
            found: Counter[str] = Counter()
            cleaned, own = _substituted(self.text, _marker, found, DETECTORS, key)
            result = self.results[key] = (cleaned, tuple(found.items()), own)
        return result


@functools.lru_cache(maxsize=4096)
def _cached_line(text: str) -> _Line:
    return _Line(text)


def _line(text: str) -> _Line:
    return _cached_line(text) if len(text) <= _CACHED_LINE_CHARS else _Line(text)


def _redacted(text: str) -> tuple[str, Found]:
    """``text`` redacted and the replacements by kind."""
    if len(text) <= _CACHED_TEXT_CHARS:
        return _cached_text(text)
    return _redacted_now(text)


@functools.lru_cache(maxsize=256)
def _cached_text(text: str) -> tuple[str, Found]:
    return _redacted_now(text)


def _redacted_now(text: str) -> tuple[str, Found]:
    found: Counter[str] = Counter()
    for detector in MULTILINE:
        if detector.present(text):
            text = detector.apply(text, _marker, found)
    lines = [_line(chunk) for chunk in _chunks(text)]
    flags = 0
    for line in lines:
        flags |= line.literals
    # The flags the lines report are the whole text's once they agree with the flags the
    # lines were redacted with: the first flag depends on no other, the second on the first,
    # the third on the first two; so at most four rounds, from a guess that is right unless a
    # replacement took a literal away or brought one ("[REDACTED:github-token]" holds "oken").
    for _ in range(4):
        results = [line.redacted(flags) for line in lines]
        seen = 0
        for result in results:
            seen |= result[2]
        if seen == flags:
            break
        flags = seen
    else:  # pragma: no cover - cannot happen (see above); the whole text is still right
        cleaned, _ = _substituted(text, _marker, found)
        return cleaned, _ordered(found)
    for _, line_found, _ in results:
        for kind, count in line_found:
            found[kind] += count
    return "\n".join([result[0] for result in results]), _ordered(found)


def _ordered(found: Counter[str]) -> Found:
    """The replacements by kind, in the order the patterns come (as one pass would count)."""
    return tuple(sorted(found.items(), key=lambda item: _KIND_ORDER[item[0]]))


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
