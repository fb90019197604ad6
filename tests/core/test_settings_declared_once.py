"""A setting is declared once: one added to a declaration (the loop's, ACE's, a strategy's or the
endpoint's) reaches validation, config.json, the resume comparison, the help of ``combee
train``, ``combee learn`` and ``combee compare`` (and a compare grid's cells) and the docs'
table without any other edit; an ACE or strategy setting reaches the method or strategy the run
makes, in its settings group."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

import combee
from combee.errors import ConfigError
from combee.llm import connect
from combee.llm.connect import ENDPOINT_SETTINGS
from combee.settings import SETTINGS, run_settings, settings_table
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from tests.paths import ROOT

# A declaration with one more setting, standing in for an edit of that class: the subclass
# replaces it before anything that reads it is imported.
ADD_TO_THE_LOOP = """
    from dataclasses import dataclass
    import combee.core.loop_settings as declared
    from combee.declare import setting

    @dataclass(frozen=True)
    class LoopSettings(declared.LoopSettings):
        patience: int = setting(3, "Iterations without progress before stopping.", least=1)

    declared.LoopSettings = LoopSettings
"""

ADD_TO_ACE = """
    from dataclasses import dataclass
    import combee.methods.ace.settings as declared
    from combee.declare import setting

    @dataclass(frozen=True)
    class AceSettings(declared.AceSettings):
        reflect_rounds: int = setting(1, "Reflector passes over each trajectory.", least=1, most=9)

    declared.AceSettings = AceSettings
"""

ADD_TO_COMBEE = """
    from dataclasses import dataclass
    import combee.strategies.settings as declared
    from combee.declare import setting

    @dataclass(frozen=True)
    class CombeeSettings(declared.CombeeSettings):
        group_slack: float = setting(
            0.1, "Share of each group's capacity left spare.", least=0.0, most=0.5
        )

    declared.CombeeSettings = CombeeSettings
"""

# The endpoint's module derives ENDPOINT_SETTINGS from the class as it loads: set again here.
ADD_TO_THE_ENDPOINT = """
    import importlib
    from dataclasses import dataclass
    from combee.declare import declared as declarations, setting

    declared = importlib.import_module("combee.llm.connect")

    @dataclass(frozen=True)
    class Endpoint(declared.Endpoint):
        retry_after_cap: float = setting(
            30.0, "Longest wait a Retry-After header may ask for.", least=1.0
        )

    declared.Endpoint = Endpoint
    declared.ENDPOINT_SETTINGS = tuple(declarations(Endpoint))
"""

CHECKS = """
    import importlib, inspect, json, sys
    from pathlib import Path
    from typer.testing import CliRunner
    import combee
    from combee.cli.main import app
    from combee.engine.resume import saved_endpoint
    from combee.methods.registry import METHODS
    from combee.settings import LEARN_SETTINGS, settings_table
    from combee.strategies.registry import STRATEGIES

    endpoints = importlib.import_module("combee.llm.connect")  # the module, not connect()
    base_url, folder = sys.argv[1], Path(sys.argv[2])
    name, bad, values, of_endpoint = json.loads(sys.argv[3])
    flag = "--" + name.replace("_", "-")
    small = dict(train_limit=4, val_limit=2, test_limit=2, batch_size=2)

    def train(value, **more):
        if of_endpoint:
            llm = endpoints.Endpoint("sim", base_url=base_url, **{name: value})
            return combee.train("formula", llm=llm, **small, **more)
        llm = endpoints.connect("sim", base_url=base_url)
        return combee.train("formula", llm=llm, **{name: value}, **small, **more)

    def kept(registry, key):  # what the factory registered as key makes, from now on
        made, factory = [], registry.factory(key)
        def spy(*args, **options):
            made.append(factory(*args, **options))
            return made[-1]
        spy.__signature__ = inspect.signature(factory)
        registry.register(key, spy)
        return made

    methods, strategies = kept(METHODS, "ace"), kept(STRATEGIES, "combee")

    # validation, naming the setting
    try:
        train(bad)
    except combee.ConfigError as error:
        print("VALIDATION:", error)

    # config.json, and the objects the run made
    train(values[0], run_dir=folder)
    config = json.loads((folder / "config.json").read_text())
    print("CONFIG:", (config["endpoint"] if of_endpoint else config).get(name, "absent"))
    print("METHOD:", getattr(methods[-1].ace.settings, name, "absent"))
    print("STRATEGY:", getattr(strategies[-1].settings, name, "absent"))
    print("SAVED-ENDPOINT:", getattr(saved_endpoint(folder), name, "absent"))

    # the resume comparison: the finished run's folder, made unfinished, with another value
    (folder / "final_results.json").unlink()
    try:
        train(values[1], run_dir=folder)
        print("RESUME: continued")
    except combee.ConfigError as error:
        print("RESUME:", error)

    # the command line's help, and the docs' table
    for command in ("train", "learn", "compare"):
        text = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"}).output
        print(f"{command.upper()}-HELP:", [l.strip() for l in text.splitlines() if flag in l])
    tables = [settings_table(), settings_table(LEARN_SETTINGS),
              settings_table(endpoints.ENDPOINT_SETTINGS)]  # the docs' three tables
    print("TABLE:", [row for t in tables for row in t.splitlines() if f"`{name}`" in row])

    # combee compare: a flag of its own name, which reaches every cell's config.json
    grid = ["compare", "--task", "formula", "--model", "sim", "--base-url", base_url,
            "--strategies", "combee", "--batch-sizes", "2", "--train-limit", "4",
            "--val-limit", "2", "--test-limit", "2", flag, str(values[2]), "--no-report",
            "--out", str(folder / "grid")]
    done = CliRunner().invoke(app, grid)
    cell = folder / "grid" / "combee-b2-s0" / "config.json"
    config = json.loads(cell.read_text()) if cell.exists() else {}
    found = (config.get("endpoint", {}) if of_endpoint else config).get(name, done.output)
    print("COMPARE-CONFIG:", found)
