"""The map step on a Ray cluster: ``combee.train(..., executor=RayExecutor())``, ``--executor ray``.

For rollouts that need real environments (tool sandboxes, browsers, containers) or batches that
outgrow one process. Each batch's method and context are put in Ray's object store once; its
samples run on a pool of async Ray actors (many samples at once on each), each sample's
rollout and reflection as :func:`combee.core.executor.map_sample` does them here. Aggregation
stays on the driver. A method's LLM client travels as its endpoint and connects again on the
worker (without the response cache); the calls it makes there are added to the driver's usage.
A worker that raises, or dies, costs the samples it held (recorded as their failures), never
the run.

Ray is an optional dependency (``pip install 'combee[ray]'``). Without ``address`` the executor
joins the cluster named by ``RAY_ADDRESS``, else starts a local one on this machine.
"""

from __future__ import annotations

import asyncio
import importlib
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from combee.core.executor import MapOutcome, Rollouts, SampleFailure, map_sample
from combee.errors import ConfigError
from combee.tasks.base import Sample, Score

INSTALL_HINT = "the Ray executor needs Ray: pip install 'combee[ray]'"

CALLS_PER_WORKER = 256
"""Samples one actor runs at once (they wait on LLM calls, not on its CPU)."""


def _ray() -> Any:
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise ConfigError(INSTALL_HINT, setting="executor") from None


class _MapWorker:
    """A Ray actor: runs samples of the current batch against one copy of its method."""

    def __init__(self) -> None:
        self._key: str | None = None
        self._job: tuple[Any, Any, Any] | None = None
        self._lock = asyncio.Lock()
        self._seq = 0

    async def run(
        self, key: str, job: list[Any], sample: Sample, reflect: bool
    ) -> tuple[MapOutcome, int, dict[str, Any] | None]:
        async with self._lock:
            if key != self._key:
                await _close(self._job)
                self._job = await job[0]
                self._key = key
        assert self._job is not None
        method, context, score = self._job
        outcome = await map_sample(method, context, sample, reflect=reflect, score=score)
        self._seq += 1
        return outcome, self._seq, _usage(method)


class RayExecutor:
    """Runs each batch's samples as tasks of async Ray actors (see the module).

    ``address``: a cluster to join (``ray://...`` or ``host:port``; default ``RAY_ADDRESS``,
    else a local cluster). ``workers``: actors in the pool (default: the cluster's CPUs).
    ``init``: more keyword arguments for ``ray.init``.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        workers: int | None = None,
        calls_per_worker: int = CALLS_PER_WORKER,
        init: Mapping[str, Any] | None = None,
    ) -> None:
        if workers is not None and workers < 1:
            raise ConfigError(f"must be at least 1 (got {workers})", setting="workers")
        self._ray = ray = _ray()
        self._started = False
        if not ray.is_initialized():
            options = {"include_dashboard": False, "log_to_driver": False, **(init or {})}
            try:
                ray.init(address=address or os.environ.get("RAY_ADDRESS"), **options)
            except (ConnectionError, RuntimeError, ValueError) as error:
                raise ConfigError(
                    f"cannot join the Ray cluster at {address or os.environ.get('RAY_ADDRESS')}: "
                    f"{error}",
                    setting="ray_address",
                ) from None
            self._started = True
        count = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        actor = ray.remote(_MapWorker).options(max_concurrency=calls_per_worker, num_cpus=0)
        self._workers = [actor.remote() for _ in range(count)]

    @property
    def workers(self) -> int:
        return len(self._workers)

    async def map(
        self,
        method: Rollouts,
        context: Any,
        samples: Sequence[Sample],
        *,
        reflect: bool,
        score: Callable[[str, Sample], Score] | None = None,
        on_done: Callable[[], None] | None = None,
    ) -> list[MapOutcome]:
        job = self._ray.put((method, context, score))
        key = job.hex()
        latest: dict[int, tuple[int, dict[str, Any]]] = {}

        async def one(index: int, sample: Sample) -> MapOutcome:
            slot = index % len(self._workers)
            outcome: MapOutcome
            try:
                outcome, seq, usage = await self._workers[slot].run.remote(
                    key, [job], sample, reflect
                )
            except Exception as error:  # the worker raised or died: this sample's failure
                empty = score("", sample) if score is not None else None
                reason = f"worker: {type(error).__name__}: {_first_line(error)}"
                return MapOutcome(sample, failure=SampleFailure(sample.id, "worker", reason, empty))
            finally:
                if on_done is not None:
                    on_done()
            if usage is not None and seq > latest.get(slot, (0, {}))[0]:
                latest[slot] = (seq, usage)
            return outcome

        outcomes = list(await asyncio.gather(*(one(i, s) for i, s in enumerate(samples))))
        # Each actor's last reply carries its copy's usage for the whole batch.
        _absorb(method, [usage for _, usage in latest.values()])
        return outcomes

    def close(self) -> None:
        """Stop the actors (and the local cluster, when this executor started it)."""
        for worker in self._workers:
            self._ray.kill(worker)
        self._workers = []
        if self._started:
            self._ray.shutdown()


def _usage(method: Any) -> dict[str, Any] | None:
    """Usage of the method's LLM client (its ``llm`` attribute) so far, when it has one."""
    client = getattr(method, "llm", None)
    usage = getattr(client, "usage", None)
    return dict(usage()) if callable(usage) else None


def _absorb(method: Any, usages: list[dict[str, Any]]) -> None:
    absorb = getattr(getattr(method, "llm", None), "absorb", None)
    if callable(absorb):
        for usage in usages:
            absorb(usage)


async def _close(job: tuple[Any, Any, Any] | None) -> None:
    """Close the previous batch's copy of the method's client."""
    close = getattr(getattr(job[0], "llm", None), "aclose", None) if job else None
    if callable(close):
        await close()


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    cause = getattr(error, "cause", None)  # a RayTaskError carries the worker's exception
    if cause is not None:
        return f"{type(cause).__name__}: {cause}"[:300]
    return (text[-1] if text else repr(error))[:300]
