"""A setting of learning from traces is declared once: one added to
:class:`combee.tasks.traces.settings.LearnSettings` reaches ``combee.learn``'s validation, the
run's ``config.json``, the resume (comparison and settings read back) and ``combee learn``'s
flags without any other edit; the docs' table is the declarations'."""

from __future__ import annotations

from pathlib import Path

from combee.settings import LEARN_SETTINGS, SETTINGS, settings_table
from tests.core.test_settings_declared_once import lines_printed
from tests.paths import ROOT

# The declaration with one more setting, standing in for an edit of that class: the subclass
# replaces it before anything else of the package is imported.
ADD_A_LEARN_SETTING = """
    from dataclasses import dataclass
    import combee.tasks.traces.settings as declared
    from combee.declare import setting

    @dataclass(frozen=True)
    class LearnSettings(declared.LearnSettings):
        min_turns: int = setting(2, "Traces with fewer turns are left out.", least=1)

    declared.LearnSettings = LearnSettings
"""

CHECKS = """
    import json, sys
    from pathlib import Path
    from typer.testing import CliRunner
    import combee
    from combee.cli.main import app
    from combee.core.loop_observer import LoopObserver
    from combee.engine.resume import saved_settings
    from combee.llm import connect

    base_url, folder = sys.argv[1], Path(sys.argv[2])
    small = dict(holdout_tasks=10, limit=8, batch_size=4)

    def learn(**settings):
        return combee.learn(["tau-airline"], llm=connect("sim", base_url=base_url), **small,
                            **settings)

    # validation, naming the setting
    try:
        learn(min_turns=0)
    except combee.ConfigError as error:
        print("VALIDATION:", error)

    # config.json, of a run stopped after its first iteration (as Ctrl-C would)
    class StopAfterOne(LoopObserver):
        def on_checkpoint(self, state):
            raise KeyboardInterrupt

    try:
        learn(min_turns=5, run_dir=folder, observers=[StopAfterOne()])
    except KeyboardInterrupt:
        pass
    print("CONFIG:", json.loads((folder / "config.json").read_text())["min_turns"])

    # the resume comparison: the unfinished run with another value
    try:
        learn(min_turns=6, run_dir=folder)
    except combee.ConfigError as error:
        print("RESUME:", error)

    # the resume from the folder alone reads it back and goes on with it
    print("SAVED:", saved_settings(folder)[1]["min_turns"])
    combee.resume(folder, llm=connect("sim", base_url=base_url))
    print("RESUMED:", (folder / "final_results.json").exists(),
          json.loads((folder / "config.json").read_text())["min_turns"])

    # the command line: its help, its flag into config.json, its check naming the flag
    runner = CliRunner()
    help_text = runner.invoke(app, ["learn", "--help"], env={"COLUMNS": "200"}).output
    print("HELP:", [line.strip() for line in help_text.splitlines() if "--min-turns" in line])
    flags = ["learn", "--traces", "tau-airline", "--holdout-tasks", "10", "--limit", "4",
             "--batch-size", "4", "--model", "sim", "--base-url", base_url]
    done = runner.invoke(app, [*flags, "--min-turns", "7", "--out", str(folder / "cli")])
    config = folder / "cli" / "config.json"
    print("CLI-CONFIG:", json.loads(config.read_text())["min_turns"] if config.exists()
          else done.output)
    bad = runner.invoke(app, [*flags, "--min-turns", "0", "--out", str(folder / "bad")],
                        env={"COLUMNS": "200"})
    print("CLI-VALIDATION:", bad.exit_code, " ".join(bad.output.split()))
"""


def test_a_learn_setting_added_in_one_declaration_is_found_everywhere(tmp_path: Path) -> None:
    lines = lines_printed(ADD_A_LEARN_SETTING, CHECKS, tmp_path / "run")
    assert lines["VALIDATION"] == "min_turns must be a whole number of at least 1 (got 0)"
    assert lines["CONFIG"] == "5"
    assert "min_turns: 5 there, 6 here" in lines["RESUME"]
    assert lines["SAVED"] == "5"
    assert lines["RESUMED"] == "True 5"
    assert "Traces with fewer turns are left out." in lines["HELP"]
    assert "[default: 2]" in lines["HELP"]
    assert lines["CLI-CONFIG"] == "7"
    assert lines["CLI-VALIDATION"].startswith("1 ")
    assert "--min-turns must be a whole number of at least 1 (got 0)" in lines["CLI-VALIDATION"]


def test_the_docs_table_is_the_learn_declarations() -> None:
    docs = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert settings_table(LEARN_SETTINGS) in docs
    assert {item.name for item in LEARN_SETTINGS} >= {"format", "limit", "since", "tracking_uri"}


def test_a_learn_setting_shares_no_name_with_a_run_setting() -> None:
    # Both are recorded side by side in a learn run's config.json and read back from it.
    assert not {item.name for item in LEARN_SETTINGS} & {item.name for item in SETTINGS}