"""


def lines_printed(added: str, checks: str, folder: Path, *arguments: str) -> dict[str, str]:
    """What the script ``added`` + ``checks`` printed (``NAME: value`` lines), run in a fresh
    interpreter with the scripted server's URL, ``folder`` and ``arguments`` as its arguments."""
    script = textwrap.dedent(added) + textwrap.dedent(checks)
    with serve_in_thread(ace_responder) as server:
        done = subprocess.run(
            [sys.executable, "-c", script, server.base_url, str(folder), *arguments],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)


@dataclass(frozen=True)
class Added:
    """A setting added in one declaration, and what the run should make of it."""

    declaration: str
    name: str
    help: str
    bad: object
    refusal: str
    values: tuple[object, object, object]
    """Given to the run whose config.json is read, to its resumption and to a compare grid."""
    shown: tuple[str, str, str]
    """The values as config.json and the help show them: the first, the third, the default."""
    reaches: str = "absent"
    """``METHOD`` or ``STRATEGY``: the object of the run whose settings group holds it."""


ADDED = [
    Added(
        ADD_TO_THE_LOOP, "patience", "Iterations without progress before stopping.",
        0, "must be a whole number of at least 1 (got 0)", (5, 6, 7), ("5", "7", "3"),
    ),
    Added(
        ADD_TO_ACE, "reflect_rounds", "Reflector passes over each trajectory.",
        10, "must be at most 9 (got 10)", (2, 3, 4), ("2", "4", "1"), reaches="METHOD",
    ),
    Added(
        ADD_TO_COMBEE, "group_slack", "Share of each group's capacity left spare.",
        0.9, "must be at most 0.5 (got 0.9)", (0.2, 0.3, 0.4), ("0.2", "0.4", "0.1"),
        reaches="STRATEGY",
    ),
    Added(
        ADD_TO_THE_ENDPOINT, "retry_after_cap", "Longest wait a Retry-After header may ask for.",
        0.5, "must be at least 1.0 (got 0.5)", (5.0, 6.0, 7.0), ("5.0", "7.0", "30.0"),
    ),
]  # fmt: skip


@pytest.mark.parametrize("added", ADDED, ids=lambda added: added.name)
def test_a_setting_added_in_one_declaration_is_found_everywhere(
    added: Added, tmp_path: Path
) -> None:
    of_endpoint = added.declaration is ADD_TO_THE_ENDPOINT
    case = json.dumps([added.name, added.bad, added.values, of_endpoint])
    lines = lines_printed(added.declaration, CHECKS, tmp_path / "run", case)
    first, third, default = added.shown
    assert lines["VALIDATION"] == f"{added.name} {added.refusal}"
    assert lines["CONFIG"] == first
    for holder in ("METHOD", "STRATEGY"):
        assert lines[holder] == (first if holder == added.reaches else "absent"), holder
    for command in ("TRAIN", "LEARN", "COMPARE"):
        assert added.help in lines[f"{command}-HELP"], command
        assert f"[default: {default}]" in lines[f"{command}-HELP"], command
    assert lines["COMPARE-CONFIG"] == third
    if of_endpoint:
        # By design: an endpoint's settings other than its model, address, JSON mode and
        # redaction may change between attempts (see combee.runs.checkpoint), and `combee
        # resume` reconnects with the ones recorded.
        assert lines["RESUME"] == "continued"
        assert lines["SAVED-ENDPOINT"] == first
    else:
        second = json.dumps(added.values[1])
        assert f"{added.name}: {first} there, {second} here" in lines["RESUME"]
        assert lines["SAVED-ENDPOINT"] == "absent"
    row = f"| `{added.name}` | `--{added.name.replace('_', '-')}` | `{default}` | {added.help}"
    assert row in lines["TABLE"] and lines["TABLE"].count(f"`{added.name}`") == 1


def test_an_unknown_setting_is_refused_by_name() -> None:
    with pytest.raises(ConfigError) as caught:
        run_settings({"epoch": 2})
    assert caught.value.setting == "epoch" and "did you mean epochs" in str(caught.value)


def test_the_docs_table_is_the_declarations() -> None:
    docs = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert settings_table() in docs
    assert settings_table(ENDPOINT_SETTINGS) in docs
    assert len(SETTINGS) >= 20 and len(ENDPOINT_SETTINGS) >= 10


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
