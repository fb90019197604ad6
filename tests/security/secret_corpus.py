"""Secrets in the formats people have, as they appear in data: each entry is how a key shows
up in a question, a config dump, a log line or a tool's output, and the part of it that must
never leave the process. Generated from a seed (no real key is written anywhere)."""

from __future__ import annotations

import random
import string
from dataclasses import dataclass

_rng = random.Random(20261203)
ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"


def chars(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


@dataclass(frozen=True)
class Planted:
    name: str
    text: str
    """The secret in its surroundings."""
    secret: str
    """What must not appear anywhere outside the process."""


def _entry(name: str, secret: str, template: str = "{}") -> Planted:
    return Planted(name, template.format(secret), secret)


AWS_SECRET = chars(B64, 40)
PEM_BODY = "\n".join(chars(B64, 64) for _ in range(4))

CORPUS: tuple[Planted, ...] = (
    _entry("openai project key", "sk-proj-" + chars(URLSAFE, 48), "OPENAI_API_KEY={}"),
    _entry("openai legacy key", "sk-" + chars(ALNUM, 20) + "T3BlbkFJ" + chars(ALNUM, 20)),
    _entry("anthropic key", "sk-ant-api03-" + chars(URLSAFE, 40), "key: {}"),
    _entry("aws access key id", "AKIA" + chars(UPPER, 16), "aws_access_key_id = {}"),
    _entry("aws temporary key id", "ASIA" + chars(UPPER, 16)),
    _entry("aws secret env", AWS_SECRET, "AWS_SECRET_ACCESS_KEY={}"),
    _entry("aws secret ini", chars(B64, 40), "aws_secret_access_key = {}"),
    _entry("aws secret json", chars(B64, 40), '{{"SecretAccessKey": "{}"}}'),
    _entry("github classic token", "ghp_" + chars(ALNUM, 36)),
    _entry("github oauth token", "gho_" + chars(ALNUM, 36)),
    _entry("github fine-grained token", "github_pat_" + chars(ALNUM + "_", 82)),
    _entry("gitlab personal token", "glpat-" + chars(URLSAFE, 20)),
    _entry("gitlab runner token", "glrt-" + chars(URLSAFE, 24)),
    _entry("slack bot token", "xoxb-" + chars(string.digits, 12) + "-" + chars(ALNUM, 24)),
    _entry("slack user token", "xoxp-" + chars(string.digits, 12) + "-" + chars(ALNUM, 24)),
    _entry(
        "slack webhook",
        "https://hooks.slack.com/services/T"
        + chars(UPPER, 8)
        + "/B"
        + chars(UPPER, 8)
        + "/"
        + chars(ALNUM, 24),
    ),
    _entry("stripe live secret", "sk_live_" + chars(ALNUM, 24)),
    _entry("stripe restricted key", "rk_live_" + chars(ALNUM, 24)),
    _entry("google api key", "AIza" + chars(URLSAFE, 35)),
    _entry("gcp private key id", chars(HEX, 40), '"private_key_id": "{}",'),
    _entry(
        "gcp private key",
        "-----BEGIN PRIVATE KEY-----\\n" + chars(B64, 64) + "\\n-----END PRIVATE KEY-----\\n",
        '"private_key": "{}",',
    ),
    _entry(
        "azure storage key",
        chars(B64, 86) + "==",
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={};EndpointSuffix=core.windows.net",
    ),
    _entry(
        "bearer header", chars(URLSAFE, 8) + "1" + chars(URLSAFE, 31), "Authorization: Bearer {}"
    ),
    _entry("basic auth header", chars(B64, 30) + "9=", "Authorization: Basic {}"),
    _entry(
        "json web token",
        "eyJhbGciOiJIUzI1NiJ9." + chars(URLSAFE, 40) + "." + chars(URLSAFE, 43),
    ),
    _entry("huggingface token", "hf_" + chars(ALNUM, 34)),
    _entry("npm token", "npm_" + chars(ALNUM, 36)),
    _entry("npm registry auth", chars(ALNUM, 36), "//registry.npmjs.org/:_authToken={}"),
    _entry("pypi token", "pypi-AgEIcHlwaS5vcmc" + chars(URLSAFE, 70)),
    _entry("sendgrid key", "SG." + chars(URLSAFE, 22) + "." + chars(URLSAFE, 43)),
    _entry("twilio key", "SK" + chars(HEX, 32)),
    _entry("mailchimp key", chars(HEX, 32) + "-us14"),
    _entry("square oauth secret", "sq0csp-" + chars(URLSAFE, 43)),
    _entry("telegram bot token", chars(string.digits, 9) + ":" + chars(URLSAFE, 35)),
    _entry(
        "discord bot token",
        "M" + chars(URLSAFE, 23) + "." + chars(URLSAFE, 6) + "." + chars(URLSAFE, 27),
    ),
    _entry("artifactory token", "AKC" + chars(ALNUM, 60)),
    _entry("database url", "hunter2" + chars(ALNUM, 8), "postgres://admin:{}@db.internal:5432/app"),
    _entry("password field", "Tr0ub4dor&3" + chars(ALNUM, 4), "password: {}"),
    _entry("client secret", chars(URLSAFE, 32), "client_secret={}"),
    _entry(
        "rsa private key",
        "-----BEGIN RSA PRIVATE KEY-----\n" + PEM_BODY + "\n-----END RSA PRIVATE KEY-----",
    ),
    _entry(
        "openssh private key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n" + PEM_BODY + "\n-----END OPENSSH PRIVATE KEY-----",
    ),
    _entry(
        "pgp private key",
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
        + PEM_BODY
        + "\n-----END PGP PRIVATE KEY BLOCK-----",
    ),
    _entry(
        "putty key",
        "PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nPrivate-Lines: 4\n"
        + PEM_BODY
        + "\nPrivate-MAC: "
        + chars(HEX, 40),
    ),
    _entry("mailgun key", "key-" + chars(HEX, 32), "MAILGUN_API_KEY: {}"),
    _entry(
        "mailgun key, new form",
        chars(HEX, 32) + "-" + chars(HEX, 8) + "-" + chars(HEX, 8),
        "mailgun = {}",
    ),
    _entry("stripe webhook secret", "whsec_" + chars(ALNUM, 32), "endpoint secret {}"),
    _entry(
        "slack app token",
        "xapp-1-A" + chars(UPPER, 10) + "-" + chars(string.digits, 13) + "-" + chars(HEX, 64),
    ),
    _entry("shopify access token", "shpat_" + chars(HEX, 32), "X-Shopify-Access-Token: {}"),
    _entry("databricks token", "dapi" + chars(HEX, 32), "DATABRICKS_TOKEN {}"),
    _entry("digitalocean token", "dop_v1_" + chars(HEX, 64)),
    _entry("vault token", "hvs." + chars(URLSAFE, 90), "VAULT: {}"),
    _entry(
        "docker config auth",
        chars(B64, 40) + "==",
        '{{"auths": {{"registry.example.io": {{"auth": "{}"}}}}}}',
    ),
    _entry("google oauth client secret", "GOCSPX-" + chars(URLSAFE, 28)),
    _entry(
        "azure sas signature",
        chars(ALNUM, 40) + "%3D",
        "https://acme.blob.core.windows.net/c/f.csv?sv=2022-11-02&sr=b&sig={}&se=2027-01-01",
    ),
    _entry("password phrase", "quokka lantern marmalade zither", 'DB_PASSWORD="{}"'),
    _entry("short password", "ab12x", "login user=admin password=ab12x"),
    _entry("german password", "Geheim" + chars(ALNUM, 6), "Passwort: {}"),
    _entry("spanish password", "clave" + chars(ALNUM, 6), "contraseña: {}"),
    _entry("french password", "soleil" + chars(ALNUM, 6), "mot de passe : {}"),
    _entry("chinese password", "mima" + chars(ALNUM, 8), "密码：{}"),
)
"""60 formats: every detect-secrets detector with a fixed format, and more."""

ORDINARY: tuple[str, ...] = (
    "Order APC1500MXBLK2 ships on Monday.",
    "Pay to IBAN DE89370400440532013000 by Friday.",
    "Request id 123e4567-e89b-12d3-a456-426614174000 failed.",
    "Fixed in commit 9fceb02d0ae598e95dc970b74767f19372d61af8 (short 9fceb02).",
    "ISBN 978-3-16-148410-0 is out of print.",
    "Your booking reference is ZFA04Y on flight UA2231.",
    "Tracking number 1Z999AA10123456784, order ORD-2026-004512.",
    "The checksum is d41d8cd98f00b204e9800998ecf8427e.",
    "Reset your password: visit the account page and follow the link.",
    "Serial SN-88A7-22F1-0B3C, part APX-4410, key length 2048 bits.",
)
"""Ordinary codes and sentences that no redaction may change."""


def core(planted: Planted) -> str:
    """A distinctive piece of the secret to search for (long enough never to occur by chance,
    short enough to survive a line break or an escape around it)."""
    body = planted.secret.replace("\\n", "\n")
    longest = max(body.split(), key=len)
    return longest[-24:] if len(longest) >= 24 else longest
