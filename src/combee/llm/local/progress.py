"""What a slow embedded-model call shows while it runs, and when the model is too slow.

On a CPU one call of the embedded model can take minutes (a 4,000-token prompt is read at
tens of tokens per second, a reply written at a few). :class:`CallWatch` logs, every
``every_s`` seconds while a call runs, how long it has run and how fast the model is going (the
tokens it has read and written, from llama.cpp's own running counters), so a slow call shows
progress rather than silence. :func:`slow_call_advice` is the one warning given when calls take
so long that the run's settings deserve a second look.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from types import TracebackType

logger = logging.getLogger("combee.llm.local")

PROGRESS_EVERY_S = 30.0
"""How often a running call reports its progress."""

SLOW_CALL_S = 300.0
"""A call slower than this draws one warning with what to change."""


class CallWatch:
    """A context manager around one call: a background thread logs its progress every
    ``every_s`` seconds until the call ends (nothing for a call shorter than that).

    ``tokens_done`` counts the tokens the model has read or written since it was loaded (it
    only grows); ``in_context`` is how many its context holds now. The context is not a
    measure of the work: a call starts by cutting it back to the prefix it shares with the
    last prompt (or a cached state's), so it can hold fewer tokens than before while the model
    reads the rest."""

    def __init__(
        self,
        tokens_done: Callable[[], int],
        in_context: Callable[[], int],
        label: str,
        every_s: float,
    ) -> None:
        self._tokens_done = tokens_done
        self._in_context = in_context
        self._label = label
        self._every_s = every_s
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._report, name="combee-llama-watch", daemon=True)

    def __enter__(self) -> CallWatch:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._done.set()
        self._thread.join()

    def _report(self) -> None:
        started = time.perf_counter()
        first = last = self._tokens_done()
        while not self._done.wait(self._every_s):
            now = self._tokens_done()
            elapsed = time.perf_counter() - started
            if now == first:  # llama.cpp counts a batch of the prompt once it is read whole
                logger.info(
                    "%s: %.0f s so far, reading the first batch of its prompt (%d tokens in "
                    "the model's context)",
                    self._label, elapsed, self._in_context(),
                )  # fmt: skip
                continue
            logger.info(
                "%s: %.0f s so far, %d tokens read or written (%.1f tokens/s; %d in the last "
                "%.0f s), %d in the model's context",
                self._label, elapsed, now - first, (now - first) / elapsed, now - last,
                self._every_s, self._in_context(),
            )  # fmt: skip
            last = now


def slow_call_advice(
    model: str,
    what: str,
    seconds: float,
    tokens: tuple[int, int],
    max_tokens: int,
    threads: int,
) -> str:
    """The warning for a call that took ``seconds`` (``tokens``: prompt and reply tokens): the
    measured work and what to change."""
    prompt, written = tokens
    return (
        f"the embedded model {model} took {seconds:.0f} s for one {what} ({prompt} prompt "
        f"tokens read, {written} written, on {threads} thread(s); replies may run to "
        f"max_tokens={max_tokens}). Calls of the embedded model run one at a time on this CPU: "
        "for a faster run lower max_tokens or the batch size, use local:smollm2 (faster, "
        "weaker), set COMBEE_LOCAL_THREADS to the free cores, or point base_url at a served "
        "model"
    )
