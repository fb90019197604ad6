"""``combee.train`` called while an event loop runs (a notebook's cell): Ctrl-C, the notebook's
interrupt, stops the run on its worker thread and reaches the caller."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import combee
from combee.llm import Endpoint
from combee.sim import Reply, serve_in_thread
from combee.sim.ace_script import ace_responder


def test_ctrl_c_while_waiting_cancels_the_run_and_reaches_the_caller(tmp_path: Path) -> None:
    asked, released = threading.Event(), threading.Event()
    caller = threading.get_ident()

    def stalled(body: Mapping[str, Any]) -> str | Reply:
        asked.set()  # the run is under way on its worker thread, waiting for this reply
        released.wait(10)
        return ace_responder(body)

    def interrupt() -> None:
        if asked.wait(60):
            signal.pthread_kill(caller, signal.SIGINT)  # what the interrupt button sends

    async def cell() -> None:  # a cell's code: the kernel's loop runs while it does
        combee.train(
            "formula", strategy="naive", batch_size=2, train_limit=2, val_limit=0, test_limit=1,
            run_dir=tmp_path / "run", llm=Endpoint("sim", base_url=server.base_url),
        )  # fmt: skip

    # A loop of the test's own: asyncio.run (and pytest's async tests) would take Ctrl-C to
    # cancel their main task; a kernel's loop, like this one, leaves it a KeyboardInterrupt.
    loop = asyncio.new_event_loop()
    # Ctrl-C as at a terminal: a test runner started in the background inherits "ignore".
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    with serve_in_thread(stalled) as server:
        threading.Thread(target=interrupt).start()
        try:
            with pytest.raises(KeyboardInterrupt):
                loop.run_until_complete(cell())
        finally:
            released.set()
            loop.close()
            signal.signal(signal.SIGINT, previous)
    assert asked.is_set()
    assert not any(t.name == "combee.train_async" for t in threading.enumerate())
    assert not (tmp_path / "run" / "final_results.json").exists()
