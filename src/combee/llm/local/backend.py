"""An embedded local model: a GGUF file run in-process by llama.cpp (``llama-cpp-python``).

One ``Llama`` object is not thread-safe, so every call runs on one dedicated worker thread while
callers stay async; concurrent requests simply queue. Reading a prompt is the slow part on a
CPU, so prompts that share a long prefix (the playbook) must not re-read it: llama.cpp reuses
the previous prompt's key/value cache up to the longest shared prefix, and
:class:`PromptStateCache` keeps a few more states so that alternating roles (generator,
reflector, curator: each with its own prefix) still find theirs.

Threads: unless ``n_threads`` is given, each call uses the cores other processes leave free
(:class:`~combee.llm.local.threads.FreeCores`), and llama.cpp's OpenMP threads spin only briefly
before sleeping when they wait for each other (:data:`~combee.llm.local.library.OMP_SPIN_COUNT`):
on a busy CPU a call then slows by its lost share of the cores, not by orders of magnitude.

Stopping: a running call is abortable. llama.cpp asks an abort callback at every step of its
computation (prompt and generated tokens alike); the callback reads one byte this backend sets
when the call is cancelled (asyncio cancellation of :meth:`LocalBackend.complete`, as when
Ctrl-C or SIGTERM stops a run), when the backend is closed, or when the interpreter exits. The
call then ends within one step with an :class:`~combee.errors.LLMCallError`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext, suppress
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

from combee.errors import ConfigError, LLMCallError
from combee.llm.local.abort import AbortFlag
from combee.llm.local.call_arguments import CallArguments
from combee.llm.local.library import import_llama_cpp
from combee.llm.local.progress import PROGRESS_EVERY_S, SLOW_CALL_S, CallWatch, slow_call_advice
from combee.llm.local.prompt_cache import PromptStateCache
from combee.llm.local.threads import FreeCores, available_cores
from combee.llm.local.tools import offered_tools, tool_completion, tool_reply_schema
from combee.llm.types import Completion, ModelLimits, Request

T = TypeVar("T")
logger = logging.getLogger(__name__)


class _Llama(Protocol):
    """The part of ``llama_cpp.Llama`` this backend uses."""

    ctx: Any
    """The llama.cpp context (for its thread count and running counters)."""

    def create_chat_completion(self, **kwargs: Any) -> Mapping[str, Any]: ...

    def close(self) -> None: ...


__all__ = ["LocalBackend"]


class _Call:
    """One request's place in the queue: cancelled before or while it runs."""

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False


_LIVE: weakref.WeakSet[LocalBackend] = weakref.WeakSet()


def _stop_all_at_exit() -> None:
    """At interpreter exit, before the worker threads are joined: stop the running calls."""
    for backend in list(_LIVE):
        backend.stop()


# Runs before ``concurrent.futures`` joins its threads (registered after it, so run first);
# AttributeError: another Python; RuntimeError: already shutting down.
with suppress(AttributeError, RuntimeError):
    threading._register_atexit(_stop_all_at_exit)  # type: ignore[attr-defined]


