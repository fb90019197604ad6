"""A declared setting's flag is named as its declaration says, on every command built from it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import typer
from typer.testing import CliRunner

from combee.cli.flags import flag
from combee.cli.setting_options import settings_from_options, with_setting_options
from combee.declare import SettingsGroup, declared, setting


@dataclass(frozen=True)
class _Knobs(SettingsGroup):
    patience_rounds: int = setting(3, "Rounds to wait.", least=1, flag="wait")
    quiet: bool = setting(False, "Say less.")
    secret_only: int = setting(0, "Only from Python.", flag=None)


KNOBS = declared(_Knobs)


def _app(seen: dict[str, Any]) -> typer.Typer:
    app = typer.Typer()

    @app.command()
    @with_setting_options(KNOBS)
    def run(**options: Any) -> None:
        seen.update(settings_from_options(KNOBS, options))

    return app


def test_a_declared_flag_name_is_the_option_and_the_value_reaches_the_setting() -> None:
    seen: dict[str, Any] = {}
    result = CliRunner().invoke(_app(seen), ["--wait", "5", "--quiet"])
    assert result.exit_code == 0, result.output
    assert seen == {"patience_rounds": 5, "quiet": True}  # no option: left to its default


def test_the_help_lists_the_declared_names_only() -> None:
    help_text = CliRunner().invoke(_app({}), ["--help"], env={"COLUMNS": "200"}).output
    assert "--wait" in help_text and "--quiet" in help_text
    assert "--patience-rounds" not in help_text and "secret" not in help_text
    refused = CliRunner().invoke(_app({}), ["--patience-rounds", "5"])
    assert refused.exit_code != 0


def test_messages_name_the_same_flag_as_the_option() -> None:
    (item,) = [k for k in KNOBS if k.name == "patience_rounds"]
    assert item.option_flag == "--wait"
    assert flag("timeout_s") == "--timeout"  # a real declaration with a flag of its own
