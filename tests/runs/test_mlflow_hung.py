"""A tracking server that stops answering never holds up a run's iterations: a real MLflow
server behind a proxy that keeps what the tracker sends (its calls wait, connection open, for an
answer that does not come) while the run trains on the scripted server. The proof counts: every
iteration is recorded and the run has reached its end while a call of the tracker is still
waiting at the proxy."""

from __future__ import annotations

import contextlib
import logging
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import combee
from combee.core.loop import IterationReport, LoopObserver
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from tests.runs.holding_proxy import HoldingProxy
from tests.runs.test_mlflow_tracking import MLFLOW, _runs, _start_server, _stop

mlflow = pytest.importorskip("mlflow")
from mlflow.tracking import MlflowClient  # noqa: E402

SETTINGS: dict[str, Any] = {
    "batch_size": 2, "train_limit": 20, "val_limit": 0, "test_limit": 2, "seed": 0,
}  # fmt: skip
ITERATIONS = 10


@pytest.fixture(scope="module")
def server_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    if not shutil.which(MLFLOW):
        pytest.skip("the mlflow command is not installed")
    server, uri = _start_server(tmp_path_factory.mktemp("mlflow"))
    try:
        host, port = uri.removeprefix("http://").split(":")
        yield host, int(port)
    finally:
        _stop(server)


class HoldFrom(LoopObserver):
    """Holds the tracker's calls from the end of iteration 2. As the run ends (before the
    tracker's own end, which comes after it) it counts the tracker's calls waiting for an
    answer, once one has reached the proxy (the calls' thread may be behind the run), and then
    releases them when ``release``. With a tracker whose calls are made by the loop, none can be
    waiting then: the loop would be inside it."""

    def __init__(self, proxy: HoldingProxy, release: bool) -> None:
        self.proxy = proxy
        self.release = release
        self.waiting_at_the_end: int | None = None

    def on_iteration_end(self, report: IterationReport[Any, Any]) -> None:
        if report.iteration == 2:
            self.proxy.hold()

    def on_run_end(self, summary: Any) -> None:
        deadline = time.monotonic() + 60  # a bound, not a verdict: the count decides
        while not self.proxy.waiting() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.waiting_at_the_end = self.proxy.waiting()
        if self.release:
            self.proxy.release()


def _train_holding(
    address: tuple[str, int], out: Path, caplog: pytest.LogCaptureFixture, release: bool
) -> tuple[list[str], int | None, int]:
    """A run tracked through a proxy that holds the tracker's calls from iteration 2: the
    tracker's warnings, its calls waiting for an answer as the run ended, and the pieces of
    requests the proxy held."""
    from combee.runs.tracking import MlflowTracker

    with contextlib.closing(HoldingProxy(*address)) as proxy:
        hold = HoldFrom(proxy, release=release)
        tracker = MlflowTracker(out, tracking_uri=proxy.uri, experiment=out.name, wait_s=5.0)
        with serve_in_thread(ace_responder) as sim:
            llm = combee.llm.connect("sim", base_url=sim.base_url)
            with caplog.at_level(logging.WARNING, logger="combee.runs.tracking"):
                combee.train("formula", llm=llm, run_dir=out, observers=[hold, tracker], **SETTINGS)
    warnings = [r.getMessage() for r in caplog.records if r.name == "combee.runs.tracking"]
    return warnings, hold.waiting_at_the_end, proxy.held


@pytest.mark.mlflow_server
def test_a_hung_tracking_server_holds_up_no_iteration(
    server_address: tuple[str, int], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    out = tmp_path / "hung"
    warnings, waiting, held = _train_holding(server_address, out, caplog, release=False)
    assert waiting == 1 and held > 0  # the run ended while the tracker waited
    rows = (out / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(rows) == ITERATIONS and (out / "final_results.json").is_file()
    assert len(warnings) == 1, warnings  # said once, at the end
    assert "did not answer within 5 s: the MLflow run could not be marked FINISHED" in warnings[0]


@pytest.mark.mlflow_server
def test_a_slow_tracking_server_gets_the_whole_run_once_it_answers(
    server_address: tuple[str, int], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    warnings, waiting, held = _train_holding(server_address, tmp_path / "slow", caplog, True)
    assert waiting == 1 and held > 0  # the run ended while the tracker waited
    assert warnings == []
    uri = f"http://{server_address[0]}:{server_address[1]}"
    (run,) = _runs(uri, "slow")
    assert run.info.status == "FINISHED"
    history = MlflowClient(tracking_uri=uri).get_metric_history(run.info.run_id, "batch_size")
    assert sorted(m.step for m in history) == list(range(1, ITERATIONS + 1))  # nothing lost
