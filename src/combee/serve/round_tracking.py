"""Learning rounds tracked in MLflow (``combee serve --track mlflow``): :class:`RoundTracker`.

A gateway process logs the rounds of each namespace to one MLflow run of its own, named
``combee-serve NAMESPACE`` and opened at the namespace's first round, with the serve settings as
params. Each round is a step (1, 2, ... in this process): ``traces`` (folded), ``learned`` and
``activated`` (0 or 1), ``seconds``; when a version was stored ``version`` and ``bullets``; when
the offline check ran ``check.passed``, ``check.new_rate`` and ``check.active_rate`` (next-action
accuracy with the new and the active playbook) and ``check.n``. :meth:`RoundTracker.close` marks
the runs finished.

The tracker is a round observer (``on_round``): it queues the round and a thread of its own logs
it, so a slow or stopped tracking server never holds up the gateway; what it cannot log is logged
as a warning and dropped.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Mapping
from typing import Any

from combee.errors import ConfigError
from combee.serve.learner import RoundResult

logger = logging.getLogger(__name__)

RUN_PREFIX = "combee-serve"
TAG_NAMESPACE = "combee.namespace"


def round_metrics(result: RoundResult) -> dict[str, float]:
    """What a round logs (see the module)."""
    learned = result.version is not None
    metrics = {
        "traces": float(result.traces),
        "learned": float(learned),
        "activated": float(result.activated),
        "seconds": float(result.seconds),
    }
    if learned:
        metrics["version"] = float(result.version or 0)
        metrics["bullets"] = float(result.bullets)
    check = result.check
    if check is not None:
        metrics["check.passed"] = float(bool(check.get("passed")))
        for side in ("new", "active"):
            counts = check.get(side)
            if isinstance(counts, Mapping) and counts.get("n"):
                metrics[f"check.{side}_rate"] = float(counts["correct"]) / float(counts["n"])
                metrics["check.n"] = float(counts["n"])
    return metrics


class RoundTracker:
    """Logs learning rounds to MLflow (see the module). ``params``: the settings to log with
    each run (flattened; no name that could hold a key). Raises a ConfigError naming
    ``tracking_uri`` when the server does not answer or refuses the experiment."""

    def __init__(
        self,
        *,
        tracking_uri: str | None = None,
        experiment: str = "combee",
        params: Mapping[str, Any] | None = None,
    ) -> None:
        from combee.mlflow_store import check_reachable, import_mlflow, shown_uri, tracking_uri_of
        from combee.runs.tracking import params_of

        mlflow = import_mlflow()
        from mlflow.tracking import MlflowClient

        self.tracking_uri = tracking_uri_of(tracking_uri)
        check_reachable(self.tracking_uri)
        self._shown = shown_uri(self.tracking_uri)
        self._errors: tuple[type[Exception], ...] = (mlflow.exceptions.MlflowException,)
        self.client = MlflowClient(tracking_uri=self.tracking_uri)
        self.experiment = experiment
        try:
            found = self.client.get_experiment_by_name(experiment)
            self.experiment_id = str(
                self.client.create_experiment(experiment) if found is None else found.experiment_id
            )
        except self._errors as error:
            raise ConfigError(
                f"{self._shown} refused experiment {experiment!r} ({error})",
                setting="tracking_uri",
            ) from None
        self.params = params_of(params or {})
        self.runs: dict[str, str] = {}
        """The MLflow run of each namespace that had a round, by namespace."""
        self._steps: dict[str, int] = {}
        self._queue: queue.SimpleQueue[RoundResult | None] = queue.SimpleQueue()
        self._thread = threading.Thread(
            target=self._drain, name="combee-round-tracker", daemon=True
        )
        self._thread.start()
        self._closed = False

    def __call__(self, result: RoundResult) -> None:
        """Queue ``result`` to be logged (never blocks, never raises)."""
        if not self._closed:
            self._queue.put(result)

    def log(self, result: RoundResult) -> None:
        """Log ``result`` now: the namespace's run (opened at its first round), one step."""
        from mlflow.entities import Metric

        run_id = self._run(result.namespace)
        step = self._steps[result.namespace] = self._steps.get(result.namespace, 0) + 1
        now = int(time.time() * 1000)
        metrics = [Metric(k, v, now, step) for k, v in round_metrics(result).items()]
        self.client.log_batch(run_id, metrics=metrics)

    def close(self, timeout: float = 30.0) -> None:
        """Log what is queued (for up to ``timeout`` seconds), then mark the runs finished."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._thread.join(timeout)
        for namespace, run_id in self.runs.items():
            try:
                self.client.set_terminated(run_id, status="FINISHED")
            except Exception as problem:  # shutting down: say so, go on
                logger.warning("MLflow run of namespace %s not closed: %s", namespace, problem)

    def __enter__(self) -> RoundTracker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, namespace: str) -> str:
        run_id = self.runs.get(namespace)
        if run_id is not None:
            return run_id
        from mlflow.entities import Param

        run = self.client.create_run(
            self.experiment_id,
            run_name=f"{RUN_PREFIX} {namespace}",
            tags={TAG_NAMESPACE: namespace},
        )
        run_id = self.runs[namespace] = str(run.info.run_id)
        params = [Param(k, v) for k, v in self.params.items()]
        for start in range(0, len(params), 100):
            self.client.log_batch(run_id, params=params[start : start + 100])
        return run_id

    def _drain(self) -> None:
        while True:
            result = self._queue.get()
            if result is None:
                return
            try:
                self.log(result)
            except Exception as problem:  # the gateway goes on serving and learning
                logger.warning(
                    "learning round [%s] not logged to %s: %s",
                    result.namespace,
                    self._shown,
                    problem,
                )
