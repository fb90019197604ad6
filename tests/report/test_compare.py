"""``combee compare``: a grid of run directories against the scripted server, reruns that skip
finished cells, failed cells that do not stop the grid, specs, and the report's table read back
against every run's own files."""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import combee
from combee.cli.main import app
from combee.errors import ConfigError
from combee.report import Cell, CellResult, CompareObserver, compare, grid
from combee.sim import RunningServer, serve_in_thread
from combee.sim.ace_script import ace_responder, scripted_answer
from tests.cli_helpers import run_combee

CELLS = ("naive-b2-s0", "naive-b4-s0", "combee-b2-s0", "combee-b4-s0")
TOPICS = ("Alpha Ratio", "Beta Margin", "Gamma Yield", "Delta Spread", "Epsilon Rate", "Zeta Cap")


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve_in_thread(ace_responder) as running:
        yield running


def grid_args(server: RunningServer, out: Path, *extra: str) -> list[str]:
    return [
        "compare", "--strategies", "naive,combee", "--batch-sizes", "2,4", "--seeds", "0",
        "--task", "formula", "--train-limit", "4", "--val-limit", "0", "--test-limit", "2",
        "--model", "sim", "--base-url", server.base_url, "--out", str(out), *extra,
    ]  # fmt: skip


@pytest.fixture(scope="module")
def grid_run(
    server: RunningServer, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, str, int]:
    out = tmp_path_factory.mktemp("compare") / "grid"
    server.clear_records()
    result = run_combee(*grid_args(server, out))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return out, result.stdout + result.stderr, len(server.records)


