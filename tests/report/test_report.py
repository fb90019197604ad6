"""``combee report`` on ACE, GEPA, auto-batch, damaged and unfinished run directories, and
``combee diff`` between playbooks."""

from __future__ import annotations

import html
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import combee
from combee.cli.main import app
from combee.errors import ConfigError
from combee.methods.ace.playbook import Bullet, Playbook
from combee.report import build as build_module
from combee.report import diff_playbooks, write_report
from combee.report.plots import PLOTS, Plot, pareto_front
from combee.sim import SimConfig, serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.sim.gepa_script import gepa_responder


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner(env={"NO_COLOR": "1", "COLUMNS": "200"}).invoke(app, list(args))
    return result.exit_code, " ".join(result.output.split())


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A GEPA run and an ``auto`` batch size ACE run, side by side."""
    root = tmp_path_factory.mktemp("runs")
    with serve_in_thread(gepa_responder) as server:
        combee.train(
            "formula", method="gepa", strategy="combee", batch_size=4, train_limit=8,
            val_limit=2, test_limit=2, max_metric_calls=30, run_dir=root / "gepa",
            llm=combee.llm.Endpoint("sim", base_url=server.base_url),
        )  # fmt: skip
    with serve_in_thread(ace_responder, SimConfig(ttft_s=0.02)) as server:
        combee.train(
            "formula", strategy="combee", batch_size="auto", max_batch_size=8, train_limit=16,
            val_limit=0, test_limit=2, run_dir=root / "auto",
            llm=combee.llm.Endpoint("sim", base_url=server.base_url),
        )  # fmt: skip
    return root


def test_a_gepa_run_and_an_auto_run_report_side_by_side(runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    code, output = cli("report", str(runs / "gepa"), str(runs / "auto"), "--out", str(out))
    assert code == 0, output
    assert f"report: {out / 'report.html'}" in output
    document = read(out / "report.json")
    gepa, auto = document["runs"]
    results = read(runs / "gepa" / "final_results.json")
    assert (gepa["name"], gepa["method"]) == ("gepa", "gepa")
    assert gepa["prompt_tokens"] == results["prompt_tokens"] > 0
    assert gepa["playbook_bullets"] is None and gepa["updates_applied"] is None
    assert gepa["llm_calls"] == sum(results["llm_calls"].values())
    profile = read(runs / "auto" / "batch_profile.json")
    assert auto["batch_size"] == "auto" and auto["effective_batch_size"] == profile["chosen"]
    assert auto["batch"] == f"auto→{profile['chosen']}"
    assert auto["prompt_tokens"] is None and auto["playbook_tokens"] > 0
    assert "batch_profile.png" in document["figures"]
    assert (out / "batch_profile.png").read_bytes().startswith(b"\x89PNG")
    page = (out / "report.html").read_text(encoding="utf-8")
    assert 'data-file="batch_profile.png" src="data:image/png;base64,' in page
    gepa_row = page.split('<tr data-run="gepa">')[1].split("</tr>")[0]
    assert '<td data-key="playbook_bullets" data-value="" class=num>–</td>' in gepa_row
    assert html.escape(profile["why"]) in page  # the controller's reason, in the notes


def test_a_gepa_run_alone_draws_only_the_figures_it_has(runs: Path, tmp_path: Path) -> None:
    run = tmp_path / "gepa"
    shutil.copytree(runs / "gepa", run)
    files = write_report([run])
    assert files.html == run / "report.html"  # the one directory given
    names = [p.name for p in files.figures]
    assert names == ["accuracy_vs_time.png", "timeline.png", "llm_usage.png"]
    assert "–" in files.html.read_text(encoding="utf-8")


def test_a_folder_of_runs_is_read_run_by_run(runs: Path, tmp_path: Path) -> None:
    folder = tmp_path / "many"
    shutil.copytree(runs, folder)
    files = write_report([folder])
    assert [row["name"] for row in files.rows] == ["auto", "gepa"]
    assert files.html == folder / "report.html"


def test_damaged_and_unfinished_runs_are_reported_never_crash(runs: Path, tmp_path: Path) -> None:
    damaged = tmp_path / "damaged"
    shutil.copytree(runs / "auto", damaged)
    (damaged / "final_results.json").write_text("{not json", encoding="utf-8")
    (damaged / "batch_profile.json").write_text("[1, 2]", encoding="utf-8")
    lines = (damaged / "metrics.jsonl").read_text().splitlines()
    (damaged / "metrics.jsonl").write_text(
        "\n".join([*lines, '{"iteration": ', "[]"]) + "\n", encoding="utf-8"
    )
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "config.json").write_text('{"method": "ace", "strategy": "naive"}', encoding="utf-8")
    files = write_report([damaged, bare], tmp_path / "out")
    first, second = files.rows
    assert first["status"] == "unfinished" and first["test_accuracy"] is None
    assert first["iterations"] == len(lines)
    assert first["updates_applied"] == sum(json.loads(x).get("ops_applied", 0) for x in lines)
    assert first["llm_calls"] == sum(
        role["calls"] for x in lines for role in json.loads(x)["roles"].values()
    )
    assert second["iterations"] == 0 and second["llm_calls"] is None
    notes = read(files.json)["notes"]
    assert any("final_results.json was left out" in n for n in notes["damaged"])
    assert any("batch_profile.json was left out" in n for n in notes["damaged"])
    assert any(f"line(s) {len(lines) + 1}, {len(lines) + 2}" in n for n in notes["damaged"])
    assert "timeline.png" in [p.name for p in files.figures]
    assert "batch_profile.png" not in [p.name for p in files.figures]


def test_a_path_that_is_no_run_directory_is_named(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code, output = cli("report", str(empty))
    assert code == 1
    assert f"RUN_DIR ({empty}) is not a run directory and holds none" in output
    code, output = cli("report", str(tmp_path / "missing"))
    assert code == 1 and f"RUN_DIR ({tmp_path / 'missing'}) does not exist" in output
    with pytest.raises(ConfigError) as error:
        write_report([empty])
    assert error.value.setting == "run_dirs"


def test_without_matplotlib_or_with_a_broken_figure_the_rest_is_written(
    runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(build_module, "pyplot", lambda: None)
    files = write_report([runs / "auto"], tmp_path / "plain")
    assert files.figures == [] and "matplotlib" in files.remarks[0]
    assert len(files.rows) == 1 and files.html.is_file()
    monkeypatch.undo()

    def broken(plt: Any, run_infos: Any, path: Path) -> str | None:
        raise ValueError("no luck")

    monkeypatch.setattr(
        build_module,
        "PLOTS",
        (Plot("x.png", "X", broken), *[p for p in PLOTS if p.file == "timeline.png"]),
    )
    files = write_report([runs / "auto"], tmp_path / "broken")
    assert [p.name for p in files.figures] == ["timeline.png"]
    assert files.remarks == ["X could not be drawn: no luck"]


def test_the_pareto_front_keeps_runs_nothing_beats() -> None:
    points = [(10.0, 0.8), (5.0, 0.7), (20.0, 0.9), (12.0, 0.75), (5.0, 0.6), (30.0, 0.9)]
    assert pareto_front(points) == [1, 0, 2]
    assert pareto_front([(1.0, 0.5), (1.0, 0.5)]) == [0, 1]  # ties beat neither


PLAYBOOK_A = Playbook(
    bullets=(
        Bullet("str-00001", "strategies", "Read the question twice.", helpful=1),
        Bullet("fml-00002", "formulas", "Margin = profit / revenue."),
        Bullet("mis-00003", "mistakes", "Do not round early."),
        Bullet("oth-00005", "other", "Answer with a number only."),
    ),
    next_id=6,
)
PLAYBOOK_B = Playbook(
    bullets=(
        Bullet("str-00001", "strategies", "Read the question twice.", helpful=2, harmful=1),
        Bullet("fml-00002", "formulas", "Margin = net profit / revenue."),
        Bullet("chk-00004", "checks", "Check the units."),
        Bullet("oth-00005", "other", "Answer with a number only."),
    ),
    next_id=6,
)


@pytest.fixture
def playbooks(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(PLAYBOOK_A.render(), encoding="utf-8")
    b.write_text(PLAYBOOK_B.render(), encoding="utf-8")
    return a, b


def test_diff_finds_bullets_only_in_a_only_in_b_and_changed(playbooks: tuple[Path, Path]) -> None:
    result = diff_playbooks(*playbooks, by="id")
    assert [b.id for b in result.only_a] == ["mis-00003"]
    assert [b.id for b in result.only_b] == ["chk-00004"]
    assert [(c.id, c.fields) for c in result.changed] == [
        ("str-00001", ("helpful", "harmful")),
        ("fml-00002", ("content",)),
    ]
    assert result.same == 1 and not result.identical
    assert diff_playbooks(playbooks[0], PLAYBOOK_A).identical


def run_with(folder: Path, playbook: Playbook, start: str | None = None) -> Path:
    """A run directory as train leaves it: config.json (its start playbook), the playbook and
    a version under contexts/."""
    (folder / "contexts").mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"initial_context": start}), encoding="utf-8")
    (folder / "playbook.txt").write_text(playbook.render(), encoding="utf-8")
    (folder / "contexts" / "iter_0001.txt").write_text(playbook.render(), encoding="utf-8")
    return folder / "playbook.txt"


OTHER_RUN = Playbook(
    bullets=(
        Bullet("fml-00002", "formulas", "Convert percentages to decimals first."),  # A's id
        Bullet("str-00007", "strategies", "Read the question twice.", helpful=1),  # A's lesson
    ),
    next_id=8,
)


def test_two_runs_are_diffed_by_content_not_by_an_id_both_gave(tmp_path: Path) -> None:
    a = run_with(tmp_path / "a", PLAYBOOK_A)
    b = run_with(tmp_path / "b", OTHER_RUN)
    result = diff_playbooks(a, b)
    assert result.paired_by == "content"
    assert result.changed == [] and result.same == 1  # the same lesson under another id
    assert "fml-00002" in [x.id for x in result.only_a]  # never paired with B's fml-00002
    assert [x.id for x in result.only_b] == ["fml-00002"]
    by_id = diff_playbooks(a, b, by="id")
    assert [c.id for c in by_id.changed] == ["fml-00002"]  # what pairing by id would claim
    code, output = cli("diff", str(a), str(b))
    assert code == 0, output
    assert "bullets paired by content (nothing says the two number their bullets alike)" in output
    assert "3 only in A, 1 only in B, 0 changed, 1 the same" in output
    code, output = cli("diff", str(a), str(b), "--by", "name")
    assert code == 1 and "--by must be one of id, content (got 'name')" in output


def test_playbooks_of_one_run_or_of_its_start_are_diffed_by_id(tmp_path: Path) -> None:
    a = run_with(tmp_path / "a", PLAYBOOK_A)
    same_run = diff_playbooks(a, tmp_path / "a" / "contexts" / "iter_0001.txt")
    assert same_run.paired_by == "id" and "both are playbooks of the run" in same_run.why
    b = run_with(tmp_path / "b", PLAYBOOK_B, start=str(a))  # B started from A's playbook
    result = diff_playbooks(a, b)
    assert result.paired_by == "id" and result.why.endswith(f"started from {a.resolve()}")
    assert [c.id for c in result.changed] == ["str-00001", "fml-00002"]
    assert diff_playbooks(b, a).paired_by == "id"  # either way round


def test_the_diff_command_prints_each_kind(playbooks: tuple[Path, Path]) -> None:
    result = CliRunner().invoke(app, ["diff", str(playbooks[0]), str(playbooks[1]), "--by", "id"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "1 only in A, 1 only in B, 2 changed, 1 the same" in lines
    assert "- [mis-00003] helpful=0 harmful=0 :: Do not round early." in lines
    assert "+ [chk-00004] helpful=0 harmful=0 :: Check the units." in lines
    assert "~ [str-00001] helpful, harmful" in lines
    assert "  A [fml-00002] helpful=0 harmful=0 :: Margin = profit / revenue." in lines
    assert "  B [fml-00002] helpful=0 harmful=0 :: Margin = net profit / revenue." in lines
    as_json = CliRunner().invoke(
        app, ["diff", str(playbooks[0]), str(playbooks[1]), "--json", "--by", "id"]
    )
    data = json.loads(as_json.output)
    assert (data["paired_by"], data["why"]) == ("id", "as asked")
    assert [c["id"] for c in data["changed"]] == ["str-00001", "fml-00002"]
    assert data["only_b"][0]["content"] == "Check the units."


def test_a_file_that_is_no_playbook_is_named(playbooks: tuple[Path, Path], tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("## Strategies and rules\n\nnot a bullet at all\n", encoding="utf-8")
    code, output = cli("diff", str(playbooks[0]), str(bad))
    assert code == 1 and "Traceback" not in output
    assert f"PLAYBOOK_B ({bad}) is not an ACE playbook: line 3: not a section header" in output
    code, output = cli("diff", str(tmp_path / "none.txt"), str(bad))
    assert code == 1 and f"PLAYBOOK_A ({tmp_path / 'none.txt'}) cannot be read" in output
    with pytest.raises(ConfigError) as error:
        diff_playbooks(bad, playbooks[1])
    assert error.value.setting == "a" and str(bad) in str(error.value)
