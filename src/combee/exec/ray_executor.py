"""The map step on a Ray cluster: ``combee.train(..., executor=RayExecutor())``, ``--executor ray``.

For rollouts that need real environments (tool sandboxes, browsers, containers) or batches that
outgrow one process. Each batch's method and context are put in Ray's object store once; the
batch is dealt into one share per async Ray actor, and it runs as one wave: every actor first
loads the batch (its copy of the method), then each gets its whole share in one call and runs
all of it at once, each sample's rollout and reflection as :func:`combee.core.executor.map_sample`
does them here. The call streams each sample's outcome back as it finishes, so progress ticks
per sample. Aggregation stays on the driver. A method's LLM client travels as its endpoint and
connects again on the worker (without the response cache), widened to the actor's share; the
calls it makes there are added to the driver's usage. A sample that raises on the worker, or a
worker that dies, costs the samples concerned (recorded as their failures), never the run.

Ray is an optional dependency (``pip install 'combee[ray]'``). Without ``address`` the executor
joins the cluster named by ``RAY_ADDRESS``, else starts a local one on this machine.
"""

from __future__ import annotations

import asyncio
import importlib
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from combee.core.executor import MapOutcome, Rollouts, SampleFailure, map_sample
from combee.errors import ConfigError
from combee.llm.types import HoldsClient, SharesUsage, Widens
from combee.tasks.base import Sample, Score

INSTALL_HINT = "the Ray executor needs Ray: pip install 'combee[ray]'"

CALLS_PER_WORKER = 256
"""Samples one actor runs at once (they wait on LLM calls, not on its CPU)."""

BATCHES_PER_WORKER = 16
"""Batches one actor serves at once (map steps that overlap, e.g. a pipelined run's)."""

Job = tuple[Rollouts, Any, Callable[[str, Sample], Score] | None]
"""A batch's method, context and scorer, as the actors receive them."""

Done = tuple[int, MapOutcome, dict[str, Any] | None]
"""One finished sample, as an actor streams it: its index in the batch, its outcome, and the
usage of the actor's copy of the method's client so far."""


def _ray() -> Any:
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise ConfigError(INSTALL_HINT, setting="executor") from None


class _MapWorker:
    """A Ray actor: runs its share of a batch, all at once, against its copy of the method."""

    def __init__(self, calls_at_once: int) -> None:
        self._calls_at_once = calls_at_once
        self._jobs: dict[str, Job] = {}

    async def load(self, key: str, job: list[Any]) -> None:
        """Fetch batch ``key`` (``job`` holds its object reference, which a list keeps Ray from
        resolving before the call starts)."""
        self._jobs[key] = await job[0]

    async def run(
        self, key: str, job: list[Any], share: list[tuple[int, Sample]], reflect: bool
    ) -> AsyncIterator[Done]:
        """Map every sample of ``share`` at once, yielding each as it finishes."""
        method, context, score = self._jobs.pop(key, None) or await job[0]
        _widen(method, min(len(share), self._calls_at_once))
        slots = asyncio.Semaphore(self._calls_at_once)

        async def one(index: int, sample: Sample) -> tuple[int, MapOutcome]:
            async with slots:
                return index, await _map_on_worker(method, context, sample, reflect, score)

        try:
            for finished in asyncio.as_completed([one(index, s) for index, s in share]):
                index, outcome = await finished
                yield index, outcome, _usage(method)
        finally:
            await _close(method)


async def _map_on_worker(
    method: Rollouts,
    context: Any,
    sample: Sample,
    reflect: bool,
    score: Callable[[str, Sample], Score] | None,
) -> MapOutcome:
    try:
        return await map_sample(method, context, sample, reflect=reflect, score=score)
    except Exception as error:  # the rollout itself broke (a sandbox crashed): this sample only
        return _worker_failure(sample, error, score)


