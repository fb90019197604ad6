"""The embedded llama.cpp backend, end to end on the small SmolLM2 model."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jsonschema
import pytest

from combee.errors import ConfigError, LLMCallError
from combee.llm.connect import THREADS_ENV, local_threads
from combee.llm.local.backend import LocalBackend
from combee.llm.local.library import INSTALL_HINT
from combee.llm.local.prompt_cache import PromptStateCache
from combee.llm.types import JsonSchema, Request


def test_missing_llama_cpp_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # makes `import llama_cpp` fail

    with pytest.raises(ConfigError) as caught:
        LocalBackend("model.gguf")

    assert str(caught.value) == INSTALL_HINT
    assert "pip install 'combee[local]'" in str(caught.value)


ANSWER_SCHEMA = JsonSchema(
    name="answer",
    schema={
        "type": "object",
        "properties": {
            "reasoning": {"type": "string", "maxLength": 200},
            "final_answer": {"type": "integer"},
        },
        "required": ["reasoning", "final_answer"],
        "additionalProperties": False,
    },
)


@pytest.fixture(scope="module")
def smollm2() -> Path:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    from combee.llm.local.models import resolve_local_model

    try:
        return resolve_local_model("local:smollm2", progress=False)
    except ConfigError as error:
        pytest.skip(f"SmolLM2 is not installed: {error}")


def question(text: str, **options: Any) -> Request:
    return Request.build(
        [
            {"role": "system", "content": "You answer arithmetic questions in JSON."},
            {"role": "user", "content": text},
        ],
        **options,
    )


@pytest.mark.slow
async def test_json_schema_request_returns_valid_json(smollm2: Path) -> None:
    backend = LocalBackend(str(smollm2), n_ctx=1024)
    try:
        completion = await backend.complete(
            question("What is 2 + 3?", json_schema=ANSWER_SCHEMA, max_tokens=120)
        )
    finally:
        await backend.aclose()

    reply = json.loads(completion.text)
    jsonschema.validate(reply, ANSWER_SCHEMA.schema)
    assert completion.prompt_tokens > 0
    assert completion.completion_tokens > 0
    assert completion.model == f"local:{smollm2.name}"
    assert backend.load_seconds is not None


@pytest.mark.slow
async def test_concurrent_calls_run_one_at_a_time_on_one_thread(smollm2: Path) -> None:
    backend = LocalBackend(str(smollm2), n_ctx=1024)
    await backend.load()
    llama: Any = backend._llama
    original = llama.create_chat_completion
    spans: list[tuple[float, float, int]] = []

    def recorded(**kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(**kwargs)
        finally:
            spans.append((started, time.perf_counter(), threading.get_ident()))

    llama.create_chat_completion = recorded
    try:
        completions = await asyncio.gather(
            *(backend.complete(question(f"What is {n} + {n}?", max_tokens=24)) for n in range(1, 4))
        )
    finally:
        await backend.aclose()

    assert len(completions) == 3
    assert all(c.completion_tokens > 0 for c in completions)
    assert len(spans) == 3
    assert len({thread for _, _, thread in spans}) == 1
    assert threading.get_ident() not in {thread for _, _, thread in spans}
    ordered = sorted(spans)
    for (_, first_end, _), (second_start, _, _) in itertools.pairwise(ordered):
        assert first_end <= second_start


@pytest.mark.slow
async def test_prompt_tokens_grow_with_the_prompt(smollm2: Path) -> None:
    backend = LocalBackend(str(smollm2), n_ctx=1024)
    short_text = "What is 1 + 1?"
    long_text = "Some context: " + "the sky is blue; " * 40 + short_text
    try:
        short = await backend.complete(question(short_text, max_tokens=8))
        longer = await backend.complete(question(long_text, max_tokens=8))
    finally:
        await backend.aclose()

    # Each repetition of the filler adds several tokens.
    assert longer.prompt_tokens >= short.prompt_tokens + 40 * 3


@pytest.mark.slow
async def test_same_seed_gives_the_same_sampled_reply(smollm2: Path) -> None:
    backend = LocalBackend(str(smollm2), n_ctx=1024)
    request = question("Name three colours.", temperature=0.9, max_tokens=24, seed=7)
    try:
        first = await backend.complete(request)
        second = await backend.complete(request)
    finally:
        await backend.aclose()

    assert first.text == second.text


@pytest.mark.slow
async def test_prompt_longer_than_the_context_is_a_call_error(smollm2: Path) -> None:
    backend = LocalBackend(str(smollm2), n_ctx=128)
    try:
        with pytest.raises(LLMCallError, match="n_ctx=128"):
            await backend.complete(question("word " * 400, max_tokens=8))
        # The backend stays usable after the rejected call.
        completion = await backend.complete(question("What is 1 + 1?", max_tokens=8))
    finally:
        await backend.aclose()

    assert completion.completion_tokens > 0


async def test_a_closed_backend_refuses_calls() -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    backend = LocalBackend("never-loaded.gguf")
    await backend.aclose()

    with pytest.raises(LLMCallError, match="closed"):
        await backend.complete(question("What is 1 + 1?"))


def fake_state(rows: int) -> Any:
    numpy = pytest.importorskip("numpy")
    return SimpleNamespace(scores=numpy.zeros((rows, 5), dtype=numpy.float32))


def test_prompt_state_cache_returns_the_longest_shared_prefix() -> None:
    cache = PromptStateCache(max_states=3)
    short, long = fake_state(4), fake_state(4)
    cache[[1, 2, 9]] = short
    cache[[1, 2, 3, 4, 9]] = long

    assert cache[[1, 2, 3, 4, 5]] is long
    assert cache[[1, 2, 7]] is short
    with pytest.raises(KeyError):
        cache[[8, 8]]
    assert short.scores.shape == (1, 5)  # only the last logits row is kept


def test_prompt_state_cache_evicts_the_least_recently_used() -> None:
    cache = PromptStateCache(max_states=2)
    first, second, third = fake_state(2), fake_state(2), fake_state(2)
    cache[[1, 1]] = first
    cache[[2, 2]] = second
    assert cache[[1, 1, 5]] is first  # touching it makes [2, 2] the oldest
    cache[[3, 3]] = third

    assert len(cache) == 2
    assert [2, 2] not in cache
    assert cache[[1, 1]] is first
    assert cache[[3, 3]] is third


def prompt_tokens_read(backend: LocalBackend) -> int:
    import llama_cpp

    llama: Any = backend._llama
    return int(llama_cpp.llama_perf_context(llama.ctx).n_p_eval)


@pytest.mark.slow
@pytest.mark.parametrize("states", [0, 3])
async def test_prompt_cache_keeps_a_prefix_across_an_interleaved_prompt(
    smollm2: Path, states: int
) -> None:
    import llama_cpp

    playbook = "PLAYBOOK\n" + "\n".join(
        f"[r-{i:05d}] check unit number {i} twice" for i in range(60)
    )
    backend = LocalBackend(str(smollm2), n_ctx=2048, prompt_cache_states=states)

    def with_playbook(text: str) -> Request:
        messages = [{"role": "system", "content": playbook}, {"role": "user", "content": text}]
        return Request.build(messages, max_tokens=8)

    try:
        await backend.complete(with_playbook("What is 1 + 1?"))
        await backend.complete(question("Say hello.", max_tokens=8))
        llama: Any = backend._llama
        llama_cpp.llama_perf_context_reset(llama.ctx)
        third = await backend.complete(with_playbook("What is 2 + 2?"))
        read = prompt_tokens_read(backend)
    finally:
        await backend.aclose()

    if states:
        assert read < third.prompt_tokens // 4
    else:
        assert read > third.prompt_tokens // 2  # only the chat template header is shared


def test_the_token_limit_covers_the_grammars_longest_reply() -> None:
    """A reply of one character per token must end by the grammar, never by the limit."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    from combee.methods.ace import schemas

    backend = LocalBackend("never-loaded.gguf")
    request = question("What is 1 + 1?", json_schema=schemas.GENERATOR, max_tokens=256)
    arguments = backend._call_arguments.for_request(request)
    fields = arguments["response_format"]["schema"]["properties"]
    # Each field at its bound: strings full, arrays full of full strings (with quotes, commas).
    longest = sum(
        len(key) + 6 + node["maxLength"]
        if node["type"] == "string"
        else len(key) + 6 + node["maxItems"] * (node["items"]["maxLength"] + 3)
        for key, node in fields.items()
    )
    assert arguments["max_tokens"] >= longest > 256
    plain = backend._call_arguments.for_request(question("What is 1 + 1?", max_tokens=256))
    assert plain["max_tokens"] == 256


