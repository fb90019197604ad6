"""Text and identifiers in canonical form: what the copy screen compares.

The copy screen (:mod:`combee.llm.provenance`) keeps out a lesson that names an identifier (an
account number, an IBAN, a card or phone number, an e-mail address, a link or a domain) found
in untrusted data and not in trusted text. A copy is the same identifier however it is
written, so each side is reduced to canonical keys before they are compared:

- **Look.** :func:`fold` applies NFKC, drops format characters (zero-width spaces and the
  like) and replaces each letter or digit that Unicode's confusables data (UTS #39, as shipped
  by ``confusable_homoglyphs``) lists as a look-alike of an ASCII one by that ASCII character,
  in the same case where one is listed (Cyrillic "С", Greek "Α" and Cherokee "Ꭺ" read "C",
  "A", "A"). NFKC alone leaves Cyrillic and Greek look-alikes as they are. Keys are in lower
  case.
- **Separators.** Groups of a printed identifier are joined: an IBAN or a code printed in
  groups of four (``US13 3000 0000 1212``, with spaces, hyphens, dots or slashes, one kind
  throughout) is the IBAN written solid; a number in groups (``+1 (555) 010-4477``,
  ``4111-1111-1111-1111``) is its digits; a code whose groups each hold a digit or are written
  in capitals (``ZX99-LEAK-0042``) is the code written solid.
- **Spelled out.** ``[dot]``, ``(at)``, ``{.}``, ``[@]`` and the like between two word
  characters are the punctuation they name, ``hxxp://`` is ``http://``; ``dot`` and ``at``
  written as words (``www dot host dot com``, ``ann at host dot com``) join the parts around
  them only when the result is a domain of the Public Suffix List (a plain ``at`` makes an
  address only where the same run also spells ``dot``): "the dot product" is no domain,
  "look at example.com" is no address.
- **Domains.** A name is a domain when the Public Suffix List (``tldextract``'s bundled
  snapshot, read offline) says its last labels are a public suffix and a label stands before
  them; "e.g." and "3.14159" are not domains. A two-label name whose suffix is a file type the
  standard library's MIME table knows (``main.py``, ``setup.sh``) is taken for a file name. A
  link (and a name of a domain) also stands for its host and its registrable domain, so a
  lesson that names only the domain of a planted link copies it. An e-mail address stands for
  itself only: its domain is often a mail service many people share, which would tie every
  address there to a planted one.
- **Numbers.** A number is an identifier only in an identifier's shape: 9 to 19 digits written
  solid, or in groups with an international ``+``, a parenthesised area code, one kind of
  hyphen, slash or dot throughout (three groups or more), or spaces (three groups or more of
  2 to 4 digits, or a card number that passes the Luhn check). Thousands groupings
  (``1,000,000``, ``1 000 000``), decimals, dates, years and lists of years are numbers, not
  identifiers. A number also stands for its last nine digits, so a phone number written with
  and without its country code or trunk prefix is one identifier.

Code words (six or more capitals, a canary) are compared the same way: folded, and with the
hyphens, dots, slashes or underscores between capital groups removed (``CANARY-WORD``,
``C.A.N.A.R.Y``), single capitals spaced out (``C A N A R Y``) joined.

Every search here takes time in proportion to the text's length: each expression starts only
at a word's first character, reads with possessive quantifiers (nothing is read twice), and
checks what follows a match in Python rather than with a lookahead that would make the engine
retry from inside a long run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from combee.llm.code_words import RARE, code_words, continues, word_keys
from combee.llm.domains import bare_domain_keys, domain_keys
from combee.llm.lookalikes import fold

# --- Finders ------------------------------------------------------------------------------

_BRACKETED = re.compile(r"[\[({<][ \t]*+(dot|at|\.|@)[ \t]*+[\])}>]", re.IGNORECASE)
"""``[dot]``, ``(at)``, ``{.}``, ``[@]``: punctuation written out between brackets."""
_HXXP = re.compile(r"hxxp(?=s?://)", re.IGNORECASE)
_SPACES = " \t"
_NEAR = 8
"""At most this many spaces or tabs stand between a bracketed joiner and the parts it joins."""


def _undefanged(text: str) -> str:
    """``text`` with bracketed joiners between two word characters written as the punctuation
    they name (the spaces around them dropped), and ``hxxp://`` as ``http://``."""
    if "hxxp" in text.lower():
        text = _HXXP.sub("http", text)
    pieces: list[str] = []
    done = 0
    for match in _BRACKETED.finditer(text):
        left, right = match.start(), match.end()
        while left > done and match.start() - left < _NEAR and text[left - 1] in _SPACES:
            left -= 1
        while right < len(text) and right - match.end() < _NEAR and text[right] in _SPACES:
            right += 1
        if left <= done or not _is_word(text[left - 1]) or right >= len(text):
            continue
        if not _is_word(text[right]):
            continue
        pieces += [text[done:left], "." if match.group(1).lower() in ("dot", ".") else "@"]
        done = right
    return "".join([*pieces, text[done:]]) if pieces else text


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


