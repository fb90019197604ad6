"""all_or_none: concurrent calls whose first failure cancels the rest (none left to fail unread)."""

from __future__ import annotations

import asyncio
import gc

import pytest

from combee.core.executor import all_or_none


def test_results_come_back_in_the_order_of_the_calls() -> None:
    async def after(delay: float, value: int) -> int:
        await asyncio.sleep(delay)
        return value

    assert asyncio.run(all_or_none([after(0.02, 1), after(0.0, 2), after(0.01, 3)])) == [1, 2, 3]


def test_the_first_failure_is_raised_alone_and_the_other_calls_are_cancelled() -> None:
    cancelled: list[str] = []
    unread: list[object] = []

    async def fails() -> int:
        await asyncio.sleep(0)
        raise ValueError("the endpoint refused")

    async def fails_later() -> int:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.append("later")
            raise
        raise ValueError("never read")

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _, ctx: unread.append(ctx))
        with pytest.raises(ValueError, match="the endpoint refused"):
            await all_or_none([fails(), fails_later()])
        assert cancelled == ["later"]  # already, not when the loop closes

    asyncio.run(main())
    gc.collect()
    assert unread == []