class LocalBackend:
    """A :class:`~combee.llm.types.Backend` that runs a GGUF model in this process.

    ``n_threads``: the threads llama.cpp computes with. ``None`` (the default) adapts to the
    machine before each call: the cores this process may run on minus the cores other
    processes kept busy since the previous call (at least 0.1 s, measured from ``/proc/stat``;
    see :class:`~combee.llm.local.threads.FreeCores`), at least 1. A number fixes the count.
    """

    def __init__(
        self,
        model_path: str,
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        seed: int = 0,
        verbose: bool = False,
        prompt_cache_states: int = 3,
        progress_every_s: float | None = PROGRESS_EVERY_S,
    ) -> None:
        self._llama_cpp = import_llama_cpp()
        self.model_path = Path(model_path)
        self.model = f"local:{self.model_path.name}"
        self.n_ctx = n_ctx
        self.n_threads = n_threads or available_cores()
        """The most threads a call uses (every one of them when ``n_threads`` was given)."""
        self.adapt_threads = n_threads is None
        self.threads_in_use = self.n_threads
        """The threads of the current or last call."""
        self._free_cores = FreeCores(self.n_threads)
        self._abort = AbortFlag(self._llama_cpp)
        self._lock = threading.Lock()
        self._running: _Call | None = None
        self._stopping = False
        self.seed = seed
        self.verbose = verbose
        self.prompt_cache = PromptStateCache(prompt_cache_states) if prompt_cache_states else None
        self.load_seconds: float | None = None
        """Seconds the model took to load, once it has been loaded."""
        self._llama: _Llama | None = None
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="combee-llama")
        self._closed = False
        self._call_arguments = CallArguments(self._llama_cpp, seed)
        self._progress_every_s = progress_every_s
        self._advised = False
        _LIVE.add(self)

    async def load(self) -> float:
        """Load the model now instead of on the first call; return the load time in seconds."""
        await self._run(self._ensure_loaded)
        assert self.load_seconds is not None
        return self.load_seconds

    async def complete(self, request: Request) -> Completion:
        call = _Call()
        try:
            return await self._run(self._complete_blocking, request, call)
        except asyncio.CancelledError:
            self._cancel(call)
            raise

    def stop(self) -> None:
        """Stop the running call within one step of llama.cpp, and refuse the queued ones
        (each ends in an :class:`LLMCallError`). Safe from any thread; :meth:`aclose` calls it.
        """
        with self._lock:
            self._stopping = True
            self._abort.set()

    def _cancel(self, call: _Call) -> None:
        with self._lock:
            call.cancelled = True
            if self._running is call:
                self._abort.set()

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.stop()
        await asyncio.get_running_loop().run_in_executor(self._worker, self._unload)
        self._worker.shutdown(wait=True)

    async def _run(self, function: Callable[..., T], *args: Any) -> T:
        if self._closed:
            raise LLMCallError(f"{self.model}: the local model has been closed")
        return await asyncio.get_running_loop().run_in_executor(self._worker, function, *args)

    # Everything below runs on the worker thread only.

    def _ensure_loaded(self) -> _Llama:
        if self._llama is not None:
            return self._llama
        started = time.perf_counter()
        try:
            llama = self._llama_cpp.Llama(
                model_path=str(self.model_path),
                n_ctx=self.n_ctx,
                n_threads=self.threads_in_use,
                n_threads_batch=self.threads_in_use,
                seed=self.seed,
                verbose=self.verbose,
            )
        except (ValueError, RuntimeError, OSError) as error:
            raise ConfigError(
                f"cannot load the local model {self.model_path}: {error} "
                "(is it a complete GGUF file llama.cpp supports?)"
            ) from error
        if self.prompt_cache is not None:
            llama.set_cache(self.prompt_cache)
        self._abort.install(self._llama_cpp, llama)
        self.load_seconds = time.perf_counter() - started
        logger.info("loaded %s in %.1f s", self.model_path.name, self.load_seconds)
        self._llama = cast(_Llama, llama)
        return self._llama

    def _apply_threads(self, llama: Any) -> int:
        """Set the call's thread count (see the class docstring); return it."""
        if not self.adapt_threads:
            return self.threads_in_use
        threads = self._free_cores.measure()
        if threads != self.threads_in_use:
            busy = self._free_cores.busy_elsewhere or 0.0
            logger.info(
                "%s: computing with %d thread(s) (other processes keep %.1f of %d cores busy)",
                self.model, threads, busy, os.cpu_count() or self.n_threads,
            )  # fmt: skip
            self._llama_cpp.llama_set_n_threads(llama.ctx, threads, threads)
            self.threads_in_use = threads
        return threads

    def _begin(self, call: _Call) -> None:
        with self._lock:
            if self._stopping or call.cancelled:
                raise LLMCallError(f"{self.model}: the call was stopped before it started")
            self._running = call
            self._abort.clear()

    def _end(self) -> None:
        with self._lock:
            self._running = None

    def _complete_blocking(self, request: Request, call: _Call) -> Completion:
        self._begin(call)
        try:
            return self._complete_running(request)
        finally:
            self._end()

    def _complete_running(self, request: Request) -> Completion:
        if not self.adapt_threads or self._llama is not None:
            llama = self._ensure_loaded()
            self._apply_threads(llama)
        else:  # the first call: load with the count measured now
            self.threads_in_use = self._free_cores.measure()
            llama = self._ensure_loaded()
        tool_schema = tool_reply_schema(request) if offered_tools(request) else None
        arguments = self._call_arguments.for_request(request, tool_schema)
        schema = tool_schema or request.json_schema
        label = "call" if schema is None else f"{schema.name} call"
        started = time.perf_counter()
        try:
            with self._watch(llama, f"{self.model}, {label}"):
                reply = llama.create_chat_completion(**arguments)
        except ValueError as error:
            if "exceed context window" in str(error):
                raise LLMCallError(
                    f"{self.model}: the prompt does not fit the context window of "
                    f"n_ctx={self.n_ctx} tokens ({error}); raise n_ctx or shorten the prompt "
                    "(a smaller playbook or fewer items per call)"
                ) from error
            raise LLMCallError(
                f"{self.model}: the local model rejected the call: {error}"
            ) from error
        except RuntimeError as error:
            if self._abort:
                raise LLMCallError(f"{self.model}: the call was stopped") from None
            raise LLMCallError(f"{self.model}: the local model failed: {error}") from error
        latency = time.perf_counter() - started
        choice: Mapping[str, Any] = reply["choices"][0]
        usage: Mapping[str, Any] = reply.get("usage") or {}
        if latency > SLOW_CALL_S and not self._advised:
            self._advised = True
            tokens = (int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)))
            advice = slow_call_advice(
                self.model, label, latency, tokens, request.max_tokens, self.threads_in_use
            )
            logger.warning("%s", advice)
        text = str(choice["message"].get("content") or "")
        calls: tuple[dict[str, Any], ...] = ()
        if tool_schema is not None:
            text, calls = tool_completion(text, request)
        return Completion(
            text=text,
            tool_calls=calls,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            latency_s=latency,
            model=self.model,
            cost=0.0,
            finish_reason=choice.get("finish_reason"),
        )

    def limits(self) -> ModelLimits:
        """``n_ctx`` tokens per call; replies held by the bounded schema's grammar."""
        return ModelLimits(context_window=self.n_ctx, bounded_replies=True)

    def _watch(self, llama: _Llama, label: str) -> AbstractContextManager[object]:
        if self._progress_every_s is None:
            return nullcontext()
        return CallWatch(
            lambda: self._tokens_done(llama),
            lambda: int(getattr(llama, "n_tokens", 0)),
            label,
            self._progress_every_s,
        )

    def _tokens_done(self, llama: _Llama) -> int:
        """Prompt tokens read and reply tokens written since the model was loaded: llama.cpp's
        running counters (read from the watch's thread while the call runs; two integers)."""
        data = self._llama_cpp.llama_perf_context(llama.ctx)
        return int(data.n_p_eval) + int(data.n_eval)

    def _unload(self) -> None:
        if self._llama is not None:
            self._llama.close()
            self._llama = None
