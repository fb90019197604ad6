"""Calls made off a run's critical path: one thread of their own runs them in order from a
bounded queue, so a slow or hung server they talk to (the MLflow tracking server) never holds
up an iteration. The caller never waits, except where it asks to (:meth:`BackgroundCalls.wait`,
with a time limit)."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

Job = Callable[[], None]


class BackgroundCalls:
    """Runs the jobs given to :meth:`submit`, one after another, on a daemon thread (started
    at the first job). A job handles its own failures; one that raises anyway is logged at
    debug level and the next one runs."""

    def __init__(self, name: str, capacity: int) -> None:
        self._name = name
        self._jobs: queue.Queue[Job] = queue.Queue(capacity)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._busy_since: float | None = None

    def submit(self, job: Job) -> bool:
        """Queue ``job``; False (the job dropped) when the queue is full."""
        try:
            self._jobs.put_nowait(job)
        except queue.Full:
            return False
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
                self._thread.start()
        return True

    def wait(self, timeout_s: float) -> bool:
        """Wait until every queued job has run, at most ``timeout_s``; whether they all have."""
        done = self._jobs.all_tasks_done
        with done:
            return done.wait_for(lambda: self._jobs.unfinished_tasks == 0, timeout_s)

    def busy_for(self) -> float:
        """Seconds the job running now has taken so far (0.0 when idle)."""
        with self._lock:
            since = self._busy_since
        return 0.0 if since is None else time.monotonic() - since

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            with self._lock:
                self._busy_since = time.monotonic()
            try:
                job()
            except Exception:  # a job's own failure handling failed: the next one still runs
                log.debug("a background call failed", exc_info=True)
            finally:
                with self._lock:
                    self._busy_since = None
                self._jobs.task_done()