class RayExecutor:
    """Runs each batch's samples on async Ray actors, one wave per batch (see the module).

    ``address``: a cluster to join (``ray://...`` or ``host:port``; default ``RAY_ADDRESS``,
    else a local cluster). ``workers``: actors in the pool (default: the cluster's CPUs).
    ``calls_per_worker``: samples one actor runs at once. ``init``: more keyword arguments
    for ``ray.init``.
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
        if calls_per_worker < 1:
            raise ConfigError(
                f"must be at least 1 (got {calls_per_worker})", setting="calls_per_worker"
            )
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
        actor = ray.remote(_MapWorker).options(max_concurrency=BATCHES_PER_WORKER, num_cpus=0)
        self._workers = [actor.remote(calls_per_worker) for _ in range(count)]

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
        shares = [
            (worker, [(i, s) for i, s in enumerate(samples) if i % len(self._workers) == slot])
            for slot, worker in enumerate(self._workers)
        ]
        shares = [(worker, share) for worker, share in shares if share]
        # Every actor holds the batch before any sample starts, so an actor that is slower to
        # start (or to load the method) does not split the batch into two waves.
        loads = [worker.load.remote(key, [job]) for worker, _ in shares]
        loaded = await asyncio.gather(*loads, return_exceptions=True)
        outcomes: dict[int, MapOutcome] = {}
        spent: list[dict[str, Any]] = []

        def finish(index: int, outcome: MapOutcome) -> None:
            outcomes[index] = outcome
            if on_done is not None:
                on_done()

        async def drain(worker: Any, share: list[tuple[int, Sample]], load: Any) -> None:
            usage: dict[str, Any] | None = None
            try:
                if isinstance(load, BaseException):
                    raise load
                async for reply in worker.run.remote(key, [job], share, reflect):
                    index, outcome, usage = await reply
                    finish(index, outcome)
            except Exception as error:  # the actor raised or died: the samples it still held
                for index, sample in share:
                    if index not in outcomes:
                        finish(index, _worker_failure(sample, error, score))
            if usage is not None:  # its copy's usage for what it finished
                spent.append(usage)

        await asyncio.gather(
            *(drain(w, share, load) for (w, share), load in zip(shares, loaded, strict=True))
        )
        _absorb(method, spent)
        return [outcomes[index] for index in range(len(samples))]

    def close(self) -> None:
        """Stop the actors (and the local cluster, when this executor started it)."""
        for worker in self._workers:
            self._ray.kill(worker)
        self._workers = []
        if self._started:
            self._ray.shutdown()


def _worker_failure(
    sample: Sample, error: BaseException, score: Callable[[str, Sample], Score] | None
) -> MapOutcome:
    empty = score("", sample) if score is not None else None
    reason = f"worker: {type(error).__name__}: {_first_line(error)}"
    return MapOutcome(sample, failure=SampleFailure(sample.id, "worker", reason, empty))


def _client(method: object) -> object:
    """The client a method makes its calls through, or None."""
    return method.llm if isinstance(method, HoldsClient) else None


def _widen(method: object, calls: int) -> None:
    """Let the worker's copy of the method's client run ``calls`` calls at once, as the driver
    widens its own client to the batch (a copy starts at the default)."""
    client = _client(method)
    if isinstance(client, Widens):
        client.widen(calls)


def _usage(method: object) -> dict[str, Any] | None:
    """Usage of the method's LLM client so far, when it has one."""
    client = _client(method)
    return dict(client.usage()) if isinstance(client, SharesUsage) else None


def _absorb(method: object, usages: list[dict[str, Any]]) -> None:
    client = _client(method)
    if isinstance(client, SharesUsage):
        for usage in usages:
            client.absorb(usage)


async def _close(method: object) -> None:
    """Close the worker's copy of the method's client, once its share is done."""
    client = _client(method)
    if isinstance(client, SharesUsage):
        await client.aclose()


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    cause = getattr(error, "cause", None)  # a RayTaskError carries the worker's exception
    if cause is not None:
        return f"{type(cause).__name__}: {cause}"[:300]
    return (text[-1] if text else repr(error))[:300]