# Identifiers: an e-mail address ``[\w.+-]+@[\w-]+(?:\.[\w-]+)+``, a link, or an account
# number, key or code of letters and digits, whichever starts first (an address before a link
# before a code where they start together). The address is not searched as one expression:
# from every character of a long word it would read the word to its end looking for "@"
# (quadratic time). Each run of address characters followed by "@" is read once instead.
_ADDRESS_NAME = re.compile(r"(?<![\w.+-])[\w.+-]++(?=@)")
_ADDRESS_DOMAIN = re.compile(r"@[\w-]++(?:\.[\w-]++)++")
_LINK_OR_CODE = re.compile(
    r"https?://[^\s\"'<>)]+"  # link
    r"|\b(?=\w*\d)(?=\w*[a-zA-Z])\w{8,}\b"  # account numbers, keys, codes: letters and digits
)


def identifier_matches(text: str) -> Iterator[re.Match[str] | tuple[int, int]]:
    """The e-mail addresses, links and letter-and-digit codes in ``text``, in order and
    without overlaps, as one regular expression's ``finditer`` would find them (the address
    first of the three alternatives), in time linear in the text. An address comes as its
    span, the others as their matches."""
    addresses: list[tuple[int, int, int]] = []  # (start of the name, its "@", end of the domain)
    for name in _ADDRESS_NAME.finditer(text):
        domain = _ADDRESS_DOMAIN.match(text, name.end())
        if domain is not None:
            addresses.append((name.start(), name.end(), domain.end()))
    done = 0  # where the search resumes: the end of the last identifier
    index = 0
    other = _LINK_OR_CODE.search(text)
    while True:
        while index < len(addresses) and addresses[index][1] <= done:
            index += 1
        if other is not None and other.start() < done:
            other = _LINK_OR_CODE.search(text, done)
        # An address matches from any character of its name at or after ``done``.
        start = max(addresses[index][0], done) if index < len(addresses) else None
        if start is not None and (other is None or start <= other.start()):
            done = addresses[index][2]
            yield (start, done)
        elif other is not None:
            done = other.end()
            yield other
        else:
            return


_LINK_END = ".,;:!?/"
"""Punctuation after a link that ends a sentence, not the link (and a closing slash)."""


def _link_keys(link: str) -> tuple[str, tuple[str, ...]]:
    """A link's canonical form (no scheme, no closing punctuation or slash) and its keys."""
    rest = link.split("://", 1)[1].rstrip(_LINK_END).lower()
    host = re.split(r"[/?#]", rest, maxsplit=1)[0].rsplit("@", 1)[-1]
    host = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return rest, (rest, *domain_keys(host))


_BARE_DOMAIN = re.compile(r"[^\W_](?<![\w.@/\\:%+-][^\W_])[\w-]*+(?:\.[^\W_][\w-]*+)++")
"""Dotted names (the Public Suffix List decides which are domains); not a path's part, an
address's domain, a link's host or a name that continues with ``@``."""

_SPELLED = re.compile(
    r"[\w+-]++(?:[.@][\w+-]++)*+(?:[ \t]++(?:dot|at)[ \t]++[\w+-]++(?:[.@][\w+-]++)*+)++",
    re.IGNORECASE,
)
"""Parts joined by ``dot`` or ``at`` written as words (matched from a part's first character)."""
_SPELLED_JOIN = re.compile(r"[ \t]++(dot|at)[ \t]++", re.IGNORECASE)
_LONGEST_PART = 254
"""No part of an address or a domain is longer (a domain's 253 characters, a dot)."""


def _is_part(char: str) -> bool:
    return char.isalnum() or char in "_.@+-"


