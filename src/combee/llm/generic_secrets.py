"""Secrets in formats no rule of :mod:`combee.llm.secret_formats` names, found by structure.

- :class:`TokenShapes`: a word that is a vendor prefix, a separator and a random body of 16 or
  more letters and digits, 12 of them unbroken (``pul-…``, ``NRAK-…``, ``glsa_…``,
  ``AGE-SECRET-KEY-1…``), or a word of 24 or more that mixes lower case, upper case and digits
  at random (an AWS secret key, ``ATATT3…``), or a few capitals glued to such a body
  (``LTAI…``, ``EZAK…``). In ``NAME=value`` the value is judged alone; in a path, each part
  between slashes. Left alone: hex, and capitals with digits, without a prefix (commit hashes,
  checksums, IBANs, VINs, ULIDs), a short hash after a prefix (``ipython-input-1-3d95a2ed3d01``),
  hexadecimal groups (UUIDs), digests named by their algorithm (``sha384-…``), names people
  write (``aliyunsdkecs.request.v20140526.CreateVpcRequest``, ``Ernie4_5_MoePreTrainedModel``:
  words, or words glued to a hash or a number), base64 that encodes a file or readable text,
  and words over a kilobyte (data, not a key).
- :class:`NamedSecrets`: a value that reads as random after a name whose last part is a secret
  word, in any of the forms people write it (``NEW_RELIC_USER_KEY=``, ``"signingKey": "``,
  ``X-Api-Key:``, ``AWS secret key: …``, ``the token is …``). The assignment pattern of
  :mod:`combee.llm.secret_formats` runs first and takes every name it knows.

Both read their text once. Each counts what it reads in ``read`` (characters handed to a
search, plus characters measured), which the tests use to show their work grows in proportion
to the text.
"""

from __future__ import annotations

import re
from collections import Counter

from combee.llm.base64_payloads import encodes_a_payload
from combee.llm.secret_formats import FOLDS, Replace
from combee.llm.token_shape import HEX, Shape, hex_groups, shape

_WORD = re.compile(r"[A-Za-z0-9+/=_\-.~]{20,}")
_EDGE = "._-~"
_PARTS = re.compile(r"[_\-.~]")
_HEAD_MAX = 24
_LONGEST = 1024
_GLUED = re.compile(r"[A-Z]{2,8}")
_NAME = re.compile(r"[A-Za-z]+[0-9]*(?:[_.][A-Za-z]+[0-9]*)*")
"""An environment variable's or a setting's name, before "=" in a word."""
_HEAD = re.compile(r"([A-Za-z0-9]{1,12})-")
_PADDED = re.compile(r"(.)\1{5}")
"""Six of one character in a row: a padded count or a filler, which a random body holds by
chance about once in 10^6 (hex) or more (wider alphabets)."""
_DIGEST = re.compile(r"(?i)(?:md5|sha\d*|sha3|blake\d\w*|xxh\d*|crc\d*)\Z")


class TokenShapes:
    """Vendor-prefixed tokens and long random words (see the module's description)."""

    kind = "token"

    def __init__(self) -> None:
        self.read = 0

    def apply(self, text: str, replace: Replace, found: Counter[str]) -> str:
        pieces: list[str] = []
        done = 0
        self.read += len(text)
        for match in _WORD.finditer(text):
            for start, end in self._tokens(text, match.start(), match.end()):
                pieces += (text[done:start], replace(self.kind, text[start:end]))
                done = end
        if not pieces:
            return text
        found[self.kind] += len(pieces) // 2
        pieces.append(text[done:])
        return "".join(pieces)

    def _tokens(self, text: str, start: int, end: int) -> list[tuple[int, int]]:
        """The tokens in the word ``text[start:end]``: the word itself, or, in a path or a URL
        (a word with "/" that is not base64 of a file), its parts between slashes."""
        self.read += end - start
        if end - start > _LONGEST:
            return []
        before = text[max(0, start - 8) : start]
        if _digest(text[start:end]):
            return []
        if text.find("/", start, end) == -1 or encodes_a_payload(text[start:end], before):
            return [span] if (span := self._token(text, start, end)) else []
        spans = []
        at = start
        for part in text[start:end].split("/"):
            if len(part) >= 20 and (span := self._token(text, at, at + len(part))):
                spans.append(span)
            at += len(part) + 1
        return spans

    def _token(self, text: str, start: int, end: int) -> tuple[int, int] | None:
        if start > 0 and text[start - 1] == "\\":
            start += 1  # an escape's letter (the n of JSON's \n before a key) stays
        while start < end and text[start] in _EDGE:
            start += 1
        while end > start and text[end - 1] in _EDGE:
            end -= 1
        word = text[start:end]
        if len(word) > _LONGEST:
            return None
        equals = word.find("=", 1, -1)
        if equals != -1 and word[equals + 1] != "=" and _NAME.fullmatch(word, 0, equals):
            start += equals + 1  # NAME=value: the value is judged alone
        if end - start >= 20 and self._secret(text[start:end], text[max(0, start - 8) : start]):
            return start, end
        return None

    def _secret(self, word: str, before: str) -> bool:
        if hex_groups(word) or _digest(word):
            return False
        return self._prefixed(word) or self._random(word, before)

    def _prefixed(self, word: str) -> bool:
        """A vendor prefix (a letter first, at most 24 characters), a separator, and a random
        body; the body is taken after the prefix's first separator and after its last one."""
        if not word[0].isalpha():
            return False
        cuts = [cut.start() for cut in _PARTS.finditer(word, 0, _HEAD_MAX + 1)]
        if not cuts:
            return False
        for cut in dict.fromkeys((cuts[0], cuts[-1])):
            body = word[cut + 1 :]
            self.read += len(body)
            if _PADDED.search(body):
                continue  # a zero-padded count (an id such as tr-ad150e46cb9f0000000008)
            longest = _longest_part(body)
            if hex_groups(body) or len(longest) < (16 if HEX.issuperset(longest) else 12):
                # A UUID; parts as short as words (a pod's name, a file's); a short hash
                # (``ipython-input-1-3d95a2ed3d01``, a commit's first 12 characters)
                continue
            if shape(body).random(16, prefixed=True) and not _a_name(longest):
                return True
        return False

    def _random(self, word: str, before: str) -> bool:
        """Upper case, lower case and digits mixed at random over 24 or more characters, or
        a few capitals glued to a random body with lower case (``EZAK…``, ``LTAI…``; not a
        ULID's or a VIN's capitals and digits), in a word that is not base64 of a file or of
        text."""
        self.read += len(word)
        whole = shape(word)
        found = whole.classes == 3 and whole.random(24)
        if not found and whole.lower and (glued := _GLUED.match(word)) is not None:
            self.read += len(word)
            found = shape(word[glued.end() :]).random(20)
        return found and not encodes_a_payload(word, before)


