"""A setting is declared once: one added to a declaration reaches validation, config.json, the
resume comparison and the help of ``combee train`` and ``combee compare`` (and a compare grid's
cells) without any other edit; the docs' table is the declarations'."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import combee
from combee.errors import ConfigError
from combee.llm import connect
from combee.settings import SETTINGS, run_settings, settings_table
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from tests.paths import ROOT

# The loop's declaration with one more setting, standing in for an edit of that class: the
# subclass replaces it before anything else of the package is imported.
ADD_A_SETTING = """
    from dataclasses import dataclass
    import combee.core.loop_settings as declared
    from combee.declare import setting

    @dataclass(frozen=True)
    class LoopSettings(declared.LoopSettings):
        patience: int = setting(3, "Iterations without progress before stopping.", least=1)

    declared.LoopSettings = LoopSettings
"""

CHECKS = """
    import json, sys
    from pathlib import Path
    from typer.testing import CliRunner
    import combee
    from combee.cli.main import app
    from combee.llm import connect

    base_url, folder = sys.argv[1], Path(sys.argv[2])
    small = dict(train_limit=4, val_limit=2, test_limit=2, batch_size=2)

    # validation, naming the setting
    try:
        combee.train("formula", llm=connect("sim", base_url=base_url), patience=0, **small)
    except combee.ConfigError as error:
        print("VALIDATION:", error)

    # config.json
    combee.train("formula", llm=connect("sim", base_url=base_url), patience=5,
                 run_dir=folder, **small)
    print("CONFIG:", json.loads((folder / "config.json").read_text())["patience"])

    # the resume comparison: the finished run's folder, made unfinished, with another value
    (folder / "final_results.json").unlink()
    try:
        combee.train("formula", llm=connect("sim", base_url=base_url), patience=6,
                     run_dir=folder, **small)
    except combee.ConfigError as error:
        print("RESUME:", error)

    # the command line's help
    help_text = CliRunner().invoke(app, ["train", "--help"], env={"COLUMNS": "200"}).output
    print("HELP:", [line.strip() for line in help_text.splitlines() if "--patience" in line])

    # combee compare: a flag of its own name, which reaches every cell's config.json
    help_text = CliRunner().invoke(app, ["compare", "--help"], env={"COLUMNS": "200"}).output
    print("COMPARE-HELP:", [l.strip() for l in help_text.splitlines() if "--patience" in l])
    grid = ["compare", "--task", "formula", "--model", "sim", "--base-url", base_url,
            "--strategies", "naive", "--batch-sizes", "2", "--train-limit", "4",
            "--val-limit", "2", "--test-limit", "2", "--patience", "7", "--no-report",
            "--out", str(folder / "grid")]
    done = CliRunner().invoke(app, grid)
    cell = folder / "grid" / "naive-b2-s0" / "config.json"
    found = json.loads(cell.read_text())["patience"] if cell.exists() else done.output
    print("COMPARE-CONFIG:", found)
"""


def lines_printed(added: str, checks: str, folder: Path) -> dict[str, str]:
    """What the script ``added`` + ``checks`` printed (``NAME: value`` lines), run in a fresh
    interpreter with the scripted server's URL and ``folder`` as its arguments."""
    script = textwrap.dedent(added) + textwrap.dedent(checks)
    with serve_in_thread(ace_responder) as server:
        done = subprocess.run(
            [sys.executable, "-c", script, server.base_url, str(folder)],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)


def test_a_setting_added_in_one_declaration_is_found_everywhere(tmp_path: Path) -> None:
    lines = lines_printed(ADD_A_SETTING, CHECKS, tmp_path / "run")
    assert lines["VALIDATION"] == "patience must be a whole number of at least 1 (got 0)"
    assert lines["CONFIG"] == "5"
    assert "patience: 5 there, 6 here" in lines["RESUME"]
    assert "Iterations without progress before stopping." in lines["HELP"]
    assert "[default: 3]" in lines["HELP"]
    assert "Iterations without progress before stopping." in lines["COMPARE-HELP"]
    assert lines["COMPARE-CONFIG"] == "7"


def test_an_unknown_setting_is_refused_by_name() -> None:
    with pytest.raises(ConfigError) as caught:
        run_settings({"epoch": 2})
    assert caught.value.setting == "epoch" and "did you mean epochs" in str(caught.value)


def test_the_docs_table_is_the_declarations() -> None:
    docs = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert settings_table() in docs
    assert len(SETTINGS) >= 20


@pytest.mark.parametrize(
    ("choice", "setting", "needle"),
    [
        ({"method": "gepa", "token_budget": 5000}, "token_budget", "method 'gepa'"),
        ({"strategy": "naive", "duplication": 3}, "duplication", "strategy 'naive'"),
        ({"strategy": "combee", "top_k": 4}, "top_k", "strategy 'combee'"),
    ],
)
def test_a_setting_the_method_or_strategy_does_not_take_is_refused(
    choice: dict[str, object], setting: str, needle: str
) -> None:
    with serve_in_thread(ace_responder) as server, pytest.raises(ConfigError) as caught:
        combee.train("formula", llm=connect("sim", base_url=server.base_url), **choice)
    assert caught.value.setting == setting and needle in str(caught.value)