def _spelled_runs(text: str) -> Iterator[re.Match[str]]:
    """The runs of parts joined by spelled-out ``dot``/``at``, found from each join: the part
    before it is read back (at most :data:`_LONGEST_PART` characters), the run forward."""
    done = 0
    for join in _SPELLED_JOIN.finditer(text):
        if join.start() < done:
            continue
        start = join.start()
        while start > done and join.start() - start <= _LONGEST_PART and _is_part(text[start - 1]):
            start -= 1
        if start == join.start() or (start > 0 and _is_part(text[start - 1])):
            continue  # no part before the join, or one too long to name anything
        run = _SPELLED.match(text, start)
        if run is not None and run.end() > join.start():
            done = run.end()
            yield run


_GROUP4 = r"(?:[A-Z0-9]{4}|(?=[a-z]{0,3}\d)[a-z0-9]{4})"
_PRINTED = re.compile(
    rf"[A-Za-z](?<![^\W_][A-Za-z])[A-Za-z]\d{{2}}(?P<sep> ?[-./] ?| )"
    rf"(?:{_GROUP4}(?P=sep)){{1,6}}{_GROUP4}(?:(?P=sep)[A-Za-z0-9]{{1,4}})?"
)
"""An IBAN (or a code of its shape) printed in groups of four, one separator throughout."""

_CODE_CHAIN = re.compile(
    r"[A-Za-z0-9](?<![^\W_][A-Za-z0-9])(?<![-./][A-Za-z0-9])[A-Za-z0-9]*+"
    r"(?P<sep>[-./])[A-Za-z0-9]++(?:(?P=sep)[A-Za-z0-9]++)*+"
)
"""Groups joined by one kind of hyphen, dot or slash (which ones make a code: Python)."""

_DIGIT_CHAIN = re.compile(
    r"[+(\d](?<![\w.,+\-/][+(\d])"  # an international "+", an area code or a group
    r"(?:(?<=\+)[ ]?(?:\(\d{1,5}\)|\d{1,8}+)|(?<=\()\d{1,5}\)|(?<=\d)\d{0,7}+)"
    r"(?:(?:[ ]?[-./][ ]?|[ ])(?:\(\d{1,5}\)|\d{1,8}+))++"
)
"""Digit groups with separators between them (which make an identifier: Python)."""
_SOLID_DIGITS = re.compile(r"\d(?<![\w.,\-/]\d)\d{8,}+")
_SEPARATOR = re.compile(r"[ ]?[-./][ ]?|[ ]")


@dataclass(frozen=True)
class Found:
    """An identifier in a text: where it is, how it reads canonically, what it stands for."""

    start: int
    end: int
    shown: str
    """Its canonical form (what a report shows)."""
    keys: tuple[str, ...]
    """What it is compared by: its canonical form and what it vouches for (a link's host and
    registrable domain, a number's last nine digits)."""


def _digit_keys(digits: str) -> tuple[str, ...]:
    return (digits,) if len(digits) <= 9 else (digits, digits[-9:])


def _luhn(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char) * (2 if index % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


def _is_years(groups: list[str]) -> bool:
    return all(len(g) == 4 and 1800 <= int(g) <= 2199 for g in groups)


def _number_identifier(chain: str) -> str | None:
    """The digits of a chain of digit groups if it has an identifier's shape."""
    groups = re.findall(r"\d+", chain)
    digits = "".join(groups)
    if chain.startswith(("+", "00")):  # international: "+" or its dialled form "00"
        return digits if 8 <= len(digits) <= 15 else None
    if "(" in chain:
        return digits if 9 <= len(digits) <= 15 else None
    separators = set(_SEPARATOR.findall(chain))
    if len(separators) != 1 or not 9 <= len(digits) <= 19 or len(groups) < 3:
        return None
    if len(groups[0]) <= 3 and all(len(g) == 3 for g in groups[1:]):
        return None  # a thousands grouping: 1 000 000, 1.000.000
    if _is_years(groups):
        return None
    if separators != {" "}:
        return digits
    if 13 <= len(digits) <= 19 and _luhn(digits):
        return digits  # a card number
    if len(digits) <= 15 and all(2 <= len(g) <= 4 for g in groups[1:]) and len(groups[0]) <= 4:
        return digits  # a phone number printed with spaces
    return None


def _spelled(match: re.Match[str]) -> Iterator[Found]:
    """The addresses and domains a run joined by spelled-out ``dot``/``at`` makes."""
    text = match.group(0)
    pieces = _SPELLED_JOIN.split(text)  # part, join word, part, join word, ...
    parts, joins = pieces[0::2], [word.lower() for word in pieces[1::2]]
    spelled_dot = "dot" in joins
    # Runs of parts joined by "dot": each a name; "at" stands between two runs.
    runs: list[list[str]] = [[parts[0]]]
    for join, part in zip(joins, parts[1:], strict=True):
        if join == "dot":
            runs[-1].append(part)
        else:
            runs.append([part])
    names = [".".join(run) for run in runs]
    start = match.start()
    for index, name in enumerate(names):
        keys = domain_keys(name) if len(runs[index]) > 1 else ()
        if index > 0 and spelled_dot:
            domain = domain_keys(name)
            if domain:
                address = f"{names[index - 1].lower()}@{domain[0]}"
                yield Found(start, match.end(), address, (address,))
                continue
        if keys:
            yield Found(start, match.end(), keys[0], keys)


_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[Tt]|$)")
"""A date (and time) as ISO 8601 writes it: a date, not a code."""