def cli(*args: str) -> tuple[int, str]:
    """The command in this process (exit code, stdout and stderr), as wide as run_combee's."""
    result = CliRunner(env={"NO_COLOR": "1", "COLUMNS": "200"}).invoke(app, list(args))
    return result.exit_code, " ".join(result.output.split())


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def metrics(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def test_each_cell_is_a_normal_run_directory(grid_run: tuple[Path, str, int]) -> None:
    out, output, requests = grid_run
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == sorted(CELLS)
    assert requests > 0
    for name in CELLS:
        config = read(out / name / "config.json")
        strategy, size, _ = name.split("-")
        assert (config["strategy"], config["batch_size"], config["seed"]) == (
            strategy,
            int(size[1:]),
            0,
        )
        assert config["compare_cell"] == name
        assert read(out / name / "final_results.json")["test_samples"] == 2
        assert (out / name / "playbook.txt").read_text().strip()
        assert f"{name}: finished" in output
    # Naive curates the whole batch in one call; combee splits a batch of 4 into 2 groups + merge.
    assert [m["reduce_levels"] for m in metrics(out / "naive-b4-s0")] == [[1]]
    assert [m["reduce_levels"] for m in metrics(out / "combee-b4-s0")] == [[2, 1]]
    assert [m["batch_size"] for m in metrics(out / "combee-b2-s0")] == [2, 2]
    assert "4 trained, 0 skipped, 0 failed" in output
    assert (out / "report.html").is_file() and (out / "report.json").is_file()


def test_a_rerun_skips_finished_cells_and_calls_no_model(
    grid_run: tuple[Path, str, int], server: RunningServer, tmp_path: Path
) -> None:
    out = tmp_path / "grid"
    shutil.copytree(grid_run[0], out)
    before = {name: (out / name / "final_results.json").read_bytes() for name in CELLS}
    server.clear_records()
    code, output = cli(*grid_args(server, out))
    assert code == 0, output
    assert server.records == []  # not even a preflight call
    for name in CELLS:
        assert f"{name}: skipped (already finished" in output
        assert (out / name / "final_results.json").read_bytes() == before[name]
    assert "0 trained, 4 skipped, 0 failed" in output
    assert len(read(out / "report.json")["runs"]) == 4


def test_a_rerun_with_other_settings_is_refused_unless_overwrite(
    grid_run: tuple[Path, str, int], server: RunningServer, tmp_path: Path
) -> None:
    out = tmp_path / "grid"
    shutil.copytree(grid_run[0], out)
    before = {name: (out / name / "final_results.json").read_bytes() for name in CELLS}
    server.clear_records()
    code, output = cli(*grid_args(server, out), "--train-limit", "2")
    assert code == 1 and "Traceback" not in output
    assert f"--out ({out}) holds cells finished with other settings" in output
    assert f"{', '.join(CELLS)}: --train-limit 4 there, 2 now" in output
    assert "--overwrite" in output
    assert server.records == []
    assert {n: (out / n / "final_results.json").read_bytes() for n in CELLS} == before
    code, output = cli(
        "compare", "--strategies", "naive", "--batch-sizes", "2", "--task", "formula",
        "--train-limit", "2", "--val-limit", "0", "--test-limit", "2", "--model", "sim",
        "--base-url", server.base_url, "--out", str(out), "--no-report", "--overwrite",
    )  # fmt: skip
    assert code == 0, output
    assert "1 trained, 0 skipped, 0 failed" in output
    assert read(out / "naive-b2-s0" / "config.json")["train_limit"] == 2
    assert [m["iteration"] for m in metrics(out / "naive-b2-s0")] == [1]


def test_a_cell_that_stopped_part_way_is_trained_afresh(
    grid_run: tuple[Path, str, int], server: RunningServer, tmp_path: Path
) -> None:
    out = tmp_path / "grid"
    shutil.copytree(grid_run[0], out)
    (out / "combee-b2-s0" / "final_results.json").unlink()  # as if interrupted
    server.clear_records()
    code, output = cli(*grid_args(server, out, "--no-cache"))
    assert code == 0, output
    assert "1 trained, 3 skipped, 0 failed" in output
    assert "combee-b2-s0: finished" in output
    # Only that cell's calls: 4 train + 2 test generations, 4 reflections, one curate per batch.
    roles = [r.schema_name for r in server.records if r.schema_name]
    assert roles.count("generator") == 6 and roles.count("reflector") == 4
    assert roles.count("curator") == 2
    # Its stale metrics were replaced, not appended to.
    assert [m["iteration"] for m in metrics(out / "combee-b2-s0")] == [1, 2]
    assert (out / "combee-b2-s0" / "final_results.json").is_file()


def test_a_failed_cell_is_reported_and_the_others_go_on(
    server: RunningServer, tmp_path: Path
) -> None:
    out = tmp_path / "grid"
    code, output = cli(
        "compare", "--strategies", "nosuch,naive", "--batch-sizes", "2", "--task", "formula",
        "--train-limit", "2", "--val-limit", "0", "--test-limit", "1", "--model", "sim",
        "--base-url", server.base_url, "--out", str(out), "--no-report",
    )  # fmt: skip
    assert code == 1
    assert "Traceback" not in output
    assert "nosuch-b2-s0: failed: --strategy 'nosuch': unknown strategy" in output
    assert "naive-b2-s0: finished" in output
    assert "1 of 2 cells failed: nosuch-b2-s0" in output
    assert not (out / "report.json").exists()
    code, output = cli("report", str(out))  # the finished cells' report, afterwards
    assert code == 0, output
    assert (out / "naive-b2-s0" / "final_results.json").is_file()
    assert [row["name"] for row in read(out / "report.json")["runs"]] == ["naive-b2-s0"]


class RunsTable(HTMLParser):
    """The cells of ``<table id="runs">``: per row, key -> (data-value, shown text)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[str, tuple[str, str]]] = []
        self.images: list[str] = []
        self.external: list[str] = []
        self._in_table = False
        self._cell: tuple[str, str] | None = None
        self._text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = {k: v or "" for k, v in attrs}
        for name in ("src", "href"):
            if name in attr and not attr[name].startswith("data:"):
                self.external.append(attr[name])
        if tag == "img":
            self.images.append(attr["src"])
        if tag == "table":
            self._in_table = attr.get("id") == "runs"
        elif tag == "tr" and self._in_table and "data-run" in attr:
            self.rows.append({})
        elif tag == "td" and self._in_table and self.rows:
            self._cell, self._text = (attr["data-key"], attr["data-value"]), ""

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._text += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.rows[-1][self._cell[0]] = (self._cell[1], self._text)
            self._cell = None
        elif tag == "table":
            self._in_table = False


def check_report(out: Path, cells: list[str]) -> RunsTable:
    """The report's table (HTML and JSON) against each run's final_results and metrics."""
    page = RunsTable()
    page.feed((out / "report.html").read_text(encoding="utf-8"))
    document = read(out / "report.json")
    assert [row["name"] for row in document["runs"]] == cells
    assert len(page.rows) == len(cells)
    for shown, row, name in zip(page.rows, document["runs"], cells, strict=True):
        results = read(out / name / "final_results.json")
        config = read(out / name / "config.json")
        applied = sum(m["ops_applied"] for m in metrics(out / name) if "ops_applied" in m)
        expected = {
            "name": name,
            "strategy": config["strategy"],
            "seed": config["seed"],
            "test_accuracy": results["test_accuracy"],
            "train_seconds": results["train_seconds"],
            "iterations": results["iterations"],
            "playbook_bullets": results["playbook_bullets"],
            "playbook_tokens": results["playbook_tokens"],
            "updates_applied": applied,
            "llm_calls": sum(results["llm_calls"].values()),
            "cost": results["cost"],
        }
        for key, value in expected.items():
            assert row[key] == value, (name, key)
            raw, _ = shown[key]
            assert (raw if isinstance(value, str) else json.loads(raw)) == value, (name, key)
        assert shown["batch"][1] == str(config["effective_batch_size"])
        assert shown["test_accuracy"][1] == f"{results['test_accuracy']:.3f}"
        assert shown["train_seconds"][1] == f"{results['train_seconds']:.2f}"
        assert shown["llm_calls"][1] == f"{sum(results['llm_calls'].values()):,}"
        assert shown["playbook_tokens"][1] == f"{results['playbook_tokens']:,}"
        assert shown["baseline_test_accuracy"] == ("", "–")
        assert shown["prompt_tokens"] == ("", "–")
        assert applied > 0
    assert page.external == []  # self-contained: every image is a data URI
    assert len(page.images) == len(document["figures"]) >= 4
    for src, figure in zip(page.images, document["figures"], strict=True):
        png = base64.b64decode(src.removeprefix("data:image/png;base64,"))
        assert png == (out / figure).read_bytes()
    return page


def test_the_report_table_matches_each_runs_files(grid_run: tuple[Path, str, int]) -> None:
    out = grid_run[0]
    check_report(out, list(CELLS))
    figures = read(out / "report.json")["figures"]
    assert "batch_profile.png" not in figures  # no cell chose its batch size automatically
    assert {"accuracy_vs_time.png", "context_size.png", "timeline.png", "llm_usage.png"} <= set(
        figures
    )


def questions(count: int) -> list[dict[str, str]]:
    """Samples the scripted generator answers right once the playbook names their formula."""
    rows = []
    for i in range(count):
        question = f"Use formula {TOPICS[i % len(TOPICS)]} to answer: the value for case {i}?"
        rows.append({"id": f"q{i}", "question": question, "answer": scripted_answer(question)})
    return rows


def test_a_spec_file_sets_the_grid_and_flags_win_over_it(
    server: RunningServer, tmp_path: Path
) -> None:
    data = tmp_path / "learnable.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in questions(40)), encoding="utf-8")
    out = tmp_path / "grid"
    spec = tmp_path / "grid.toml"
    spec.write_text(
        f'task = "jsonl"\ndata = "{data}"\nstrategies = ["combee"]\nbatch_sizes = [2]\n'
        f'seeds = [0, 1]\nout = "{out}"\ntrain_limit = 4\nval_limit = 0\ntest_limit = 8\n'
        f'[endpoint]\nmodel = "sim"\nbase_url = "{server.base_url}"\n',
        encoding="utf-8",
    )
    code, output = cli("compare", "--spec", str(spec))
    assert code == 0, output
    cells = ["combee-b2-s0", "combee-b2-s1"]
    page = check_report(out, cells)
    accuracies = [float(row["test_accuracy"][0]) for row in page.rows]
    assert any(0 < a < 1 for a in accuracies), accuracies  # four lessons, six formulas
    assert read(out / cells[1] / "config.json")["endpoint"]["base_url"] == server.base_url
    # A flag given on the command line wins over the spec; the rest of the spec still holds.
    code, output = cli("compare", "--spec", str(spec), "--batch-sizes", "4", "--seeds", "1")
    assert code == 0, output
    config = read(out / "combee-b4-s1" / "config.json")
    assert (config["batch_size"], config["seed"], config["train_limit"]) == (4, 1, 4)
    assert [r["name"] for r in read(out / "report.json")["runs"]] == ["combee-b4-s1"]


def test_a_spec_with_an_unknown_key_names_the_file_and_key(tmp_path: Path) -> None:
    spec = tmp_path / "grid.toml"
    spec.write_text('strategies = ["naive"]\ntrian_limit = 4\n', encoding="utf-8")
    code, output = cli("compare", "--spec", str(spec), "--out", str(tmp_path / "out"))
    assert code == 1
    assert "Traceback" not in output
    assert f"--spec ({spec}) has an unknown key 'trian_limit'" in output
    spec.write_text("strategy = 'naive'\n", encoding="utf-8")
    code, output = cli("compare", "--spec", str(spec))
    assert code == 1 and "a grid gives strategies instead" in output
    assert not (tmp_path / "out").exists()


class Events(CompareObserver):
    def __init__(self) -> None:
        self.started: list[str] = []
        self.ended: list[tuple[str, str]] = []

    def on_cell_start(self, cell: Cell, index: int, total: int) -> None:
        self.started.append(f"{index}/{total} {cell.name}")

    def on_cell_end(self, result: CellResult, index: int, total: int) -> None:
        self.ended.append((result.cell.name, result.status))


def test_the_library_function_runs_skips_and_reports(server: RunningServer, tmp_path: Path) -> None:
    llm = combee.llm.Endpoint("sim", base_url=server.base_url)
    settings: dict[str, Any] = {
        "strategies": ["sequential", "combee"], "batch_sizes": [2], "seeds": [3],
        "out": tmp_path, "llm": llm, "train_limit": 2, "val_limit": 0, "test_limit": 1,
    }  # fmt: skip
    events = Events()
    result = compare("formula", progress=events, **settings)
    assert events.started == ["1/2 sequential-b1-s3", "2/2 combee-b2-s3"]
    assert [(c.cell.name, c.status) for c in result.cells] == [
        ("sequential-b1-s3", "finished"),
        ("combee-b2-s3", "finished"),
    ]
    assert result.report is not None and result.report.html == tmp_path / "report.html"
    assert [row["effective_batch_size"] for row in result.report.rows] == [1, 2]
    assert result.cells[0].summary == read(tmp_path / "sequential-b1-s3" / "final_results.json")
    again = Events()
    rerun = compare("formula", progress=again, report=False, **settings)
    assert again.started == []
    assert again.ended == [("sequential-b1-s3", "skipped"), ("combee-b2-s3", "skipped")]
    assert [c.summary for c in rerun.cells] == [c.summary for c in result.cells]
    with pytest.raises(ConfigError) as changed:
        compare("formula", **{**settings, "train_limit": 1}, report=False)
    assert changed.value.setting == "out"
    assert "sequential-b1-s3, combee-b2-s3: train_limit 2 there, 1 now" in str(changed.value)
    other_model = {**settings, "llm": combee.llm.Endpoint("sim-2", base_url=server.base_url)}
    with pytest.raises(ConfigError) as moved:
        compare("formula", **other_model, report=False)
    assert 'endpoint.model "sim" there, "sim-2" now' in str(moved.value)
    assert [c.summary for c in rerun.cells] == [
        read(tmp_path / c.cell.name / "final_results.json") for c in rerun.cells
    ]  # refused: nothing was trained or replaced
    redone = compare("formula", **{**settings, "train_limit": 1}, report=False, overwrite=True)
    assert [c.status for c in redone.cells] == ["finished", "finished"]
    assert all(read(c.run_dir / "config.json")["train_limit"] == 1 for c in redone.cells)


def test_grids_and_settings_are_checked_before_any_cell(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as twice:
        grid(["naive", "naive"], [2], [0])
    assert twice.value.setting == "strategies"
    with pytest.raises(ConfigError) as empty:
        grid(["naive"], [], [0])
    assert empty.value.setting == "batch_sizes"
    for bad in (True, "x"):
        with pytest.raises(ConfigError) as size:
            grid(["naive"], [2, bad], [0])
        assert size.value.setting == "batch_sizes"
    assert [c.name for c in grid(["combee"], ["auto", 8], [0])] == [
        "combee-bauto-s0",
        "combee-b8-s0",
    ]
    with pytest.raises(ConfigError) as per_cell:
        compare("formula", out=tmp_path, strategy="naive")
    assert per_cell.value.setting == "strategy" and "strategies" in str(per_cell.value)
    with pytest.raises(ConfigError) as unknown:
        compare("formula", out=tmp_path, train_limt=3)
    assert unknown.value.setting == "train_limt"
    assert list(tmp_path.iterdir()) == []