def _longest_part(text: str) -> str:
    return max(_PARTS.split(text), key=len)


def _a_name(longest: str) -> bool:
    """Whether the longest part of a body reads as a name people wrote: words in mixed case
    (``CreateVpcRequest``, in ``aliyunsdkecs.request.v20140526.CreateVpcRequest``), or letters
    without a digit (``integrations``)."""
    part = shape(longest)
    if part.upper and part.lower:
        return part.name_like >= 0.85
    return not part.digits


def _digest(word: str) -> bool:
    """Whether ``word`` is a digest named by its algorithm, as subresource integrity and
    package lock files write it (``sha384-…``)."""
    head = _HEAD.match(word)
    return head is not None and _DIGEST.match(head.group(1)) is not None


_SECRET_WORD = re.compile(r"key|token|secret|passw(?:or)?d|pwd|passphrase|credentials?")
_NAME_GOES_ON = re.compile(r"[A-Za-z0-9_.\-]")
_VALUE = re.compile(
    r"""(?:\\?["'`])?[ \t]{0,4}(?:=>|:=|[:=]|(?<=[ \t])(?:is|was)(?=[ \t]))[ \t]{0,4}"""
    r"""(?:\\?["'`])?"""  # a quote may be escaped (JSON inside a JSON string)
    r"([A-Za-z0-9+/=_\-.~]++)"
)


class NamedSecrets:
    """Random-looking values after a secret-named key (see the module's description)."""

    kind = "named-secret"

    def __init__(self) -> None:
        self.read = 0

    def apply(self, text: str, replace: Replace, found: Counter[str]) -> str:
        pieces: list[str] = []
        done = 0
        at = 0
        # As long as text: the characters FOLDS maps are not ASCII, nor are those lower() grows
        folded = text.lower() if text.isascii() else text.translate(FOLDS).lower()
        self.read += len(text)
        while (word := _SECRET_WORD.search(folded, at)) is not None:
            self.read += word.end() - at
            at = word.end()
            if not self._last_part_of_a_name(text, word.start(), word.end()):
                continue
            value = _VALUE.match(text, at)
            if value is None:
                continue
            self.read += value.end() - at
            at = value.end()  # a secret word inside the value is part of it
            start, end = value.span(1)
            while end > start and text[end - 1] == ".":  # the end of a sentence
                end -= 1
            if end - start > _LONGEST:
                continue
            self.read += end - start
            found_value = text[start:end]
            if _keyed(shape(found_value)) and not _a_name(_longest_part(found_value)):
                pieces += (text[done:start], replace(self.kind, found_value))
                done = end
        self.read += len(text) - at
        if not pieces:
            return text
        found[self.kind] += len(pieces) // 2
        pieces.append(text[done:])
        return "".join(pieces)

    @staticmethod
    def _last_part_of_a_name(text: str, start: int, end: int) -> bool:
        """Whether the secret word at ``text[start:end]`` starts a word or a camel-case part
        (``signingKey``) and ends the name (``api_key_id`` names an identifier)."""
        if _NAME_GOES_ON.match(text, end):
            return False
        if start == 0 or not text[start - 1].isalpha():
            return True
        return text[start].isupper() and text[start - 1].islower()


def _keyed(value: Shape) -> bool:
    """Whether a value after a secret-named key is a secret: the name is evidence of its own,
    so the value need only read as random by the lower bar of a prefixed body, or mix lower
    case, upper case and digits over 20 characters or more with high entropy (the AWS docs'
    example key spells EXAMPLEKEY)."""
    if value.random(12, prefixed=True):
        return True
    return value.classes == 3 and value.length >= 20 and value.entropy >= 3.5


TOKEN_SHAPES = TokenShapes()
NAMED_SECRETS = NamedSecrets()
GENERIC = (TOKEN_SHAPES, NAMED_SECRETS)
"""Run after every named format and the assignment pattern, on what they left."""
GENERIC_KINDS = tuple(finder.kind for finder in GENERIC)
