"""How much of a reply's HTTP body a backend reads: a server that ignores ``max_tokens`` (or
answers with a flood) must not fill the memory. Reading stops as soon as the body passes the
limit and the connection is dropped."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass

from combee.errors import parameter
from combee.llm.guards import DEFAULT_MAX_REPLY_BYTES, MIN_REPLY_CHARS, REPLY_CHARS_PER_TOKEN
from combee.llm.retry import BackendFailure

ENVELOPE_BYTES = 65_536
"""Room for what surrounds the reply's text in the body (ids, usage, tool-call wrappers)."""
ESCAPED_BYTES_PER_CHAR = 8
"""The most bytes a character may take in the body (a JSON escape such as ``\\ud83d``)."""


def reply_byte_limit(max_tokens: int) -> int:
    """Room for the longest reply :func:`combee.llm.guards.oversized_reply` accepts for
    ``max_tokens``, every character escaped, plus the envelope."""
    longest = max(MIN_REPLY_CHARS, REPLY_CHARS_PER_TOKEN * max_tokens)
    return ESCAPED_BYTES_PER_CHAR * longest + ENVELOPE_BYTES


@dataclass(frozen=True)
class ReplyLimit:
    """The most bytes of one call's reply body read: what its ``max_tokens`` allows
    (:func:`reply_byte_limit`), never more than ``max_reply_bytes``."""

    max_tokens: int
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES

    @property
    def most(self) -> int:
        return min(self.max_reply_bytes, reply_byte_limit(self.max_tokens))

    def refused(self, read: int) -> BackendFailure:
        """The failure of a call whose body passed the limit, ``read`` bytes read by then."""
        if self.max_reply_bytes < reply_byte_limit(self.max_tokens):
            why = f"the most {parameter('max_reply_bytes', self.max_reply_bytes)} allows"
        else:
            why = (
                f"more than {parameter('max_tokens', self.max_tokens)} can take: the server "
                "ignores the limit"
            )
        return BackendFailure(
            "oversized",
            f"the reply's body holds more than {self.most:,} bytes, {why}; reading stopped "
            f"after {read:,} bytes",
        )

    async def capped(self, chunks: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
        """``chunks``, refused as soon as they pass the limit."""
        read = 0
        async for chunk in chunks:
            read += len(chunk)
            if read > self.most:
                raise self.refused(read)
            yield chunk

    async def read(self, chunks: AsyncIterable[bytes]) -> bytes:
        """The body ``chunks`` make, refused as soon as it passes the limit."""
        return b"".join([chunk async for chunk in self.capped(chunks)])