def _code_chain(match: re.Match[str]) -> Found | None:
    """A chain of groups is a code when it holds letters and digits, at least eight of them,
    and each group holds a digit or is written in capitals."""
    chain = match.group(0)
    joined = chain.replace(match.group("sep"), "")
    if len(joined) < 8 or joined.isdigit() or joined.isalpha() or not joined.isalnum():
        return None
    if _ISO_DATE.match(chain) is not None:
        return None
    if not all(group.isupper() or not group.isalpha() for group in chain.split(match.group("sep"))):
        return None
    return Found(match.start(), match.end(), joined.lower(), (joined.lower(),))


def _finds(text: str) -> Iterator[Found]:
    """Every identifier candidate in ``text`` (already folded and undefanged), overlaps
    included."""
    for found in identifier_matches(text):
        if isinstance(found, tuple):
            start, end = found
            address = text[start:end].lower()
            yield Found(start, end, address, (address,))
        elif found.group(0).startswith("http"):
            shown, keys = _link_keys(found.group(0))
            yield Found(found.start(), found.end(), shown, keys)
        else:
            code = found.group(0).lower()
            yield Found(found.start(), found.end(), code, (code,))
    for match in _PRINTED.finditer(text):
        if not continues(text, match.end()):
            joined = re.sub(r"[^0-9A-Za-z]", "", match.group(0)).lower()
            yield Found(match.start(), match.end(), joined, (joined,))
    for match in _CODE_CHAIN.finditer(text):
        if not continues(text, match.end()) and (chain := _code_chain(match)) is not None:
            yield chain
    for match in _DIGIT_CHAIN.finditer(text):
        if continues(text, match.end()):
            continue
        digits = _number_identifier(match.group(0))
        if digits is not None:
            yield Found(match.start(), match.end(), digits, _digit_keys(digits))
    for match in _SOLID_DIGITS.finditer(text):
        digits = match.group(0)
        if len(digits) <= 19 and not continues(text, match.end()):
            yield Found(match.start(), match.end(), digits, _digit_keys(digits))
    for match in _BARE_DOMAIN.finditer(text):
        end = match.end()
        if end < len(text) and text[end] in "@_":
            continue
        keys = bare_domain_keys(match.group(0))
        if keys:
            yield Found(match.start(), end, keys[0], keys)
    for match in _spelled_runs(text):
        yield from _spelled(match)


def identifiers(text: str) -> list[Found]:
    """The identifiers in ``text`` (folded with :func:`fold`), in order, each once: where two
    candidates overlap, the one that starts first (then the longer) is the identifier."""
    plain = _undefanged(text)
    found: list[Found] = []
    end = -1
    for candidate in sorted(_finds(plain), key=lambda f: (f.start, -f.end)):
        if candidate.start >= end:
            found.append(candidate)
            end = candidate.end
        elif (candidate.start, candidate.end) == (found[-1].start, found[-1].end) and all(
            candidate.shown != other.shown for other in found[-2:]
        ):
            found.append(candidate)  # a second reading of the same span (a spelled-out run)
    return found


def identifier_keys(text: str) -> set[str]:
    """Every key of every identifier in ``text`` (folded with :func:`fold`)."""
    return {key for found in identifiers(text) for key in found.keys}


__all__ = [
    "RARE",
    "Found",
    "code_words",
    "continues",
    "domain_keys",
    "fold",
    "identifier_keys",
    "identifier_matches",
    "identifiers",
    "word_keys",
]
