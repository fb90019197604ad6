"""Runs tracked in MLflow: :class:`MlflowTracker`, a loop observer.

On run start it opens an MLflow run (a resumed run continues the MLflow run its folder names in
``mlflow_run.json``) and logs the run's settings as params, as ``config.json`` holds them (never
a key), named after the run (its folder's name, else its method, task and strategy); each
iteration's metrics row with ``step`` = the iteration, and that iteration's context version as an
artifact; at the end the final results as metrics under ``final.`` (so that a whole run's total
never shows as one iteration's figure) and the run's files (the final playbook, ``config.json``,
``metrics.jsonl``, ``final_results.json``) as artifacts.

Tracking never stops or stalls a run: a tracking URI MLflow cannot open is a ConfigError before
anything is written; every call to the server is made on a thread of its own
(:class:`~combee.runs.background.BackgroundCalls`, a bounded queue), so an iteration never waits
for MLflow. A server that is slow is said once (:data:`SLOW_S`), one that fails costs the
tracking only (one warning; the run's own files hold everything), and MLflow's HTTP retries are
bounded (:data:`HTTP_DEFAULTS`, unless the environment sets them). Only the run's start (to
report a refused run) and its end (to mark the MLflow run FINISHED, FAILED or KILLED) wait for
the server, each at most ``wait_s``; an end that could not be marked is said.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from combee.core.loop_observer import LoopObserver
from combee.core.loop_reports import IterationReport
from combee.errors import ConfigError
from combee.files import write_whole
from combee.mlflow_store import check_reachable, import_mlflow, shown_uri, tracking_uri_of
from combee.runs.background import BackgroundCalls
from combee.runs.layout import (
    CONFIG_FILE,
    CONTEXTS_DIR,
    METRICS_FILE,
    MLFLOW_RUN_FILE,
    RESULTS_FILE,
)

MAX_PARAM_LENGTH = 6000
"""MLflow's longest param value; longer values are cut."""
_SECRET_NAMES = ("api_key", "key", "secret", "password", "token")
FINAL_PREFIX = "final."
"""The final results' metrics are named ``final.<key>``: ``final.test_accuracy``."""
HTTP_DEFAULTS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "20",
}
"""MLflow's HTTP retry settings while a run is tracked, where the environment sets none."""
WAIT_S = 20.0
"""The most a run's start and end wait for the tracking server (no iteration ever waits)."""
STOPPED_WAIT_S = 2.0
"""The most a stopped run (Ctrl-C, an error) waits for the server to mark it KILLED."""
SLOW_S = 5.0
"""A call the server has not answered for this long is said once, as the run goes on."""
QUEUED_CALLS = 256
"""Calls that may wait for the server; past them an iteration's metrics are not tracked."""

log = logging.getLogger(__name__)


