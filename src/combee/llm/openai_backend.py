"""Any OpenAI-compatible chat-completions endpoint, through the official ``openai`` SDK."""

from __future__ import annotations

import importlib
import ipaddress
import os
import time
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import openai

from combee.errors import ConfigError
from combee.llm.redact import without_credentials
from combee.llm.response_format import ResponseFormats
from combee.llm.retry import BackendFailure
from combee.llm.types import Completion, JsonMode, Request

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
_LOCAL_PLACEHOLDER_KEY = "no-key-needed"


class OpenAIBackend:
    """One attempt per call; retries and limits live in :class:`combee.llm.client.LLM`.

    One ``AsyncOpenAI`` client, on the SDK's aiohttp transport, serves every call (proxies from
    the environment are honoured). The SDK's own retries are off.
    """

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key_env: str | None = None,
        json_mode: JsonMode = "json_schema",
        timeout_s: float = 120.0,
        max_connections: int = 1024,
    ) -> None:
        self.model = model
        self.api_key_env = api_key_env or DEFAULT_KEY_ENV
        self.json_mode: JsonMode = json_mode
        key = os.environ.get(self.api_key_env)
        if not key:
            if base_url is None or not is_loopback(base_url):
                where = base_url or "the OpenAI API"
                raise ConfigError(
                    f"the environment variable {self.api_key_env} is not set, but {where} needs "
                    f"an API key: export {self.api_key_env}=... or name another variable with "
                    "api_key_env"
                )
            key = _LOCAL_PLACEHOLDER_KEY
        library = _http_library()
        pool = library.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        )
        self._client = openai.AsyncOpenAI(
            api_key=key,
            base_url=base_url,
            timeout=timeout_s,
            max_retries=0,
            http_client=_http_client(pool, timeout_s),
        )
        self.base_url: str = str(self._client.base_url).rstrip("/")
        self._formats = ResponseFormats(json_mode)

    def __repr__(self) -> str:
        return (
            f"OpenAIBackend(model={self.model!r}, base_url={without_credentials(self.base_url)!r})"
        )

    async def complete(self, request: Request) -> Completion:
        arguments: dict[str, Any] = {
            "model": self.model,
            "messages": request.chat_messages(),
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.seed is not None:
            arguments["seed"] = request.seed
        if request.json_schema is not None and self.json_mode != "none":
            arguments["response_format"] = self._formats.for_schema(request.json_schema)
        started = time.perf_counter()
        response = await self._client.chat.completions.create(**arguments)
        latency = time.perf_counter() - started
        choices = getattr(response, "choices", None)
        if not choices:
            raise BackendFailure("bad_body", "the response has no choices")
        text = choices[0].message.content or ""
        usage = getattr(response, "usage", None)
        if usage is not None and usage.prompt_tokens is not None:
            prompt_tokens = int(usage.prompt_tokens)
            completion_tokens = int(usage.completion_tokens or 0)
        else:
            prompt_tokens = estimate_tokens("".join(c for _, c in request.messages))
            completion_tokens = estimate_tokens(text)
        return Completion(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            latency_s=latency,
            model=str(getattr(response, "model", None) or self.model),
        )

    async def aclose(self) -> None:
        await self._client.close()


def is_loopback(base_url: str) -> bool:
    """True for a URL on this machine (127.x, ::1, localhost), which needs no API key."""
    host = urlsplit(base_url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def estimate_tokens(text: str) -> int:
    """About four characters per token, for servers that report no usage."""
    return max(1, len(text) // 4)


def _http_client(pool: Any, timeout_s: float) -> Any:
    """The SDK's client on its aiohttp transport (``openai[aiohttp]``): about a third of the CPU
    per call of its default httpx transport at hundreds of concurrent calls. Without aiohttp,
    the default transport."""
    try:
        return openai.DefaultAioHttpClient(limits=pool, timeout=timeout_s)
    except RuntimeError:  # the SDK's aiohttp extra is not installed
        return openai.DefaultAsyncHttpxClient(limits=pool, timeout=timeout_s)


def _http_library() -> ModuleType:
    """The HTTP library the installed SDK is built on (httpx, or httpx2 in newer releases)."""
    for name in ("httpx2", "httpx"):
        try:
            library = importlib.import_module(name)
        except ImportError:
            continue
        if issubclass(openai.DefaultAsyncHttpxClient, library.AsyncClient):
            return library
    raise RuntimeError("cannot tell which HTTP library the openai SDK uses")
