"""``connect(...)``: the one place that turns settings into an :class:`LLM` client.

Everything that needs a model (training, evaluation, the benchmark, the DSPy proposer, the CLI)
goes through here, so a setting means the same thing everywhere.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal
from urllib.parse import urlsplit

from combee.declare import Declared, checked, declared, setting
from combee.errors import ConfigError
from combee.llm.accounting import Prices
from combee.llm.guards import (
    DEFAULT_MAX_REPLY_BYTES,
    MAX_CONCURRENCY,
    MAX_FAILURES_IN_A_ROW,
    MIN_MAX_REPLY_BYTES,
)
from combee.llm.redact import without_credentials
from combee.llm.types import DEFAULT_JSON_MODE, DEFAULT_KEY_ENV, Backend, JsonMode, StatesLimits

if TYPE_CHECKING:
    # The client and the cache (the HTTP clients, SQLite) are imported when a client is made:
    # the command line reads the Endpoint's fields for its options without them.
    from combee.llm.cache import ResponseCache
    from combee.llm.client import LLM

JSON_MODES: tuple[JsonMode, ...] = typing.get_args(JsonMode)
ClientName = Literal["openai", "lean"]
CLIENTS: tuple[ClientName, ...] = ("openai", "lean")
DEFAULT_MODEL = "local"
"""The embedded local model (see :mod:`combee.llm.local.models`)."""

MIN_CONTEXT_WINDOW = 512
"""A context window smaller than this holds no useful prompt and reply."""
DEFAULT_LOCAL_CONTEXT = 8192
"""The embedded model's context window unless the endpoint sets one."""


logger = logging.getLogger(__name__)


def is_local(model: str) -> bool:
    """Whether ``model`` names the embedded model (``local`` or ``local:...``)."""
    return model == "local" or model.startswith("local:")


@dataclass(frozen=True)
class Endpoint:
    """Where and how to reach a model, checked but not connected yet.

    Pass it as ``llm=`` to :func:`combee.train` or :func:`combee.evaluate` (the run connects,
    and closes the client when it ends: the right choice in synchronous code), or call
    :meth:`connect` for a client of your own. The fields are those of :func:`connect`,
    each declared once (:mod:`combee.declare`): the command line's endpoint flags, the
    validation and the run's ``config.json`` derive from the declarations.
    """

    OWNER: ClassVar[str] = "endpoint"

    model: str = setting(
        DEFAULT_MODEL,
        "Model name at the endpoint, or local[:qwen2.5-1.5b|smollm2|PATH.gguf] for the "
        "embedded model.",
        envvar="COMBEE_MODEL",
    )
    base_url: str | None = setting(
        None,
        "OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1.",
        none="OPENAI_BASE_URL, else OpenAI's",
        envvar="COMBEE_BASE_URL",
    )
    api_key_env: str = setting(
        DEFAULT_KEY_ENV, "Name of the environment variable holding the API key."
    )
    client: str = setting(
        "openai",
        "HTTP client: openai (the SDK) | lean (same wire format, less CPU).",
        choices=CLIENTS,
    )
    json_mode: str = setting(
        DEFAULT_JSON_MODE,
        "How schemas reach the server: json_schema | json_object_schema (llama.cpp) | "
        "json_object | none.",
        choices=JSON_MODES,
    )
    concurrency: int | None = setting(
        None,
        "Most LLM calls in flight at once.",
        least=1,
        none="the run's largest batch or evaluation set, up to 1024",
    )
    max_retries: int = setting(4, "Retries per call on 429/5xx/timeouts.", least=0)
    timeout_s: float = setting(120.0, "Seconds per LLM call attempt.", above=0.0, flag="timeout")
    cache: str | os.PathLike[str] | ResponseCache | None = setting(
        None, "SQLite response cache: a path, or an open ResponseCache.", flag=None
    )
    prices: Prices | tuple[float, float] | None = setting(
        None,
        "USD per million prompt and completion tokens (flags --price-prompt, --price-completion).",
        flag=None,
    )
    seed: int | None = setting(0, "Sampling seed sent with every request.", flag=None)
    redact: bool = setting(
        True, "Replace keys, tokens, passwords and e-mail addresses in all LLM traffic."
    )
    max_failures_in_a_row: int | None = setting(
        MAX_FAILURES_IN_A_ROW,
        "Stop the run when this many LLM calls in a row fail for good.",
        least=1,
        none="never",
        cli_zero_is_none=True,
    )
    context_window: int | None = setting(
        None,
        "Tokens one call may read and write together: the embedded model's context, or what "
        "your server allows (combee's groups then fit prompts to it).",
        least=MIN_CONTEXT_WINDOW,
        none="the embedded model's 8192; unknown for an endpoint",
    )
    max_reply_bytes: int = setting(
        DEFAULT_MAX_REPLY_BYTES,
        "Most bytes of one reply's HTTP body read (less when max_tokens allows less): past "
        "it reading stops and the call fails.",
        least=MIN_MAX_REPLY_BYTES,
    )

    def __post_init__(self) -> None:
        for item in ENDPOINT_SETTINGS:
            if item.flag is not None:  # not the cache (opened on connect), prices (below), seed
                checked(item, getattr(self, item.name))
        if not self.model:
            raise ConfigError(
                f"must name a model at the endpoint, or local (got {self.model!r})",
                setting="model",
            )
        if is_local(self.model) and self.client == "lean":
            raise ConfigError(
                "'lean' talks HTTP; the embedded local model needs no client", setting="client"
            )
        _check_base_url(self.base_url)
        _prices(self.prices)

    def without_cache(self) -> Endpoint:
        return dataclasses.replace(self, cache=None)

    def connect(self) -> LLM:
        """A new client for this endpoint; close it with ``await llm.aclose()``."""
        from combee.llm.client import LLM

        mode = _json_mode(self.json_mode)
        backend = _backend(self, mode)
        llm = LLM(
            backend,
            concurrency=self.concurrency
            if is_local(self.model) or self.concurrency is None
            else _fit_open_files(self.concurrency),
            max_concurrency=MAX_CONCURRENCY
            if is_local(self.model)
            else _fit_open_files(MAX_CONCURRENCY, warn=False),
            max_retries=self.max_retries,
            # An in-process model is not a remote endpoint: a slow CPU is not a fault, and a
            # timed-out attempt would only queue the same computation again behind itself.
            timeout_s=None if is_local(self.model) else self.timeout_s,
            cache=_cache(self.cache),
            # The embedded model takes the schema as a grammar; it also reads it in the prompt.
            json_mode="json_object_schema" if is_local(self.model) else mode,
            prices=_prices(self.prices),
            seed=self.seed,
            redact=self.redact,
            max_failures_in_a_row=self.max_failures_in_a_row,
            described={
                "model": self.model,
                "served_model": backend.model,
                "client": "embedded" if is_local(self.model) else self.client,
                "api_key_env": None if is_local(self.model) else self.api_key_env,
                "context_window": backend.limits().context_window
                if isinstance(backend, StatesLimits)
                else None,
            },
        )
        for item in ENDPOINT_SETTINGS:  # recorded in config.json, but the cache and prices,
            if item.flag is not None:  # which the client records in its own form
                llm.settings.setdefault(item.name, getattr(self, item.name))
        llm.endpoint = self  # so a copy can be made in another process (see LLM.__reduce__)
        return llm


