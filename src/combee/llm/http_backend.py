"""What the two HTTP backends (``openai`` and ``lean``) share: the model, its context window,
the JSON mode, the key variable, where the calls go with which credentials, and how much of a
reply they read."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from typing import Required, TypedDict
from urllib.parse import urlsplit

from combee.errors import ConfigError, parameter
from combee.llm.guards import DEFAULT_MAX_REPLY_BYTES
from combee.llm.redact import basic_auth, without_credentials
from combee.llm.reply_limit import ReplyLimit
from combee.llm.response_format import ResponseFormats
from combee.llm.types import DEFAULT_JSON_MODE, DEFAULT_KEY_ENV, JsonMode, ModelLimits

BASE_URL_ENV = "OPENAI_BASE_URL"
"""Where the OpenAI SDK sends calls when no base URL is given; honoured the same way here."""

NO_KEY_NEEDED = "no-key-needed"
"""Sent as the key to an endpoint that needs none (a loopback URL)."""


@dataclass(frozen=True)
class HttpAccess:
    """Where an HTTP backend's calls go and how they authenticate (the credentials and the key
    are never shown)."""

    url: str | None
    """The base URL, given or from ``OPENAI_BASE_URL``, without credentials or a trailing
    slash; None: OpenAI's API."""
    authorization: str | None = field(repr=False)
    """HTTP Basic authentication for credentials in the URL, sent in place of the key."""
    key: str = field(repr=False)

    @classmethod
    def resolve(cls, base_url: str | None, api_key_env: str) -> HttpAccess:
        """The access for ``base_url`` with the key from ``api_key_env``: a ConfigError for a
        URL that is not http(s), or for a missing key unless the URL carries credentials or is
        on this machine."""
        # Resolved before the key is judged: a loopback OPENAI_BASE_URL needs no key either.
        plain, authorization = basic_auth(base_url_of(base_url))
        url = None if plain is None else plain.rstrip("/")
        if url is not None:
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ConfigError(
                    f"{without_credentials(url)!r} is not an http(s) URL", setting="base_url"
                )
        key = os.environ.get(api_key_env)
        if not key:
            if authorization is None and (url is None or not is_loopback(url)):
                where = url or "the OpenAI API"
                raise ConfigError(
                    f"the environment variable {api_key_env} is not set, but {where} needs "
                    f"an API key: export {api_key_env}=... or name another variable with "
                    + parameter("api_key_env")
                )
            key = NO_KEY_NEEDED
        return cls(url, authorization, key)


class HttpKeywords(TypedDict, total=False):
    """The keywords both HTTP backends take, as :class:`HttpBackend` does."""

    model: Required[str]
    base_url: str | None
    api_key_env: str | None
    json_mode: JsonMode
    context_window: int | None
    max_reply_bytes: int


class HttpBackend:
    """The part of an HTTP backend's set-up both backends share; each sets ``base_url`` (where
    its calls go) itself."""

    base_url: str

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key_env: str | None = None,
        json_mode: JsonMode = DEFAULT_JSON_MODE,
        context_window: int | None = None,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
    ) -> None:
        self.model = model
        self.max_reply_bytes = max_reply_bytes
        self.context_window = context_window
        """Tokens the served model reads and writes per call, as the user declared it."""
        self.api_key_env = api_key_env or DEFAULT_KEY_ENV
        self.json_mode: JsonMode = json_mode
        self._access = HttpAccess.resolve(base_url, self.api_key_env)
        self._formats = ResponseFormats(json_mode)

    def __repr__(self) -> str:
        shown = without_credentials(self.base_url)
        return f"{type(self).__name__}(model={self.model!r}, base_url={shown!r})"

    def limits(self) -> ModelLimits:
        return ModelLimits(context_window=self.context_window)

    def reply_limit(self, max_tokens: int) -> ReplyLimit:
        """How much of the reply to a call of ``max_tokens`` is read."""
        return ReplyLimit(max_tokens, self.max_reply_bytes)


def base_url_of(given: str | None) -> str | None:
    """``given``, else ``OPENAI_BASE_URL`` from the environment, else None (OpenAI's API)."""
    return given or os.environ.get(BASE_URL_ENV) or None


def is_loopback(base_url: str) -> bool:
    """True for a URL on this machine (127.x, ::1, localhost), which needs no API key."""
    host = urlsplit(base_url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