def flat(data: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(dotted.key, value)`` for every leaf of a nested mapping (``endpoint.model``)."""
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from flat(value, f"{name}.")
        else:
            yield name, value


def params_of(config: Mapping[str, Any]) -> dict[str, str]:
    """The run's settings as MLflow params: flattened, as text, no name that could hold a key."""
    params: dict[str, str] = {}
    for name, value in flat(config):
        leaf = name.rsplit(".", 1)[-1].lower()
        if leaf in _SECRET_NAMES or leaf.endswith(("_key", "_secret", "_password")):
            continue
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        params[name] = text[:MAX_PARAM_LENGTH]
    return params


_NOT_IN_A_METRIC_NAME = re.compile(r"[^A-Za-z0-9_\-. /]")
"""MLflow refuses a metric name with any other character (``feedback+reflector``)."""


def metric_name(name: str) -> str:
    """``name`` as MLflow takes it: each character it refuses becomes ``_``."""
    return _NOT_IN_A_METRIC_NAME.sub("_", name)


def numeric_metrics(row: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """Every number in a (nested) row, by dotted name after ``prefix`` in the characters MLflow
    takes (:func:`metric_name`); flags count as 0 or 1."""
    found: dict[str, float] = {}
    for name, value in flat(row, prefix):
        if isinstance(value, int | float):  # a flag counts as 0 or 1
            found[metric_name(name)] = float(value)
    return found


def run_name_of(config: Mapping[str, Any], run_dir: Path | None) -> str:
    """An MLflow run's name: the run folder's name, else its method, task and strategy."""
    if run_dir is not None:
        return run_dir.absolute().name
    parts = (config.get(key) for key in ("method", "task", "strategy"))
    return "-".join(str(part) for part in parts if part) or "combee"


class MlflowTracker(LoopObserver):
    """Tracks a run in MLflow (see the module). ``run_dir``: the run's folder, where the MLflow
    run id is kept for a resumed run and whose files are logged (None: only params and the
    iteration metrics the report carries). ``run_name``: the MLflow run's name (None: see
    :func:`run_name_of`). ``wait_s``: the most the run's start and end wait for the server."""

    def __init__(
        self,
        run_dir: str | os.PathLike[str] | None = None,
        *,
        tracking_uri: str | None = None,
        experiment: str = "combee",
        run_name: str | None = None,
        wait_s: float = WAIT_S,
    ) -> None:
        self.mlflow = import_mlflow()
        self.tracking_uri = tracking_uri_of(tracking_uri)
        check_reachable(self.tracking_uri)
        for name, value in HTTP_DEFAULTS.items():
            os.environ.setdefault(name, value)
        from mlflow.tracking import MlflowClient

        try:
            self._client: Any = MlflowClient(tracking_uri=self.tracking_uri)
        except self.mlflow.exceptions.MlflowException as error:
            first = error.message.split(". ", 1)[0].rstrip(".")
            raise ConfigError(
                f"{shown_uri(self.tracking_uri)} cannot be opened by MLflow ({first})",
                setting="tracking_uri",
            ) from None
        self.run_dir = None if run_dir is None else Path(run_dir)
        self.experiment = experiment
        self.run_name = run_name
        self.wait_s = wait_s
        self.run_id: str | None = None
        """The MLflow run, once opened; None again when tracking stopped (set by the calls'
        thread only)."""
        self._calls = BackgroundCalls("combee-mlflow", QUEUED_CALLS)
        self._lock = threading.Lock()
        self._start_awaited = False
        self._refusal: ConfigError | None = None
        self._said: set[str] = set()
        """What was said once already: ``slow``, ``behind``, ``gone``."""

    @classmethod
    def continuing(cls, run_dir: str | os.PathLike[str]) -> MlflowTracker | None:
        """The tracker of the run in ``run_dir`` when it was tracked (its ``mlflow_run.json``),
        so that resuming it goes on logging to the same MLflow run; else None."""
        saved = _saved(Path(run_dir))
        if saved is None:
            return None
        return cls(
            run_dir,
            tracking_uri=saved.get("tracking_uri") or None,
            experiment=str(saved.get("experiment") or "combee"),
        )

    def on_run_start(self, config: Mapping[str, Any]) -> None:
        """Opens the MLflow run, waiting for it at most ``wait_s``: a refused run is a
        ConfigError; a server that has not answered by then is said, and the run goes on
        while the run opens in the background."""
        with self._lock:
            self._start_awaited = True
        self._calls.submit(lambda: self._open(config))
        opened = self._calls.wait(self.wait_s)
        with self._lock:
            self._start_awaited = False
            refusal, self._refusal = self._refusal, None
        if refusal is not None:
            raise refusal
        if not opened:
            self._say_slow()

    def on_iteration_end(self, report: IterationReport[Any, Any]) -> None:
        row = self._metrics_row(report)  # read now: the file grows as the run goes on
        version = None
        if self.run_dir is not None:
            version = self.run_dir / CONTEXTS_DIR / f"iter_{report.iteration:04d}.txt"
        self._queue(
            lambda: self._log_iteration(report.iteration, row, version),
            f"iteration {report.iteration}'s metrics",
        )

    def on_run_end(self, summary: Mapping[str, Any] | None) -> None:
        """Logs the final results and marks the MLflow run FINISHED (KILLED when the run
        stopped), waiting at most ``wait_s`` for the server to take what is queued; when it
        does not, says that the MLflow run could not be marked."""
        queued = self._calls.submit(lambda: self._end(summary))
        # A stopped run (Ctrl-C) is not held up for long by a server that does not answer.
        wait_s = self.wait_s if summary is not None else min(self.wait_s, STOPPED_WAIT_S)
        if queued and self._calls.wait(wait_s):
            return
        with self._lock:
            self._said.add("gone")  # what the calls' thread meets from now on is not news
        where = f"; the run's files are in {self.run_dir}" if self.run_dir else ""
        log.warning(
            "MLflow at %s did not answer within %g s: the MLflow run could not be marked %s "
            "(it may show RUNNING)%s",
            shown_uri(self.tracking_uri), wait_s,
            "KILLED" if summary is None else "FINISHED", where,
        )  # fmt: skip

    def _queue(self, job: Callable[[], None], what: str) -> None:
        """Hands ``job`` to the calls' thread, never waiting."""
        if self._calls.busy_for() > SLOW_S:
            self._say_slow()
        if not self._calls.submit(job) and self._first("behind"):
            log.warning(
                "MLflow at %s is %d calls behind: %s and later ones are not tracked; the run "
                "goes on",
                shown_uri(self.tracking_uri), QUEUED_CALLS, what,
            )  # fmt: skip

    def _say_slow(self) -> None:
        if self._first("slow"):
            log.warning(
                "MLflow at %s is slow to answer: the run goes on without waiting, and "
                "tracking catches up in the background",
                shown_uri(self.tracking_uri),
            )

    def _first(self, news: str) -> bool:
        """Whether ``news`` is said now for the first time (then it is said)."""
        with self._lock:
            if news in self._said:
                return False
            self._said.add(news)
            return True

    # What follows runs on the calls' thread.

    def _open(self, config: Mapping[str, Any]) -> None:
        try:
            self._open_run(config)
        except self.mlflow.exceptions.MlflowException as error:
            refusal = ConfigError(
                f"{shown_uri(self.tracking_uri)} refused the run ({error.message})",
                setting="tracking_uri",
            )
            with self._lock:
                if self._start_awaited:
                    self._refusal = refusal
                    return
            if self._first("gone"):
                log.warning("MLflow tracking stopped: %s; the run goes on untracked", refusal)
        except Exception as error:  # a server that broke off: the run goes on untracked
            self._stopped("opening the MLflow run", error)

    def _open_run(self, config: Mapping[str, Any]) -> None:
        client = self._client
        saved = None if self.run_dir is None else _saved(self.run_dir)
        if saved is not None and saved.get("run_id") and "resumed_after" in config:
            self.run_id = str(saved["run_id"])
            client.update_run(self.run_id, status="RUNNING")
            client.set_tag(self.run_id, "combee.resumed_after", str(config["resumed_after"]))
            return
        experiment = client.get_experiment_by_name(self.experiment)
        experiment_id = (
            client.create_experiment(self.experiment)
            if experiment is None
            else experiment.experiment_id
        )
        tags = {
            "combee.method": str(config.get("method")),
            "combee.task": str(config.get("task")),
        }
        if self.run_dir is not None:
            tags["combee.run_dir"] = str(self.run_dir.absolute())
        name = self.run_name or run_name_of(config, self.run_dir)
        run = client.create_run(experiment_id, run_name=name, tags=tags)
        run_id = run.info.run_id
        from mlflow.entities import Param

        params = [Param(k, v) for k, v in params_of(config).items()]
        for start in range(0, len(params), 100):
            client.log_batch(run_id, params=params[start : start + 100])
        self.run_id = run_id
        if self.run_dir is not None:
            record = {
                "run_id": self.run_id,
                "experiment": self.experiment,
                "tracking_uri": self.tracking_uri,
            }
            write_whole(self.run_dir / MLFLOW_RUN_FILE, json.dumps(record, indent=2) + "\n")

    def _log_iteration(self, iteration: int, row: Mapping[str, Any], version: Path | None) -> None:
        if self.run_id is None:
            return
        with self._or_stop(f"logging iteration {iteration}"):
            self._log_metrics(numeric_metrics(row), step=iteration)
            if version is not None and version.is_file():
                self._client.log_artifact(self.run_id, str(version), CONTEXTS_DIR)

    def _end(self, summary: Mapping[str, Any] | None) -> None:
        if self.run_id is None:
            return
        if summary is None:  # stopped: marked killed; resuming the run reopens it
            with contextlib.suppress(Exception):  # never hide the error that stopped the run
                self._client.set_terminated(self.run_id, status="KILLED")
            return
        with self._or_stop("logging the final results"):
            step = int(summary.get("iterations") or 0)
            self._log_metrics(numeric_metrics(summary, FINAL_PREFIX), step=step)
            if self.run_dir is not None:
                for path in sorted(self.run_dir.iterdir()):
                    if path.is_file() and (
                        path.suffix == ".txt"
                        or path.name in (CONFIG_FILE, METRICS_FILE, RESULTS_FILE)
                    ):
                        self._client.log_artifact(self.run_id, str(path))
            self._client.set_terminated(self.run_id, status="FINISHED")

    @contextlib.contextmanager
    def _or_stop(self, doing: str) -> Iterator[None]:
        """Runs the block; when the tracking server fails it, tracking stops for the rest of
        the run with one warning, and the run goes on."""
        try:
            yield
        except Exception as error:  # any failure of the tracker's, never the run's
            self._stopped(doing, error)

    def _stopped(self, doing: str, error: Exception) -> None:
        if self._first("gone"):
            cause = " ".join(str(error).split())[:200]
            where = f"; the run's files are in {self.run_dir}" if self.run_dir else ""
            log.warning(
                "MLflow tracking stopped: %s failed at %s (%s: %s); the run goes on untracked%s",
                doing, shown_uri(self.tracking_uri), type(error).__name__, cause, where,
            )  # fmt: skip
        if self.run_id is not None:  # a run left RUNNING would look alive for ever
            with contextlib.suppress(Exception):
                self._client.set_terminated(self.run_id, status="FAILED")
        self.run_id = None

    def _metrics_row(self, report: IterationReport[Any, Any]) -> Mapping[str, Any]:
        """The iteration's row of ``metrics.jsonl`` (written just before this hook), or what the
        report itself says when the run has no folder."""
        if self.run_dir is not None:
            path = self.run_dir / METRICS_FILE
            if path.is_file():
                lines = path.read_text(encoding="utf-8").splitlines()
                last = json.loads(lines[-1]) if lines else {}
                if isinstance(last, dict) and last.get("iteration") == report.iteration:
                    return last
        return {
            "batch_size": report.batch_size,
            "wall_s": report.wall_s,
            "reflections": len(report.reflections),
            "failed_samples": len(report.failures),
            "val_accuracy": report.val_accuracy,
            **report.extra,
        }

    def _log_metrics(self, values: Mapping[str, float], *, step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [Metric(name, value, now, step) for name, value in values.items()]
        for start in range(0, len(metrics), 1000):
            self._client.log_batch(self.run_id, metrics=metrics[start : start + 1000])


def _saved(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / MLFLOW_RUN_FILE
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return saved if isinstance(saved, dict) else None


__all__ = ["MLFLOW_RUN_FILE", "MlflowTracker"]
