"""``combee.train`` in a real Jupyter kernel: it runs there (the kernel's event loop is running
while a cell executes) and the cell's output shows its progress.

The kernel is started from a kernel spec written for the test, whose ``argv`` is this
interpreter (``sys.executable``, the environment the tests run in) and whose ``env`` puts this
checkout's ``src`` first on the path; ``JUPYTER_PATH`` points Jupyter at it. A kernel spec
installed on the machine (``python3``) could name another Python.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbclient
import nbformat
import pytest

from combee.sim import RunningServer, serve_in_thread
from combee.sim.ace_script import ace_responder
from tests.paths import ROOT

SRC = ROOT / "src"
KERNEL = "combee-tests"


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve_in_thread(ace_responder) as running:
        yield running


@pytest.fixture
def kernel_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    folder = tmp_path / "jupyter" / "kernels" / KERNEL
    folder.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "combee tests",
        "language": "python",
        "env": {"PYTHONPATH": str(SRC)},
    }
    (folder / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    return KERNEL


ANSI_STYLE = re.compile(r"\x1b\[[0-9;]*m")


def _texts(cell: Any) -> list[str]:
    """Each output's text: a stream's, or a display's plain-text form (Rich's, without its
    colour codes)."""
    texts = []
    for output in cell.outputs:
        if output.output_type == "stream":
            texts.append(output.text)
        elif output.output_type in ("display_data", "execute_result"):
            texts.append(ANSI_STYLE.sub("", output.data.get("text/plain", "")))
        elif output.output_type == "error":
            raise AssertionError("\n".join(output.traceback))
    return texts


def test_train_in_a_notebook_returns_its_result_and_shows_its_progress(
    server: RunningServer, kernel_spec: str, tmp_path: Path
) -> None:
    train = (
        "import combee\n"
        "result = combee.train(\n"
        "    'formula', strategy='naive', batch_size=2, train_limit=4, val_limit=0,\n"
        "    test_limit=3, run_dir='run',\n"
        f"    llm=combee.llm.Endpoint('sim', base_url={server.base_url!r}),\n"
        ")\n"
    )
    check = "print(type(result).__name__, result.summary['test_samples'])\n"
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(train), nbformat.v4.new_code_cell(check)]
    )
    client = nbclient.NotebookClient(
        notebook,
        kernel_name=kernel_spec,
        timeout=120,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    trained, checked = (_texts(cell) for cell in notebook.cells)

    assert "".join(checked).split() == ["TrainResult", "3"]  # the value the cell returned
    assert (tmp_path / "run" / "final_results.json").is_file()
    shown = "\n".join(trained)
    assert "combee train task=formula" in shown
    # One line per iteration: 4 samples in batches of 2.
    assert len(re.findall(r"^iter +\d+ +batch +2 ", shown, re.MULTILINE)) == 2
    assert re.search(r"^test: accuracy \d\.\d{3} on 3 samples", shown, re.MULTILINE)
    # The bar, redrawn in place and left at its last state: the test split, all 3 scored.
    bars = [text for text in trained if "━" in text]
    assert len(bars) == 1, trained
    assert re.search(r"test +━+ +3/3", bars[0])
