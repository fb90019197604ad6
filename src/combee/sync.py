"""Synchronous entry points over the async library."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from combee.errors import ConfigError

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T], *, async_name: str) -> T:
    """Run ``coro`` to its end from synchronous code. Inside a running event loop (a notebook,
    an async app) that cannot work: a ConfigError says to await ``async_name`` instead."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise ConfigError(
        "was called inside a running event loop (a notebook, an async app): use "
        f"`await {async_name}(...)` there",
        setting=async_name.removesuffix("_async"),
    )
