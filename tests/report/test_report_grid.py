"""The report of a two-seed grid against the scripted server, read as a user reads it: the
recommendation at the top (page and terminal), the mean and spread over seeds, the runs in
numeric batch order with their seeds together, and figures labelled by configuration."""

from __future__ import annotations

import json
import re
import shutil
import statistics
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from combee.cli.main import app
from combee.report import plot_accuracy, write_report
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder, scripted_answer

TOPICS = ("Alpha Ratio", "Beta Margin", "Gamma Yield", "Delta Spread", "Epsilon Rate", "Zeta Cap")
TOPICS += ("Eta Turnover", "Theta Coverage", "Iota Leverage", "Kappa Return")
GRID_ORDER = [
    f"{strategy}-b{size}-s{seed}" for strategy in ("naive", "combee") for size in (4, 16)
    for seed in (0, 1)
]  # fmt: skip


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner(env={"NO_COLOR": "1", "COLUMNS": "200"}).invoke(app, list(args))
    return result.exit_code, result.output


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """naive and combee at batch sizes 4 and 16, seeds 0 and 1, on questions the scripted model
    answers once the playbook names their formula (each seed sees other training samples)."""
    root = tmp_path_factory.mktemp("grid")
    data = root / "learnable.jsonl"
    lines = []
    for i in range(80):
        question = f"Use formula {TOPICS[i % len(TOPICS)]} to answer: the value for case {i}?"
        lines.append(
            json.dumps({"id": f"q{i}", "question": question, "answer": scripted_answer(question)})
        )
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with serve_in_thread(ace_responder) as server:
        code, output = cli(
            "compare", "--task", "jsonl", "--data", str(data), "--strategies", "naive,combee",
            "--batch-sizes", "4,16", "--seeds", "0,1", "--train-limit", "8", "--val-limit", "0",
            "--test-limit", "16", "--model", "sim", "--base-url", server.base_url,
            "--out", str(root / "out"),
        )  # fmt: skip
    assert code == 0, output
    yield root / "out", output


def expected_groups(out: Path) -> dict[tuple[str, int], dict[str, list[float]]]:
    """Each strategy and batch size's accuracies and training times, from the runs' own files."""
    found: dict[tuple[str, int], dict[str, list[float]]] = {}
    for name in GRID_ORDER:
        results = read(out / name / "final_results.json")
        config = read(out / name / "config.json")
        figures = found.setdefault((config["strategy"], config["batch_size"]), {"acc": [], "s": []})
        figures["acc"].append(results["test_accuracy"])
        figures["s"].append(results["train_seconds"])
    return found


def test_the_summary_holds_each_configurations_mean_and_spread(grid: tuple[Path, str]) -> None:
    out, _ = grid
    document = read(out / "report.json")
    assert "min–max over seeds" in document["summary"]["spread"]
    groups = {(g["strategy"], g["batch_size"]): g for g in document["summary"]["groups"]}
    for key, figures in expected_groups(out).items():
        group = groups[key]
        assert group["seeds"] == [0, 1]
        accuracy = group["test_accuracy"]
        assert accuracy["mean"] == pytest.approx(statistics.mean(figures["acc"]))
        assert (accuracy["min"], accuracy["max"]) == (min(figures["acc"]), max(figures["acc"]))
        assert accuracy["std"] == pytest.approx(statistics.stdev(figures["acc"]))
        assert group["train_seconds"]["mean"] == pytest.approx(statistics.mean(figures["s"]))
    accuracies = [a for figures in expected_groups(out).values() for a in figures["acc"]]
    assert len(set(accuracies)) > 1  # the seeds differ, so the spread is a real one
    page = (out / "report.html").read_text(encoding="utf-8")
    summary = page.split('<table id="summary">')[1].split("</table>")[0]
    assert summary.count("<tr data-group=") == 4
    combee_16 = summary.split('data-group="combee at batch 16"')[1].split("</tr>")[0]
    mean = statistics.mean(expected_groups(out)[("combee", 16)]["acc"])
    assert f">{mean:.3f}<" in combee_16


