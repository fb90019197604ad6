"""The SQLite response cache, alone and behind the LLM client over HTTP."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from combee.errors import ConfigError
from combee.llm import LLM, Completion, JsonSchema, OpenAIBackend, Request, ResponseCache
from combee.llm.cache import cache_key
from combee.sim import RunningServer, SimConfig, echo_responder, serve_in_thread

COMPLETION = Completion("hello", 10, 2, 0.5, "sim", cost=0.25)
QUESTION = [{"role": "user", "content": "what is 2 + 2?"}]
SCHEMA = JsonSchema(
    "answer", {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
)


async def test_put_then_get_survives_reopening(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "sub" / "cache.sqlite")
    assert await cache.get("k") is None
    await cache.put("k", COMPLETION)
    assert await cache.get("k") == COMPLETION
    cache.close()
    cache.close()
    reopened = ResponseCache(tmp_path / "sub" / "cache.sqlite")
    assert await reopened.get("k") == COMPLETION
    assert await reopened.get("other") is None
    reopened.close()


async def test_many_puts_are_all_written(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    for i in range(200):
        await cache.put(f"k{i}", dataclasses.replace(COMPLETION, text=str(i)))
    cache.close()
    reopened = ResponseCache(tmp_path / "cache.sqlite")
    texts = [(await reopened.get(f"k{i}")) for i in range(200)]
    reopened.close()
    assert [c.text if c else None for c in texts] == [str(i) for i in range(200)]


def key(request: Request, **overrides: object) -> str:
    options: dict[str, object] = {"model": "m", "base_url": "http://h/v1", "json_mode": "none"}
    options.update(overrides)
    return cache_key(request, **options)  # type: ignore[arg-type]


def test_key_depends_on_everything_that_shapes_the_reply() -> None:
    base = Request.build(QUESTION)
    variants = {
        key(base),
        key(base, model="m2"),
        key(base, base_url="http://other/v1"),
        key(base, json_mode="json_schema"),
        key(Request.build(QUESTION, temperature=0.7)),
        key(Request.build(QUESTION, max_tokens=10)),
        key(Request.build(QUESTION, seed=1)),
        key(Request.build(QUESTION, json_schema=SCHEMA)),
        key(Request.build([{"role": "user", "content": "what is 2 + 3?"}])),
    }
    assert len(variants) == 9
    assert key(base) == key(Request.build(list(QUESTION)))


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve_in_thread(echo_responder, SimConfig()) as running:
        yield running


def llm_with_key(
    server: RunningServer, path: Path, variable: str, monkeypatch: pytest.MonkeyPatch, key: str
) -> LLM:
    monkeypatch.setenv(variable, key)
    backend = OpenAIBackend(model="sim", base_url=server.base_url, api_key_env=variable)
    return LLM(backend, cache=ResponseCache(path), seed=1)


async def test_second_identical_call_is_served_from_the_cache(
    server: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.reset()
    path = tmp_path / "cache.sqlite"
    first_llm = llm_with_key(server, path, "COMBEE_KEY_A", monkeypatch, "sk-first-secret")
    first = await first_llm.complete(QUESTION, role="generator")
    again = await first_llm.complete(QUESTION, role="generator")
    await first_llm.aclose()
    assert len(server.records) == 1
    assert not first.cached
    assert again.cached
    assert again.text == first.text
    usage = first_llm.usage()["generator"]
    assert (usage.calls, usage.cached_calls) == (2, 1)
    assert usage.prompt_tokens == first.prompt_tokens  # the hit spent nothing
    assert usage.latency_s == first.latency_s > 0
    assert usage.replayed_s == first.latency_s  # what the replayed call took when first made
    assert [call.attempts for call in first_llm.calls] == [1, 0]

    # Another key in another variable: the same request still hits the cache.
    second_llm = llm_with_key(server, path, "COMBEE_KEY_B", monkeypatch, "sk-second-secret")
    hit = await second_llm.complete(QUESTION, role="generator")
    await second_llm.aclose()
    assert hit.cached
    assert len(server.records) == 1
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert b"sk-first-secret" not in stored
    assert b"sk-second-secret" not in stored


async def test_only_valid_json_replies_are_cached(
    server: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    replies = iter(["not json", '{"a": "fixed"}', '{"a": "fresh"}'])
    server.reset(lambda body: next(replies))
    path = tmp_path / "cache.sqlite"
    llm = llm_with_key(server, path, "COMBEE_KEY_A", monkeypatch, "k")
    value, _ = await llm.complete_json(QUESTION, role="curator", schema=SCHEMA)
    assert value == {"a": "fixed"}
    # The invalid first reply was not cached: the same call goes back to the server.
    value, completion = await llm.complete_json(QUESTION, role="curator", schema=SCHEMA)
    await llm.aclose()
    assert value == {"a": "fresh"}
    assert not completion.cached
    assert len(server.records) == 3


def test_a_file_that_is_not_a_cache_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sqlite"
    bad.write_text("not a database")
    with pytest.raises(ConfigError, match="cannot be used as the response cache") as caught:
        ResponseCache(bad)
    assert caught.value.setting == "cache"


async def test_a_damaged_entry_is_a_miss_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    cache = ResponseCache(path)
    await cache.put("good", COMPLETION)
    cache.close()
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO responses (key, completion) VALUES ('bad', '{not json')")
    cache = ResponseCache(path)
    try:
        assert await cache.get("bad") is None
        hit = await cache.get("good")
        assert hit is not None and hit.text == "hello"
    finally:
        cache.close()


async def test_a_cached_endpoint_skips_the_preflight_call(tmp_path: Path) -> None:
    from combee.llm import connect
    from combee.sim.ace_script import ace_responder

    with serve_in_thread(ace_responder) as server:
        for _ in range(2):
            llm = connect("sim", base_url=server.base_url, cache=tmp_path / "c.sqlite")
            try:
                await llm.preflight()
            finally:
                await llm.aclose()
        asked = [r for r in server.records if r.schema_name == "preflight"]
    assert len(asked) == 1  # the second preflight was answered from the cache
