"""Build the LLM client from command-line settings."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from combee.errors import ConfigError
from combee.llm.cache import ResponseCache
from combee.llm.client import LLM, Prices
from combee.llm.openai_backend import OpenAIBackend
from combee.llm.types import Backend, JsonMode

JSON_MODES: tuple[JsonMode, ...] = ("json_schema", "json_object_schema", "json_object", "none")
CLIENTS = ("openai", "lean")


@dataclass(frozen=True)
class EndpointSettings:
    model: str
    base_url: str | None
    api_key_env: str
    json_mode: str
    concurrency: int
    timeout_s: float
    max_retries: int
    cache_path: Path | None
    price_prompt: float | None
    price_completion: float | None
    seed: int
    client: str = "openai"
    """HTTP client for an endpoint: ``openai`` (the SDK) or ``lean`` (the same wire format on a
    small keep-alive HTTP/1.1 client, far cheaper per call at high concurrency)."""

    def describe(self) -> dict[str, object]:
        """The settings as recorded in config.json: names only, never a key."""
        return {
            "model": self.model,
            "base_url": self.base_url,
            "api_key_env": self.api_key_env,
            "json_mode": self.json_mode,
            "concurrency": self.concurrency,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "client": self.client,
            "cache": str(self.cache_path) if self.cache_path else None,
        }


def _json_mode(value: str) -> JsonMode:
    for mode in JSON_MODES:
        if value == mode:
            return mode
    raise ConfigError(f"--json-mode {value!r} is not one of {', '.join(JSON_MODES)}")


def is_local(model: str) -> bool:
    return model == "local" or model.startswith("local:")


def make_backend(settings: EndpointSettings) -> Backend:
    mode = _json_mode(settings.json_mode)
    if settings.client not in CLIENTS:
        raise ConfigError(f"--client {settings.client!r} is not one of {', '.join(CLIENTS)}")
    if is_local(settings.model):
        if settings.client == "lean":
            raise ConfigError("--client lean talks HTTP; the embedded local model needs no client")
        from combee.llm.local_backend import LocalBackend
        from combee.llm.local_models import resolve_local_model

        return LocalBackend(str(resolve_local_model(settings.model)), seed=settings.seed)
    if settings.client == "lean":
        from combee.llm.lean_backend import LeanBackend

        return LeanBackend(
            model=settings.model,
            base_url=settings.base_url,
            api_key_env=settings.api_key_env,
            json_mode=mode,
        )
    return OpenAIBackend(
        model=settings.model,
        base_url=settings.base_url,
        api_key_env=settings.api_key_env,
        json_mode=mode,
        timeout_s=settings.timeout_s,
    )


def make_llm(settings: EndpointSettings) -> LLM:
    if settings.concurrency < 1:
        raise ConfigError(f"--concurrency must be at least 1 (got {settings.concurrency})")
    prices = None
    if settings.price_prompt is not None or settings.price_completion is not None:
        prices = Prices(settings.price_prompt or 0.0, settings.price_completion or 0.0)
    cache = None
    if settings.cache_path is not None:
        settings.cache_path.parent.mkdir(parents=True, exist_ok=True)
        cache = ResponseCache(settings.cache_path)
    return LLM(
        make_backend(settings),
        concurrency=settings.concurrency,
        max_retries=settings.max_retries,
        timeout_s=settings.timeout_s,
        cache=cache,
        # The embedded model takes the schema as a grammar; it also reads it in the system prompt.
        json_mode="json_object_schema"
        if is_local(settings.model)
        else _json_mode(settings.json_mode),
        prices=prices,
        seed=settings.seed,
    )