def test_the_recommendation_is_the_most_accurate_then_fastest_configuration(
    grid: tuple[Path, str],
) -> None:
    out, output = grid
    groups = expected_groups(out)
    best = max(round(statistics.mean(f["acc"]), 2) for f in groups.values())
    tied = [k for k, f in groups.items() if round(statistics.mean(f["acc"]), 2) == best]

    def faster(a: tuple[str, int], b: tuple[str, int]) -> bool:  # beyond timing noise
        fast, slow = groups[a]["s"], groups[b]["s"]
        return statistics.mean(fast) * 1.1 <= statistics.mean(slow) and max(fast) < min(slow)

    # The first in the table's order (the grid's) that no other tied one beats on time.
    strategy, size = next(k for k in tied if not any(faster(o, k) for o in tied))
    accuracies = groups[(strategy, size)]["acc"]
    opening = (
        f"{strategy} at batch {size}: accuracy {statistics.mean(accuracies):.2f} "
        f"({min(accuracies):.2f}–{max(accuracies):.2f} over 2 seeds)"
    )
    sentence = read(out / "report.json")["recommendation"]
    assert sentence.startswith(opening)
    if len(tied) > 1:
        assert "ties for the highest accuracy" in sentence
    else:
        assert "the most accurate" in sentence
    # At the top of the page, and printed before the tables on the terminal.
    page = (out / "report.html").read_text(encoding="utf-8")
    top = re.search(r'<p class="recommendation" id="recommendation">(.*?)</p>', page)
    assert top is not None and unescape(top.group(1)).endswith(sentence)
    assert page.index('id="recommendation"') < page.index('<table id="summary">')
    flat = " ".join(output.split())
    assert f"recommendation: {sentence}" in flat
    assert flat.index("recommendation:") < flat.index("per strategy and batch size")


def test_rows_are_in_numeric_batch_order_with_seeds_together(
    grid: tuple[Path, str], tmp_path: Path
) -> None:
    out, _ = grid
    assert [row["name"] for row in read(out / "report.json")["runs"]] == GRID_ORDER
    # combee report lists the directory (b16 before b4 as text): the rows still go 4, then 16.
    code, output = cli("report", str(out), "--out", str(tmp_path))
    assert code == 0, output
    names = [row["name"] for row in read(tmp_path / "report.json")["runs"]]
    assert names == [
        "combee-b4-s0", "combee-b4-s1", "combee-b16-s0", "combee-b16-s1",
        "naive-b4-s0", "naive-b4-s1", "naive-b16-s0", "naive-b16-s1",
    ]  # fmt: skip
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert page.count('class="first-of-group"') == 3  # a rule above each new configuration


def captions(page: str) -> dict[str, str]:
    found = re.findall(r'data-file="([^"]+)".*?<figcaption>(.*?)</figcaption>', page, re.S)
    return {file: unescape(text) for file, text in found}


def test_figures_are_drawn_and_captions_describe_what_is_drawn(grid: tuple[Path, str]) -> None:
    out, _ = grid
    figures = read(out / "report.json")["figures"]
    for name in ("accuracy_vs_time.png", "accuracy_vs_batch_size.png", "timeline.png"):
        assert name in figures and (out / name).read_bytes().startswith(b"\x89PNG")
    shown = captions((out / "report.html").read_text(encoding="utf-8"))
    assert "min–max" in shown["accuracy_vs_time.png"]
    assert "shifted sideways" in shown["accuracy_vs_batch_size.png"]
    assert "dotted" not in shown["accuracy_vs_batch_size.png"]  # no run scored the baseline
    assert "reduce calls" in shown["timeline.png"]


def test_a_baseline_line_is_drawn_and_described_only_when_runs_have_it(
    grid: tuple[Path, str], tmp_path: Path
) -> None:
    out, _ = grid
    copy = tmp_path / "grid"
    shutil.copytree(out, copy)
    for name in GRID_ORDER:
        results = read(copy / name / "final_results.json")
        results["baseline_test_accuracy"] = 0.25
        (copy / name / "final_results.json").write_text(json.dumps(results), encoding="utf-8")
    files = write_report([copy])
    shown = captions(files.html.read_text(encoding="utf-8"))
    assert (
        "dotted grey line is the start context's test accuracy (0.250"
        in (shown["accuracy_vs_batch_size.png"])
    )


def test_accuracy_against_time_is_labelled_by_configuration_not_run(
    grid: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, _ = grid
    drawn: list[Any] = []
    save = plot_accuracy.save

    def keep(plt: Any, figure: Any, path: Path) -> None:
        drawn.append([(axis.get_legend(), axis.texts) for axis in figure.axes])
        save(plt, figure, path)

    monkeypatch.setattr(plot_accuracy, "save", keep)
    write_report([out], tmp_path)  # the directory's runs, strategies as listed: combee first
    (legend, texts), *_ = drawn[0]
    assert [t.get_text() for t in legend.get_texts()] == [
        "combee, batch 4 (n=2)", "combee, batch 16 (n=2)", "naive, batch 4 (n=2)",
        "naive, batch 16 (n=2)", "Pareto front",
    ]  # fmt: skip
    assert list(texts) == []  # no run names written over the points