def test_the_thread_count_can_be_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(THREADS_ENV, raising=False)
    assert local_threads() is None
    monkeypatch.setenv(THREADS_ENV, "3")
    assert local_threads() == 3
    monkeypatch.setenv(THREADS_ENV, "many")
    with pytest.raises(ConfigError, match="COMBEE_LOCAL_THREADS='many'"):
        local_threads()


@pytest.mark.slow
async def test_a_running_call_reports_its_progress_and_a_slow_one_draws_advice(
    smollm2: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("combee.llm.local.backend.SLOW_CALL_S", 0.0)  # every call is "slow"
    backend = LocalBackend(str(smollm2), n_ctx=1024, n_threads=1, progress_every_s=0.05)
    caplog.set_level(logging.INFO, logger="combee.llm")
    try:
        request = question("Count from 1 to 60, one number per line.", max_tokens=160)
        completion = await backend.complete(request)
        await backend.complete(request)
    finally:
        await backend.aclose()
    progress = [r.getMessage() for r in caplog.records if "tokens read or written" in
                r.getMessage()]  # fmt: skip
    assert progress, "no progress line while the call ran"
    done = [int(line.split(" so far, ")[1].split(" tokens read")[0]) for line in progress]
    assert max(done) > 0 and min(done) >= 0
    assert all("tokens/s" in line and "in the model's context" in line for line in progress)
    advice = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(advice) == 1  # once, not on every slow call
    text = advice[0].getMessage()
    assert f"{completion.completion_tokens} written" in text and "max_tokens" in text
