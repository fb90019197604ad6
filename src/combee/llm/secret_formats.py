"""The secret formats :mod:`combee.llm.redact` looks for: each one's kind, the literals every
match holds, and a pattern that runs in time linear in the text."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

Replace = Callable[[str, str], str]
"""``replace(kind, value)``: what a secret-like ``value`` of ``kind`` becomes."""


class Detector:
    """One secret format: its kind, the literals one of which every match holds (a text with
    none of them is not searched, which keeps redaction cheap on long prompts), and its
    pattern. When the pattern has a group named ``secret``, only that group is replaced (the
    rest of the match is context the pattern needed to find it in one pass); a pattern with
    two alternatives names the other one's group ``word``."""

    def __init__(
        self,
        kind: str,
        literals: tuple[str, ...],
        pattern: re.Pattern[str],
        flag: int = 0,
        hint: str | None = None,
    ) -> None:
        self.kind = kind
        self.literals = literals
        self.pattern = pattern
        self.hint = None if hint is None else re.compile(hint)
        """A quick search for a part of every match, where the pattern itself is slow to
        search (it starts with no literal character)."""
        self.flag = flag
        """For a pattern that ignores case (so it may match where its literals are absent), its
        bit in :data:`Flags`; 0 for the others."""

    def present(self, text: str) -> bool:
        return any(map(text.__contains__, self.literals))

    def apply(self, text: str, replace: Replace, found: Counter[str]) -> str:
        if self.hint is not None and self.hint.search(text) is None:
            return text
        count = 0
        kind = self.kind

        def replaced(match: re.Match[str]) -> str:
            nonlocal count
            count += 1
            if "secret" not in match.re.groupindex:
                return replace(kind, match.group(0))
            start, end = match.span("secret")
            if start < 0:  # the secret is in the pattern's other alternative
                start, end = match.span("word")
            whole = match.string
            return (
                whole[match.start() : start]
                + replace(kind, whole[start:end])
                + whole[end : match.end()]
            )

        text = self.pattern.sub(replaced, text)
        if count:
            found[kind] += count
        return text


class Emails(Detector):
    """E-mail addresses: ``\\b[A-Za-z0-9._%+\\-]+@domain``, found in linear time.

    The pattern as one regular expression tries every word boundary of a long run of name
    characters and reads the run to its end from each; here each run that ends in ``@`` is read
    once, and the match starts, as the expression's would, at the run's first word boundary not
    before where the search resumed."""

    _RUN = re.compile(r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9._%+\-]++(?=@)")
    _DOMAIN = re.compile(r"@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b")
    _BOUNDARY = re.compile(r"\b")

    def __init__(self) -> None:
        super().__init__("email", ("@",), self._DOMAIN)

    def apply(self, text: str, replace: Replace, found: Counter[str]) -> str:
        pieces: list[str] = []
        done = 0  # where the search resumes: the end of the last match
        for run in self._RUN.finditer(text):
            at = run.end()
            if at <= done:
                continue
            boundary = self._BOUNDARY.search(text, max(run.start(), done), at)
            if boundary is None or boundary.start() >= at:
                continue
            domain = self._DOMAIN.match(text, at)
            if domain is None:
                continue
            start = boundary.start()
            pieces += (text[done:start], replace(self.kind, text[start : domain.end()]))
            done = domain.end()
        if not pieces:
            return text
        found[self.kind] += len(pieces) // 2
        pieces.append(text[done:])
        return "".join(pieces)


def _starting(first: str, width: int, rest: str, *, before: str = r"\w") -> re.Pattern[str]:
    """The pattern ``(?<!before)(?:first)rest`` (``\\b(?:first)rest`` by default), written to
    start with ``first``: the word-start check looks behind ``first``'s ``width`` characters
    instead of before them. A pattern that starts with a literal is searched by skipping to
    where that literal occurs; one that starts with a look-behind is tried at every character,
    about 18 times slower on a text where the literal occurs (a long dump holds most short
    literals by chance)."""
    return re.compile(rf"(?:{first})(?<!{before}{'.' * width}){rest}")


_NAME = r"[A-Za-z0-9_.\-]"
_PASSWORD_NAMES = """
password passwd passphrase passwort kennwort contraseña contrasena senha wachtwoord lösenord
losenord hasło haslo пароль 密码 密碼 パスワード 비밀번호 şifre sifre
"""
PASSWORD_WORDS: tuple[str, ...] = (
    *(
        form
        for word in _PASSWORD_NAMES.split()
        for form in dict.fromkeys((word, word.capitalize(), word.upper()))
    ),
    *("mot de passe", "Mot de passe", "MOT DE PASSE"),
)
"""A password field's name, in the forms it is written in, in several languages."""
_JWT = r"[A-Za-z0-9_\-=]"

