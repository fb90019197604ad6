"""Secret formats from the field's public rule sets, and token-like strings that are not secrets.

Each format is taken from a rule of gitleaks (``config/gitleaks.toml``) or a detector of
TruffleHog (``pkg/detectors/<name>``), named in ``source``: its prefix, length and alphabet are
the rule's. Formats a rule finds only next to the vendor's name (``algolia ... = <32>``) are
written the way a config file holds them. Every value is generated from a seed: none is real.
The innocent strings are the identifiers a task's data holds (hashes, UUIDs, digests, IBANs,
ISBNs, VINs, tracking numbers, base64 media, ...), generated the same way where their format
allows."""

from __future__ import annotations

import base64
import random
import string
from dataclasses import dataclass

_rng = random.Random(20261207)

LOWER = string.ascii_lowercase
UPPER = string.ascii_uppercase
DIGITS = string.digits
ALNUM = LOWER + UPPER + DIGITS
LOWER_ALNUM = LOWER + DIGITS
UPPER_ALNUM = UPPER + DIGITS
HEX = "0123456789abcdef"
URLSAFE = ALNUM + "_-"
B64 = ALNUM + "+/"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def chars(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def uuid4() -> str:
    h = chars(HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_rng.choice('89ab')}{h[17:20]}-{h[20:]}"


@dataclass(frozen=True)
class Format:
    name: str
    source: str
    secret: str
    text: str
    """The secret where it appears: a question, a log line, a config line."""


# Contexts without a secret-named key: the token alone must give itself away.
_PLAIN = (
    "Why does the deploy fail when I pass {} to the CLI?",
    "2026-12-07T10:00:00Z WARN request to upstream used {} and got 401",
    '{{"value": "{}", "region": "eu-west-1"}}',
    "Run it as: ./sync --with {} --dry-run",
    "- {}",
)


def _plain(index: int, name: str, source: str, secret: str) -> Format:
    return Format(name, source, secret, _PLAIN[index % len(_PLAIN)].format(secret))


_PREFIXED: tuple[tuple[str, str, str], ...] = (
    # (name, source, secret)
    ("pulumi", "gitleaks:pulumi-api-token", "pul-" + chars(HEX, 40)),
    ("doppler personal", "gitleaks:doppler-api-token", "dp.pt." + chars(ALNUM, 43)),
    ("doppler cli", "trufflehog:doppler", "dp.ct." + chars(ALNUM, 43)),
    ("doppler service account", "trufflehog:doppler", "dp.sa." + chars(ALNUM, 44)),
    ("new relic user key", "gitleaks:new-relic-user-api-key", "NRAK-" + chars(UPPER_ALNUM, 27)),
    ("new relic browser", "gitleaks:new-relic-browser-api-token", "NRJS-" + chars(HEX, 19)),
    ("new relic insert", "gitleaks:new-relic-insert-key", "NRII-" + chars(LOWER_ALNUM, 32)),
    ("postman", "gitleaks:postman-api-token", f"PMAK-{chars(HEX, 24)}-{chars(HEX, 34)}"),
    ("grafana cloud", "gitleaks:grafana-cloud-api-token", "glc_" + chars(B64, 48)),
    (
        "grafana service account",
        "gitleaks:grafana-service-account-token",
        f"glsa_{chars(ALNUM, 32)}_{chars(HEX, 8)}",
    ),
    ("grafana api key", "gitleaks:grafana-api-key", "eyJrIjoi" + chars(ALNUM, 72)),
    (
        "dynatrace",
        "gitleaks:dynatrace-api-token",
        f"dt0c01.{chars(UPPER_ALNUM, 24)}.{chars(UPPER_ALNUM, 64)}",
    ),
    ("shippo live", "gitleaks:shippo-api-token", "shippo_live_" + chars(HEX, 40)),
    ("shippo test", "gitleaks:shippo-api-token", "shippo_test_" + chars(HEX, 40)),
    ("age identity", "gitleaks:age-secret-key", "AGE-SECRET-KEY-1" + chars(BECH32, 58)),
    ("heroku v2", "gitleaks:heroku-api-key-v2", "HRKU-AA" + chars(URLSAFE, 58)),
    ("alibaba access key", "gitleaks:alibaba-access-key-id", "LTAI" + chars(ALNUM, 20)),
    (
        "azure ad client secret",
        "gitleaks:azure-ad-client-secret",
        chars(ALNUM, 3) + _rng.choice(DIGITS) + "Q~" + chars(ALNUM + "_~-", 34),
    ),
    ("planetscale token", "gitleaks:planetscale-api-token", "pscale_tkn_" + chars(URLSAFE, 43)),
    ("planetscale oauth", "gitleaks:planetscale-oauth-token", "pscale_oauth_" + chars(URLSAFE, 43)),
    ("planetscale password", "gitleaks:planetscale-password", "pscale_pw_" + chars(URLSAFE, 43)),
    ("prefect", "gitleaks:prefect-api-token", "pnu_" + chars(ALNUM, 36)),
    ("readme", "gitleaks:readme-api-token", "rdme_" + chars(LOWER_ALNUM, 70)),
    ("rubygems", "gitleaks:rubygems-api-token", "rubygems_" + chars(HEX, 48)),
    ("typeform", "gitleaks:typeform-api-token", "tfp_" + chars(LOWER_ALNUM + "-_.=", 59)),
    ("easypost", "gitleaks:easypost-api-token", "EZAK" + chars(LOWER_ALNUM, 54)),
    ("easypost test", "gitleaks:easypost-test-api-token", "EZTK" + chars(LOWER_ALNUM, 54)),
    ("frame.io", "gitleaks:frameio-api-token", "fio-u-" + chars(LOWER_ALNUM + "-_=", 64)),
    ("clojars", "gitleaks:clojars-api-token", "CLOJARS_" + chars(LOWER_ALNUM, 60)),
    ("linear", "gitleaks:linear-api-key", "lin_api_" + chars(ALNUM, 40)),
    ("atlassian", "gitleaks:atlassian-api-token", "ATATT3" + chars(URLSAFE + "=", 186)),
    (
        "1password service account",
        "gitleaks:1password-service-account-token",
        "ops_eyJ" + chars(B64, 250),
    ),
    (
        "1password secret key",
        "gitleaks:1password-secret-key",
        "A3-" + "-".join(chars(UPPER_ALNUM, n) for n in (6, 11, 5, 5, 5)),
    ),
    ("adobe client secret", "gitleaks:adobe-client-secret", "p8e-" + chars(LOWER_ALNUM, 32)),
    (
        "airtable personal token",
        "gitleaks:airtable-personnal-access-token",
        f"pat{chars(ALNUM, 14)}.{chars(HEX, 64)}",
    ),
    ("artifactory api key", "gitleaks:artifactory-api-key", "AKCp" + chars(ALNUM, 69)),
    ("artifactory reference", "gitleaks:artifactory-reference-token", "cmVmd" + chars(ALNUM, 59)),
    (
        "anthropic admin",
        "gitleaks:anthropic-admin-api-key",
        "sk-ant-admin01-" + chars(URLSAFE, 93) + "AA",
    ),
    ("aws bedrock", "gitleaks:aws-amazon-bedrock-api-key-long-lived", "ABSK" + chars(B64, 120)),
    ("clickhouse cloud", "gitleaks:clickhouse-cloud-api-secret-key", "4b1d" + chars(ALNUM, 38)),
    (
        "cloudflare origin ca",
        "gitleaks:cloudflare-origin-ca-key",
        f"v1.0-{chars(HEX, 24)}-{chars(HEX, 146)}",
    ),
    (
        "defined networking",
        "gitleaks:defined-networking-api-token",
        f"dnkey-{chars(URLSAFE, 26)}-{chars(URLSAFE, 52)}",
    ),
    ("digitalocean oauth", "gitleaks:digitalocean-access-token", "doo_v1_" + chars(HEX, 64)),
    (
        "dropbox short-lived",
        "gitleaks:dropbox-short-lived-api-token",
        "sl." + chars(LOWER_ALNUM + "-=_", 135),
    ),
    ("duffel", "gitleaks:duffel-api-token", "duffel_live_" + chars(URLSAFE + "=", 43)),
    ("facebook page", "gitleaks:facebook-page-access-token", "EAAC" + chars(ALNUM, 110)),
    (
        "flutterwave secret",
        "gitleaks:flutterwave-secret-key",
        f"FLWSECK_TEST-{chars('abcdefgh' + DIGITS, 32)}-X",
    ),
    (
        "flutterwave public",
        "gitleaks:flutterwave-public-key",
        f"FLWPUBK_TEST-{chars('abcdefgh' + DIGITS, 32)}-X",
    ),
    ("fly.io", "gitleaks:flyio-access-token", "fo1_" + chars(URLSAFE, 43)),
    (
        "gitlab cicd job",
        "gitleaks:gitlab-cicd-job-token",
        f"glcbt-{chars(ALNUM, 5)}_{chars(URLSAFE, 20)}",
    ),
    (
        "gitlab feature flags",
        "gitleaks:gitlab-feature-flag-client-token",
        "glffct-" + chars(URLSAFE, 20),
    ),
    ("openshift", "gitleaks:openshift-user-token", "sha256~" + chars(URLSAFE, 43)),
    ("perplexity", "gitleaks:perplexity-api-key", "pplx-" + chars(ALNUM, 48)),
    ("scalingo", "gitleaks:scalingo-api-token", "tk-us-" + chars(URLSAFE, 48)),
    ("brevo", "gitleaks:sendinblue-api-token", f"xkeysib-{chars(HEX, 64)}-{chars(ALNUM, 16)}"),
    ("sentry user", "gitleaks:sentry-user-token", "sntryu_" + chars(HEX, 64)),
    (
        "settlemint application",
        "gitleaks:settlemint-application-access-token",
        "sm_aat_" + chars(ALNUM, 16),
    ),
    (
        "settlemint personal",
        "gitleaks:settlemint-personal-access-token",
        "sm_pat_" + chars(ALNUM, 16),
    ),
    ("sourcegraph", "gitleaks:sourcegraph-access-token", f"sgp_{chars(HEX, 16)}_{chars(HEX, 40)}"),
    ("square access", "gitleaks:square-access-token", "EAAA" + chars(URLSAFE, 60)),
    ("vault batch", "gitleaks:vault-batch-token", "hvb." + chars(URLSAFE, 140)),
    ("notion", "gitleaks:notion-api-token", f"ntn_{chars(DIGITS, 11)}{chars(ALNUM, 35)}"),
    ("octopus deploy", "gitleaks:octopus-deploy-api-key", "API-" + chars(UPPER_ALNUM, 26)),
    ("intra42", "gitleaks:intra42-client-secret", "s-s4t2ud-" + chars(HEX, 64)),
    ("infracost", "gitleaks:infracost-api-token", "ico-" + chars(ALNUM, 32)),
    (
        "huggingface org",
        "gitleaks:huggingface-organization-api-token",
        "api_org_" + chars(LOWER + UPPER, 34),
    ),
    ("maxmind", "gitleaks:maxmind-license-key", f"{chars(ALNUM, 6)}_{chars(ALNUM, 29)}_mmk"),
    (
        "harness",
        "gitleaks:harness-api-key",
        f"pat.{chars(URLSAFE, 22)}.{chars(ALNUM, 24)}.{chars(ALNUM, 20)}",
    ),
    (
        "terraform cloud",
        "gitleaks:hashicorp-tf-api-token",
        f"{chars(LOWER_ALNUM, 14)}.atlasv1.{chars(LOWER_ALNUM + '-_=', 64)}",
    ),
    (
        "authress",
        "gitleaks:authress-service-client-access-key",
        f"sc_{chars(LOWER_ALNUM, 12)}.{chars(LOWER_ALNUM, 5)}.acc_{chars(LOWER_ALNUM, 20)}."
        + chars(B64, 60),
    ),
    (
        "slack config refresh",
        "gitleaks:slack-config-refresh-token",
        "xoxe-1-" + chars(UPPER_ALNUM, 146),
    ),
    ("xai", "trufflehog:xai", "xai-" + chars(ALNUM + "_", 80)),
    ("groq", "trufflehog:groq", "gsk_" + chars(ALNUM, 52)),
    ("replicate", "trufflehog:replicate", "r8_" + chars(URLSAFE, 37)),
    ("supabase", "trufflehog:supabasetoken", "sbp_" + chars(LOWER_ALNUM, 40)),
    ("langsmith", "trufflehog:langsmith", f"lsv2_pt_{chars(HEX, 32)}_{chars(HEX, 10)}"),
    ("pinecone", "trufflehog:pinecone", f"pcsk_{chars(ALNUM, 5)}_{chars(ALNUM, 63)}"),
    ("deno deploy", "trufflehog:deno", "ddp_" + chars(ALNUM, 36)),
    (
        "tailscale",
        "trufflehog:tailscale",
        f"tskey-api-{chars(ALNUM, 14)}-{chars(ALNUM, 32)}",
    ),
    ("openrouter", "trufflehog:openrouter", "sk-or-v1-" + chars(HEX, 64)),
    ("posthog", "trufflehog:posthog", "phx_" + chars(ALNUM + "_", 45)),
    ("rootly", "trufflehog:rootly", "rootly_" + chars(HEX, 64)),
    ("fleetbase", "trufflehog:fleetbase", "flb_live_" + chars(ALNUM, 20)),
    ("contentful", "trufflehog:contentfulpersonalaccesstoken", "CFPAT-" + chars(URLSAFE, 43)),
    ("nvidia", "trufflehog:nvapi", "nvapi-" + chars(URLSAFE, 64)),
    ("voiceflow", "trufflehog:voiceflow", f"VF.DM.{chars(HEX, 24)}.{chars(ALNUM, 16)}"),
    ("apify", "trufflehog:apify", "apify_api_" + chars(ALNUM, 36)),
    ("dfuse", "trufflehog:dfuse", "web_" + chars(LOWER_ALNUM, 32)),
    (
        "stripe payment intent secret",
        "trufflehog:stripepaymentintent",
        f"pi_{chars(ALNUM, 24)}_secret_{chars(ALNUM, 25)}",
    ),
    ("bitbucket app password", "trufflehog:bitbucketapppassword", "ATBB" + chars(ALNUM, 32)),
    ("launchdarkly", "trufflehog:launchdarkly", "api-" + uuid4()),
    ("github oauth", "gitleaks:github-oauth", "gho_" + chars(ALNUM, 36)),
    ("gitlab pat", "gitleaks:gitlab-pat", "glpat-" + chars(URLSAFE, 20)),
    ("npm", "gitleaks:npm-access-token", "npm_" + chars(LOWER_ALNUM, 36)),
    ("sendgrid", "gitleaks:sendgrid-api-token", f"SG.{chars(URLSAFE, 22)}.{chars(URLSAFE, 43)}"),
    ("databricks", "gitleaks:databricks-api-token", "dapi" + chars(HEX, 32)),
    ("shopify shared secret", "gitleaks:shopify-shared-secret", "shpss_" + chars(HEX, 32)),
    ("gcp api key", "gitleaks:gcp-api-key", "AIza" + chars(URLSAFE, 35)),
    ("aws access key", "gitleaks:aws-access-token", "AKIA" + chars(UPPER + "234567", 16)),
)

# (name, source, secret, how a config holds it)
_KEYED: tuple[tuple[str, str, str, str], ...] = (
    ("algolia", "gitleaks:algolia-api-key", chars(LOWER_ALNUM, 32), "ALGOLIA_ADMIN_KEY={}"),
    ("asana", "gitleaks:asana-client-secret", chars(LOWER_ALNUM, 32), "asana_client_secret: {}"),
    (
        "bitbucket",
        "gitleaks:bitbucket-client-secret",
        chars(LOWER_ALNUM + "=_-", 64),
        "BITBUCKET_CLIENT_SECRET={}",
    ),
    (
        "cloudflare global",
        "gitleaks:cloudflare-global-api-key",
        chars(HEX, 37),
        '"cloudflare_api_key": "{}"',
    ),
    ("codecov", "gitleaks:codecov-access-token", chars(LOWER_ALNUM, 32), "CODECOV_TOKEN={}"),
    (
        "datadog",
        "gitleaks:datadog-access-token",
        chars(LOWER_ALNUM, 40),
        "datadog:\n  app_key: {}",
    ),
    ("dropbox", "gitleaks:dropbox-api-token", chars(LOWER_ALNUM, 15), "dropbox.key = {}"),
    (
        "twitter",
        "gitleaks:twitter-api-secret",
        chars(LOWER_ALNUM, 50),
        "The twitter api secret is {} (rotate it)",
    ),
    ("heroku", "gitleaks:heroku-api-key", uuid4(), "Heroku API key: {}"),
    (
        "mailgun public",
        "gitleaks:mailgun-pub-key",
        "pubkey-" + chars(HEX, 32),
        "MAILGUN_PUBLIC_KEY={}",
    ),
    (
        "mapbox",
        "gitleaks:mapbox-api-token",
        f"pk.{chars(LOWER_ALNUM, 60)}.{chars(LOWER_ALNUM, 22)}",
        "mapbox: {}",
    ),
    ("sentry", "gitleaks:sentry-access-token", chars(HEX, 64), "SENTRY_AUTH_TOKEN={}"),
    ("etsy", "gitleaks:etsy-access-token", chars(LOWER_ALNUM, 24), "etsy_key: {}"),
    (
        "confluent",
        "gitleaks:confluent-secret-key",
        chars(LOWER_ALNUM, 64),
        "confluent secret: {}",
    ),
    (
        "looker",
        "gitleaks:looker-client-secret",
        chars(LOWER_ALNUM, 24),
        "LOOKER_CLIENT_SECRET={}",
    ),
    ("okta", "gitleaks:okta-access-token", "00" + chars(URLSAFE, 40), "OKTA_API_TOKEN={}"),
    ("hubspot", "gitleaks:hubspot-api-key", uuid4().upper(), "our hubspot key is {}"),
    ("twitch", "gitleaks:twitch-api-token", chars(LOWER_ALNUM, 30), "TWITCH_CLIENT_SECRET={}"),
    ("zendesk", "gitleaks:zendesk-secret-key", chars(LOWER_ALNUM, 40), "zendesk_key = {}"),
    ("netlify", "trufflehog:netlify", chars(URLSAFE, 43), "NETLIFY_AUTH_TOKEN={}"),
    ("vercel", "trufflehog:vercel", chars(ALNUM, 24), "vercel token: {}"),
    ("hasura", "trufflehog:hasura", chars(ALNUM, 64), "X-Hasura-Admin-Secret: {}"),
    ("artsy", "trufflehog:artsy", chars(ALNUM, 32), '{{"artsyKey": "{}"}}'),
    (
        "new relic user key env",
        "gitleaks:new-relic-user-api-key",
        "NRAK-" + chars(UPPER_ALNUM, 27),
        "NEW_RELIC_USER_KEY={}",
    ),
    (
        "age identity env",
        "gitleaks:age-secret-key",
        "AGE-SECRET-KEY-1" + chars(BECH32, 58),
        "AGE_IDENTITY={}",
    ),
    (
        "grafana env",
        "gitleaks:grafana-service-account-token",
        f"glsa_{chars(ALNUM, 32)}_{chars(HEX, 8)}",
        "GRAFANA_SA={}",
    ),
    (
        "aws secret in prose",
        "gitleaks:aws-access-token",
        chars(B64, 40),
        "AWS secret key: {}",
    ),
)

FORMATS: tuple[Format, ...] = (
    *(_plain(i, name, source, secret) for i, (name, source, secret) in enumerate(_PREFIXED)),
    *(
        Format(name, source, secret, template.format(secret))
        for name, source, secret, template in _KEYED
    ),
)


def _b64_file(signature: bytes, size: int) -> str:
    return base64.b64encode(signature + _rng.randbytes(size)).decode()


def _iban(country: str, length: int) -> str:
    return country + chars(DIGITS, 2) + chars(UPPER_ALNUM, 4) + chars(DIGITS, length - 8)


_VIN = "ABCDEFGHJKLMNPRSTUVWXYZ0123456789"
_PNG = b"\x89PNG\r\n\x1a\n"
_JPEG = b"\xff\xd8\xff\xe0"
_POD = "bcdfghjklmnpqrstvwxz2456789"

INNOCENT: tuple[str, ...] = (
    *(f"Fixed in commit {chars(HEX, 40)}." for _ in range(8)),
    *(f"Revert {chars(HEX, 7)} and {chars(HEX, 12)}" for _ in range(3)),
    f"https://github.com/acme/widgets/commit/{chars(HEX, 40)}",
    f"https://github.com/acme/widgets/blob/{chars(HEX, 40)}/src/Main2Handler.java#L42",
    *(f"Request id {uuid4()} failed." for _ in range(6)),
    *("{" + uuid4().upper() + "}" for _ in range(3)),
    *(f"md5 {chars(HEX, 32)}  report.pdf" for _ in range(3)),
    *(f"sha1: {chars(HEX, 40)}" for _ in range(2)),
    *(f"{chars(HEX, 64)}  release-2.4.1.tar.gz" for _ in range(3)),
    f"sha512 {chars(HEX, 128)}",
    *(f"image: nginx@sha256:{chars(HEX, 64)}" for _ in range(3)),
    f"Digest: sha256:{chars(HEX, 64)}",
    f"/var/lib/docker/overlay2/{chars(HEX, 64)}/diff",
    *(
        f'<script src="app.js" integrity="sha384-{base64.b64encode(_rng.randbytes(48)).decode()}">'
        for _ in range(2)
    ),
    *(f'"integrity": "sha512-{base64.b64encode(_rng.randbytes(64)).decode()}"' for _ in range(2)),
    f"data:image/png;base64,{_b64_file(_PNG, 60)}",
    f"data:image/jpeg;base64,{_b64_file(_JPEG, 90)}",
    f"data:image/gif;base64,{_b64_file(b'GIF89a', 40)}",
    f"data:image/webp;base64,{_b64_file(b'RIFF', 70)}",
    f'{{"thumbnail": "{_b64_file(_PNG, 48)}"}}',
    f'{{"scan": "{_b64_file(b"%PDF-1.7", 120)}"}}',
    f"attachment (base64): {_b64_file(_JPEG, 200)}",
    f"note (base64): {base64.b64encode(b'Meet me at the north gate at noon on Friday.').decode()}",
    "payload=" + base64.b64encode(b'{"user": "ann", "role": "viewer"}').decode(),
    "Pay to IBAN DE89370400440532013000 by Friday.",
    "IBAN GB82WEST12345698765432",
    "FR1420041010050500013M02606",
    "NL91ABNA0417164300",
    *(f"IBAN {_iban(c, n)}" for c, n in (("DE", 22), ("ES", 24), ("IT", 27), ("CH", 21))),
    "ISBN 978-3-16-148410-0 is out of print.",
    "ISBN-13: 9780306406157",
    "ISBN 0-306-40615-2",
    "ISBN 978-1-4028-9462-6 and 978-0-596-52068-7",
    "VIN 1HGCM82633A004352",
    "VIN: WVWZZZ1JZXW000001",
    *(f"vehicle {chars(_VIN, 17)}" for _ in range(3)),
    "Tracking number 1Z999AA10123456784",
    *(f"UPS 1Z{chars(UPPER_ALNUM, 16)}" for _ in range(3)),
    f"FedEx {chars(DIGITS, 12)}",
    f"USPS {chars(DIGITS, 22)}",
    f"DHL JD{chars(DIGITS, 18)}",
    *(f"ulid {chars('0123456789ABCDEFGHJKMNPQRSTVWXYZ', 26)}" for _ in range(3)),
    *(f'ObjectId("{chars(HEX, 24)}")' for _ in range(2)),
    f"0x{chars(HEX, 40)}",
    "2001:0db8:85a3:0000:0000:8a2e:0370:7334",
    "MAC 00:1A:2B:3C:4D:5E",
    "Order ORD-2026-004512 ships on Monday.",
    "Your booking reference is ZFA04Y on flight UA2231.",
    "SKU APX-4410-BLK-XL, part APC1500MXBLK2",
    "Serial SN-88A7-22F1-0B3C",
    "version v2.14.3-rc.1+build.20261207",
    "build 20261207.4-ci_linux_x86_64_release",
    "arn:aws:iam::123456789012:role/Deploy-Role_2026",
    "arn:aws:s3:::acme-prod-artifacts-eu-west-1/releases/2026/12/app-2.4.1.zip",
    f'ETag: "{chars(HEX, 32)}-12"',
    "Call +4915123456789 or +1-202-555-0143",
    "Logged at 2026-12-07T10:15:30.123456+00:00",
    "test_redaction_linear_2026_q3_results",
    "XMLHttpRequestHandler2Factory",
    "AbstractSingletonProxyFactoryBean2Impl",
    "Run tests/security/test_redaction_linear.py::test_a_megabyte_of_hex",
    "/usr/lib/x86_64-linux-gnu/libssl.so.3",
    "C:\\Users\\JaneDoe\\AppData\\Local\\Temp\\setup_2026_12_07.log",
    *(f"pod api-server-{chars(_POD, 10)}-{chars(_POD, 5)} restarted" for _ in range(3)),
    "https://example.com/reports/2026/annual-report-final-v2.pdf?page=12",
    "Reset your password: visit the account page and follow the link.",
    "The key length is 2048 bits; the primary key is customer_id.",
    "Cache key: user_profile_v2",
    "The token count was 4096 and the secret ingredient is basil.",
    "Checksum d41d8cd98f00b204e9800998ecf8427e matches.",
    f"S3 version id {chars(DIGITS, 20)}",
    f"Invoice INV-{chars(DIGITS, 6)}-{chars(UPPER, 3)}",
    f"container {chars(HEX, 12)} exited with code 137",
    f"trace_id={chars(HEX, 32)} span_id={chars(HEX, 16)}",
    "GTIN 00012345600012, EAN 4006381333931",
    "Color palette: #1A2B3C #FFFFFF #00FF7F",
    "CVE-2024-3094 affects xz 5.6.0 and 5.6.1",
    f"YouTube video dQw4w9WgXcQ, nanoid {chars(URLSAFE, 21)}",
)

RANDOM_IDENTIFIERS: tuple[str, ...] = (
    # Random mixed-case identifiers without a prefix: by their characters, keys. Not in
    # INNOCENT; the tests state how they are treated.
    chars(ALNUM, 27),  # a KSUID
    "1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms",  # a Google Sheets document id
    "QmXoypizjW3WknFiJnKLwHCnL72vedxjQkDDP1mXWo6uco",  # an IPFS content id
    "pi_" + chars(ALNUM, 24),  # a Stripe payment intent's id
)


def core(secret: str) -> str:
    """A distinctive piece of the secret to look for: its last 16 characters."""
    return secret[-16:]


CODE_NAMES: tuple[str, ...] = (
    # Names from the source of widely used Python packages (transformers, torch, the Alibaba
    # cloud SDK, litellm, pyasn1, ray), and a traceback line of a SWE-bench issue: a coding
    # agent's conversation is full of them, and none is a secret.
    "File <ipython-input-1-3d95a2ed3d01> in <module>",
    "class Ernie4_5_MoePreTrainedModel(PreTrainedModel):",
    "from transformers import Qwen3_5MoeSparseMoeBlock",
    "import aliyunsdkecs.request.v20140526.CreateVpcRequest",
    "from litellm.integrations.s3_v2 import S3Logger",
    "layer = torch.nn.AdaptiveAvgPool1d(1)",
    "self.tagSet.isSuperTagSetOf(other)",
    "handle = windll.kernel32.GetStdHandle(-11)",
    "transformers.models.wav2vec2.modeling_wav2vec2.Wav2Vec2Attention",
    "see github.com/pandas-dev/pandas/commit/4f433773141d2eb384325714a2776bcc5b2e20f7",
    "download 74563ba21a90da13dacf2a73e3ddefa7-Paper.pdf",
    "image COCO_val2014_000000537955.jpg",
    "s3://air-example-data-2/6G-audio-data-LibriSpeech-train-clean-100-flac/train-clean-100/5022",
    "def attention(key: Sam3TrackerAttention) -> None:",
    "signature_key = win32.DuplicateTokenEx",
)

CODE_NAMES_TAKEN: tuple[str, ...] = (
    # Names whose short words are broken by digits read as random: taken for keys. Not in
    # CODE_NAMES; the tests state how they are treated.
    "Kosmos2_5TextForCausalLM",
    "KernelScheduleType.Nvf4TmaWarpSpecialized1SmSm100",
)
