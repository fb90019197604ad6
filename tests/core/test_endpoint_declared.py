"""The endpoint's settings are declared once, on :class:`combee.llm.Endpoint`: the command
line's endpoint flags, :func:`combee.llm.connect`'s keywords, the validation and the run's
``config.json`` come from the declarations; one added there is found everywhere."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

from combee.llm.connect import ENDPOINT_SETTINGS, Endpoint, connect
from tests.core.test_settings_declared_once import lines_printed


def test_connect_takes_the_endpoint_fields_in_order() -> None:
    parameters = list(inspect.signature(connect).parameters.values())
    fields = dataclasses.fields(Endpoint)
    assert [p.name for p in parameters] == [f.name for f in fields]
    assert [p.default for p in parameters] == [f.default for f in fields]
    assert [item.name for item in ENDPOINT_SETTINGS] == [f.name for f in fields]


# The Endpoint's declaration with one more setting, standing in for an edit of that class: the
# subclass replaces it before the command line is imported.
ADD_A_SETTING = """
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
    import json, sys
    from pathlib import Path
    from typer.testing import CliRunner
    import combee
    from combee.cli.main import app

    base_url, folder = sys.argv[1], Path(sys.argv[2])
    endpoint = declared.Endpoint

    # validation, naming the setting
    try:
        endpoint("sim", base_url=base_url, retry_after_cap=0.5)
    except combee.ConfigError as error:
        print("VALIDATION:", error)

    # the command line: the flag and its help, and the value in the run's config.json
    runner = CliRunner()
    help_text = runner.invoke(app, ["train", "--help"], env={"COLUMNS": "200"}).output
    print("HELP:", [line.strip() for line in help_text.splitlines() if "--retry-after-cap" in line])
    run = ["train", "--task", "formula", "--model", "sim", "--base-url", base_url,
           "--train-limit", "2", "--batch-size", "2", "--retry-after-cap", "7",
           "--out", str(folder)]
    done = runner.invoke(app, run)
    config = folder / "config.json"
    endpoint = json.loads(config.read_text())["endpoint"] if config.exists() else {}
    print("CONFIG:", endpoint.get("retry_after_cap", done.output))
"""


def test_an_endpoint_setting_added_in_one_declaration_is_found_everywhere(tmp_path: Path) -> None:
    lines = lines_printed(ADD_A_SETTING, CHECKS, tmp_path / "run")
    assert lines["VALIDATION"] == "retry_after_cap must be at least 1.0 (got 0.5)"
    assert "Longest wait a Retry-After header may ask for." in lines["HELP"]
    assert lines["CONFIG"] == "7.0"