ENDPOINT_SETTINGS: tuple[Declared, ...] = tuple(declared(Endpoint))
"""The endpoint's settings as declared: the command line's endpoint options, the validation
and ``config.json`` derive from them."""


def _check_base_url(base_url: str | None) -> None:
    """A ConfigError naming base_url for a URL no client can use."""
    if base_url is None:
        return
    shown = without_credentials(base_url)
    try:
        parts = urlsplit(base_url)
        parts.port  # noqa: B018 - parses the port, raising for one out of range
    except ValueError as error:
        raise ConfigError(f"is not a valid URL ({error}): {shown!r}", setting="base_url") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"must be an http:// or https:// URL with a host, such as "
            f"http://127.0.0.1:8000/v1 (got {shown!r})",
            setting="base_url",
        )


def connect(
    model: str = DEFAULT_MODEL,
    *,
    base_url: str | None = None,
    api_key_env: str = DEFAULT_KEY_ENV,
    client: str = "openai",
    json_mode: str = DEFAULT_JSON_MODE,
    concurrency: int | None = None,
    max_retries: int = 4,
    timeout_s: float = 120.0,
    cache: str | os.PathLike[str] | ResponseCache | None = None,
    prices: Prices | tuple[float, float] | None = None,
    seed: int | None = 0,
    redact: bool = True,
    max_failures_in_a_row: int | None = MAX_FAILURES_IN_A_ROW,
    context_window: int | None = None,
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
) -> LLM:
    """An LLM client for ``model``.

    ``model`` is a model name at an OpenAI-compatible endpoint (``base_url``, else
    ``OPENAI_BASE_URL`` from the environment, else OpenAI's API; the key is read from the
    environment variable ``api_key_env``, and a loopback URL needs none), or
    ``local[:qwen2.5-1.5b|smollm2|PATH.gguf]`` for the embedded llama.cpp model. ``client`` picks
    the HTTP client (``openai``: the SDK; ``lean``: the same wire format, less CPU per call).
    ``concurrency`` caps the calls in flight; None (the default) starts at 64 and lets a run widen
    it to its largest batch or evaluation set (up to 1,024 and the open-file limit), so the map
    step of a batch is never split into waves.
    ``json_mode`` says how each role's schema reaches the server (``json_schema``,
    ``json_object_schema`` for llama.cpp's server, ``json_object``, ``none``). ``cache`` is a
    SQLite response cache (a path, or an open :class:`ResponseCache`). ``prices`` are USD per
    million prompt and completion tokens. ``seed`` is sent with every request. ``redact``
    replaces secret-like strings (keys, tokens, passwords, e-mail addresses) in every message
    and reply before they are sent, cached or used (:mod:`combee.llm.redact`).
    ``max_failures_in_a_row`` calls failing for good one after another stop the run with a
    :class:`combee.errors.RunFailedError` (``None``: never). ``context_window`` is the tokens
    one call may read and write together (the embedded model's ``n_ctx``, default 8,192; for an
    endpoint, what its server allows: then ``combee``'s capacity groups also fit the prompt to
    it). ``max_reply_bytes`` bounds how much of one reply's HTTP body is read (less when the
    call's ``max_tokens`` allows less): past it reading stops, the connection is dropped and
    the call fails.
    The client is bound to the event loop it first runs on; close it with
    ``await llm.aclose()``.
    """
    # The parameters are the Endpoint's fields, in order (tests/core/test_endpoint_declared.py).
    return Endpoint(**locals()).connect()