MULTILINE: tuple[Detector, ...] = (
    # Private key blocks span lines: they are searched in the whole text, before the others.
    Detector(
        "private-key",
        ("PRIVATE KEY",),
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
    ),
    Detector(
        "private-key",
        ("PuTTY-User-Key-File",),
        re.compile(r"PuTTY-User-Key-File-\d.*?(?:Private-MAC: *\S+|\Z)", re.DOTALL),
    ),
)
DETECTORS: tuple[Detector, ...] = (
    # No match of these spans a line break, except through the whitespace after "Bearer" and
    # the like (see _BREAK_AFTER). The formats are those providers document for their keys;
    # detect-secrets' detectors are the floor the tests hold them to
    # (tests/security/test_secret_formats.py).
    Detector(
        "api-key",
        ("live", "test", "proj", "ant"),
        _starting("sk|pk|rk", 2, r"[-_](?:live|test|proj|ant)[-_][A-Za-z0-9_\-]{16,}"),
    ),
    Detector("api-key", ("sk-",), _starting("sk-", 3, r"[A-Za-z0-9_\-]{20,}")),
    Detector(
        "github-token",
        ("gh", "github_pat_"),
        _starting("g", 1, r"(?:h[pousr]_[A-Za-z0-9]{30,}|ithub_pat_[A-Za-z0-9_]{40,})"),
    ),
    Detector(
        "gitlab-token",
        ("gl",),
        _starting("gl", 2, r"(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-[A-Za-z0-9_\-]{20,}"),
    ),
    Detector("gitlab-token", ("GR1348941",), _starting("GR1348941", 9, r"[A-Za-z0-9_\-]{20,}")),
    Detector(
        "slack-token",
        ("xox",),
        _starting("[xX][oO][xX]", 3, r"(?i:[abposr]-[A-Za-z0-9\-]{10,})"),
        flag=1,
    ),
    Detector(
        "slack-webhook",
        ("hooks.slack.com",),
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/]+"),
    ),
    Detector(
        "aws-key",
        ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        _starting("A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA", 4, r"[0-9A-Z]{16}\b"),
    ),
    Detector("google-key", ("AIza",), _starting("AIza", 4, r"[0-9A-Za-z_\-]{35}")),
    Detector("hf-token", ("hf_",), _starting("hf_", 3, r"[A-Za-z0-9]{30,}")),
    Detector("npm-token", ("npm_",), _starting("npm_", 4, r"[A-Za-z0-9]{36}\b")),
    Detector("pypi-token", ("pypi-",), _starting("pypi-AgE", 8, r"[A-Za-z0-9_\-]{50,}")),
    Detector(
        "sendgrid-key",
        ("SG.",),
        _starting(r"SG\.", 3, r"[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}"),
    ),
    Detector("square-token", ("sq0",), _starting("sq0", 3, r"(?:csp|atp|idp)-[0-9A-Za-z_\-]{22,}")),
    Detector("twilio-key", ("AC", "SK"), _starting("AC|SK", 2, r"[0-9a-f]{32}\b")),
    Detector(
        "mailchimp-key",
        ("-us",),
        re.compile(r"\b[0-9a-f]{32}-us\d{1,2}\b"),
        hint=r"-us\d",
    ),
    Detector(
        "telegram-token",
        (":",),
        re.compile(r"\b\d{8,10}:[A-Za-z0-9_\-]{35}\b"),
        hint=r":(?<=\d{8}:)",
    ),
    Detector(
        "discord-token",
        (".",),
        re.compile(r"\b[MNO][A-Za-z0-9_\-]{23,25}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,}"),
        hint=r"\.[A-Za-z0-9_\-]{6}\.",
    ),
    Detector("artifactory-token", ("AKC",), _starting("AKC", 3, r"[A-Za-z0-9]{10,}\b")),
    # Three formats whose shape alone reads as innocent text (parts as short as words; groups
    # of capitals like a product code; a UUID), found by their prefix and exact layout.
    Detector("typeform-token", ("tfp_",), _starting("tfp_", 4, r"[A-Za-z0-9\-_.=]{40,}")),
    Detector(
        "1password-secret-key",
        ("A3-",),
        _starting(
            "A3-",
            3,
            r"[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})(?:-[A-Z0-9]{5}){3}\b",
        ),
    ),
    Detector(
        "launchdarkly-key",
        ("api-", "sdk-"),
        _starting(
            "api-|sdk-", 4, r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}\b"
        ),
    ),
    # Artifactory's encrypted passwords run to dozens of characters; a product code such as
    # APC1500MXBLK2 is not one.
    Detector(
        "artifactory-token",
        ("AP",),
        _starting("AP", 2, r"[0-9A-F](?=[A-Za-z]*\d)[A-Za-z0-9]{30,}\b"),
    ),
    Detector("mailgun-key", ("key-",), _starting("key-", 4, r"[0-9a-f]{32}\b")),
    Detector(
        "mailgun-key",
        ("-",),
        re.compile(r"\b[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8}\b"),
        hint=r"-[0-9a-f]{8}-[0-9a-f]{8}\b",
    ),
    Detector("stripe-webhook-secret", ("whsec_",), _starting("whsec_", 6, r"[A-Za-z0-9+/=]{24,}")),
    Detector("slack-app-token", ("xapp-",), _starting("xapp-", 5, r"\d-[A-Za-z0-9\-]{20,}")),
    Detector("shopify-token", ("shp",), _starting("shp", 3, r"(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b")),
    Detector("databricks-token", ("dapi",), _starting("dapi", 4, r"[a-f0-9]{32}(?:-\d+)?\b")),
    Detector("digitalocean-token", ("_v1_",), _starting("do[oprt]_v1_", 7, r"[a-f0-9]{64}\b")),
    Detector(
        "vault-token", ("hvs.", "hvb.", "hvr."), _starting(r"hv[sbr]\.", 4, r"[A-Za-z0-9_\-]{24,}")
    ),
    Detector("google-oauth-secret", ("GOCSPX-",), _starting("GOCSPX-", 7, r"[A-Za-z0-9_\-]{24,}")),
    Detector(
        "docker-auth",
        ('"auth"',),
        re.compile(r'"auth"\s*:\s*"(?P<secret>[A-Za-z0-9+/=]{8,})"'),
    ),
    Detector(
        "azure-sas",
        ("sig=",),
        _starting("sig=", 4, r"(?P<secret>[A-Za-z0-9%+/=]{20,})", before="[A-Za-z]"),
    ),
    Detector(
        "password",
        PASSWORD_WORDS,
        # A password field in any of several languages: a quoted value whole ("correct horse
        # battery staple"), else the next word when it holds a digit, a symbol or a capital
        # past its first letter, or runs to 6 characters ("password: visit the site" is left).
        re.compile(
            rf"(?:{'|'.join(map(re.escape, PASSWORD_WORDS))})['\"]?[^\S\n]*[:=：][^\S\n]*"
            r"(?:(?P<q>['\"])(?P<secret>[^'\"\n]{1,200})(?P=q)"
            r"|(?![\"'\[])(?=[^\s,;\"']{0,64}?[\d!@#$%^&*+=~_.\-]|[^\s,;\"']{6}"
            r"|[^\s,;\"']{1,64}?[A-Z])"
            r"(?P<word>[^\s,;\"']{3,}))"
        ),
    ),
    Detector(
        "jwt",
        ("eyJ",),
        # \beyJ[...]{8,}\.[...]{8,}\.?[...]*, tried once per run of token characters: from the
        # run's start, at its first "eyJ" after a word boundary (a later one in the same run
        # matches only if that one does).
        re.compile(
            rf"(?<!{_JWT})(?>{_JWT}*?\b(?=eyJ))"
            rf"(?P<secret>eyJ{_JWT}{{8,}}+\.{_JWT}{{8,}}+\.?[A-Za-z0-9_\-.+/=]*)"
        ),
        hint=r"\.",
    ),
    Detector(
        "bearer",
        ("earer", "asic", "oken"),
        # Authorization headers: the credential after the scheme holds a digit, so prose
        # ("basic troubleshooting") is left alone.
        _starting(
            "[bBtT]",
            1,
            r"(?i:earer|asic|oken)\s+(?=[A-Za-z0-9._~+/\-]*\d)[A-Za-z0-9._~+/\-]{16,}=*",
            before="[A-Za-z]",
        ),
        flag=2,
    ),
    Detector("url-credentials", ("://",), re.compile(r"://(?P<secret>[^/\s:@]+:[^/\s@]+)(?=@)")),
    Emails(),
)
ASSIGNMENT_WORDS = ("key", "secret", "token", "pass", "pwd", "credential")
ASSIGNMENT = re.compile(
    # A name that holds a secret word (AWS_SECRET_ACCESS_KEY, "SecretAccessKey", client_secret,
    # private_key_id, AccountKey, _authToken), then ':', '=' or '=>', then the value. A secret
    # word followed by more letters ("tokens", "passengers", "keyboard") does not count. The
    # name is the whole run of name characters, read once from its start (atomically: the
    # first secret word in it is enough).
    rf"(?i)(?<!{_NAME})((?>{_NAME}*?(?:api[_\-]?key|apikey|secret|token|passw(?:or)?d"
    r"|passphrase|pwd|access[_\-]?key|private[_\-]?key|account[_\-]?key|auth[_\-]?key"
    rf"|credentials?)(?![a-z])){_NAME}*+)"
    r"(['\"]?\s*(?:=>|:|=)\s*['\"]?)([^\s,;\"'\\]{6,})"
)
FOLDS = str.maketrans({"ſ": "s", "ı": "i", "İ": "i", "K": "k"})
"""What Python's case-insensitive matching also takes for 's', 'i' and 'k'."""
NAME_AFTER = re.compile(rf"(?i){_NAME}*+")
OPERATOR_AFTER = re.compile(rf"(?i){_NAME}*+['\"]?\s*(?:=>|:|=)")
KIND_ORDER = {
    kind: index
    for index, kind in reversed(
        list(enumerate([d.kind for d in (*MULTILINE, *DETECTORS)] + ["secret"]))
    )
}
