"""A reply is read only up to its limit, with either client, whether the server answers or
fails: the scripted server floods 48 MB and counts the bytes that left it before the client hung
up; the message quotes what was read and names the setting that bounds it."""

from __future__ import annotations

import re

import pytest

from combee.errors import ConfigError, LLMCallError
from combee.llm import JsonSchema, connect
from combee.llm.reply_limit import reply_byte_limit
from combee.sim import SimConfig, serve_in_thread

FLOOD = 48 << 20
BUFFERED = 12 << 20
"""More than the sockets between the server and the client hold (a few MB on loopback)."""
SCHEMA = JsonSchema("answer", {"type": "object"})
HI = [{"role": "user", "content": "hi"}]


async def _refused(client: str, config: SimConfig, **settings: int) -> tuple[LLMCallError, int]:
    """The error of one call against a flooding server, and the bytes the server sent."""
    max_tokens = settings.pop("max_tokens", 64)
    with serve_in_thread(lambda body: "{}", config) as server:
        llm = connect("sim", base_url=server.base_url, client=client, max_retries=0, **settings)
        try:
            with pytest.raises(LLMCallError) as caught:
                await llm.complete_json(HI, role="probe", schema=SCHEMA, max_tokens=max_tokens)
        finally:
            await llm.aclose()
        return caught.value, server.flood_sent


def _bytes_read(message: str) -> int:
    found = re.search(r"reading stopped after ([\d,]+) bytes", message)
    assert found is not None, message
    return int(found[1].replace(",", ""))


@pytest.mark.parametrize("client", ["openai", "lean"])
async def test_a_flooding_reply_is_read_up_to_what_max_tokens_allows(client: str) -> None:
    error, sent = await _refused(client, SimConfig(flood_bytes=FLOOD))
    assert sent < BUFFERED  # the rest of the 48 MB never left the server
    limit = reply_byte_limit(64)
    assert error.kind == "oversized"
    assert f"more than {limit:,} bytes, more than max_tokens=64 can take" in str(error)
    read = _bytes_read(str(error))
    assert limit < read <= limit + (128 << 10)  # the chunk that crossed it, no more


@pytest.mark.parametrize("client", ["openai", "lean"])
async def test_a_flooding_error_body_is_read_up_to_the_limit(client: str) -> None:
    error, sent = await _refused(client, SimConfig(flood_bytes=FLOOD, rate_500=1.0))
    assert sent < BUFFERED
    assert error.kind == "oversized"
    assert _bytes_read(str(error)) <= reply_byte_limit(64) + (128 << 10)


@pytest.mark.parametrize("client", ["openai", "lean"])
async def test_max_reply_bytes_bounds_a_reply_that_max_tokens_would_allow(client: str) -> None:
    config = SimConfig(flood_bytes=4 << 20)
    error, sent = await _refused(client, config, max_tokens=100_000, max_reply_bytes=100_000)
    assert "more than 100,000 bytes, the most max_reply_bytes=100000 allows" in str(error)
    assert 100_000 < _bytes_read(str(error)) <= 100_000 + (128 << 10)
    assert sent < 4 << 20


def test_max_reply_bytes_is_checked() -> None:
    with pytest.raises(ConfigError) as caught:
        connect("sim", base_url="http://127.0.0.1:9/v1", max_reply_bytes=1000)
    assert caught.value.setting == "max_reply_bytes"