FILES_KEPT_FREE = 64
"""Open files left for everything but connections (the cache, the run's files, the log)."""


def _fit_open_files(concurrency: int, *, warn: bool = True) -> int:
    """``concurrency``, after raising the process's open-file limit to fit it when the system
    allows; else capped to fit, with a warning (each call in flight holds a connection)."""
    try:
        import resource
    except ImportError:  # not on a Unix
        return concurrency
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = concurrency + FILES_KEPT_FREE
    if soft == resource.RLIM_INFINITY or needed <= soft:
        return concurrency
    target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    except (ValueError, OSError):
        pass
    fitted = max(1, min(concurrency, soft - FILES_KEPT_FREE))
    if fitted < concurrency and warn:
        logger.warning(
            "concurrency %d needs about %d open files but this process may open %d "
            "(ulimit -n); running %d calls at once instead",
            concurrency,
            needed,
            soft,
            fitted,
        )
    return fitted


THREADS_ENV = "COMBEE_LOCAL_THREADS"
"""Threads the embedded model computes with (default: every core this process may run on)."""


def local_threads() -> int | None:
    raw = os.environ.get(THREADS_ENV)
    if not raw:
        return None
    try:
        threads = int(raw)
    except ValueError:
        threads = 0
    if threads < 1:
        raise ConfigError(f"{THREADS_ENV}={raw!r} must be a whole number of at least 1")
    return threads


def _json_mode(value: str) -> JsonMode:
    for mode in JSON_MODES:
        if value == mode:
            return mode
    raise ConfigError(f"{value!r} is not one of {', '.join(JSON_MODES)}", setting="json_mode")


def _prices(prices: Prices | tuple[float, float] | None) -> Prices | None:
    if prices is None:
        return None
    price = prices if isinstance(prices, Prices) else Prices(*prices)
    for name, value in (
        ("prompt", price.prompt_per_mtok),
        ("completion", price.completion_per_mtok),
    ):
        if not math.isfinite(value) or value < 0:
            raise ConfigError(
                f"{name} price must be a finite number, 0 or more (got {value!r})",
                setting="prices",
            )
    return price


def _cache(cache: str | os.PathLike[str] | ResponseCache | None) -> ResponseCache | None:
    from combee.llm.cache import ResponseCache

    if cache is None or isinstance(cache, ResponseCache):
        return cache
    path = Path(cache)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError(f"{path}: cannot create its folder: {error}", setting="cache") from None
    return ResponseCache(path)


def _backend(endpoint: Endpoint, json_mode: JsonMode) -> Backend:
    if is_local(endpoint.model):
        from combee.llm.local.backend import LocalBackend
        from combee.llm.local.models import resolve_local_model

        return LocalBackend(
            str(resolve_local_model(endpoint.model)),
            seed=endpoint.seed or 0,
            n_threads=local_threads(),
            n_ctx=endpoint.context_window or DEFAULT_LOCAL_CONTEXT,
        )
    if endpoint.client == "lean":
        from combee.llm.lean_backend import LeanBackend

        return LeanBackend(
            model=endpoint.model,
            base_url=endpoint.base_url,
            api_key_env=endpoint.api_key_env,
            json_mode=json_mode,
            context_window=endpoint.context_window,
            max_reply_bytes=endpoint.max_reply_bytes,
        )
    from combee.llm.openai_backend import OpenAIBackend

    return OpenAIBackend(
        model=endpoint.model,
        base_url=endpoint.base_url,
        api_key_env=endpoint.api_key_env,
        json_mode=json_mode,
        timeout_s=endpoint.timeout_s,
        context_window=endpoint.context_window,
        max_reply_bytes=endpoint.max_reply_bytes,
    )
