"""One naming of limits across commands: ``--train-limit``, ``--val-limit``, ``--test-limit`` for a
task's splits, ``--limit`` where a command reads one set of items and has no other limit. The old
spellings still work, hidden from the help, with a one-line notice."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import typer

from combee.cli.main import app
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from tests.cli_helpers import run_combee
from tests.docs.doc_commands import check_flags

SPLIT_LIMITS = frozenset({"--train-limit", "--val-limit", "--test-limit"})
BARE_SPLITS = frozenset({"--train", "--val", "--test"})
"""A split's name alone as a count: a limit that does not say so."""


def _commands(command: Any, name: str) -> Iterator[tuple[str, Any]]:
    yield name, command
    for sub_name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, f"{name} {sub_name}")


COMMANDS = dict(_commands(typer.main.get_command(app), "combee"))


def _visible_flags(command: Any) -> set[str]:
    return {
        flag
        for param in command.params
        if not getattr(param, "hidden", False)
        for flag in (*param.opts, *param.secondary_opts)
        if flag.startswith("--")
    }


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_limit_flag_follows_the_rule(name: str) -> None:
    flags = _visible_flags(COMMANDS[name])
    limits = {flag for flag in flags if "limit" in flag}
    assert limits <= SPLIT_LIMITS | {"--limit"}, f"{name}: {sorted(limits)}"
    assert not ("--limit" in limits and limits & SPLIT_LIMITS), f"{name}: --limit beside splits"
    assert not flags & BARE_SPLITS, f"{name}: {sorted(flags & BARE_SPLITS)} name no limit"


def test_the_rule_sees_every_command_and_their_limits() -> None:
    assert {"combee train", "combee demo", "combee eval-traces", "combee serve rollback"} <= set(
        COMMANDS
    )
    limits = {name: {f for f in _visible_flags(c) if "limit" in f} for name, c in COMMANDS.items()}
    assert limits["combee train"] == limits["combee compare"] == SPLIT_LIMITS
    assert limits["combee demo"] == {"--train-limit", "--test-limit"}
    assert (
        limits["combee eval"]
        == limits["combee learn"]
        == limits["combee eval-traces"]
        == {"--limit"}
    )


@pytest.mark.parametrize(
    ("arguments", "notice"),
    [
        (["demo", "--train", "8", "--test", "2"], "note: --train is now --train-limit"),
        (["demo", "--test", "2"], "note: --test is now --test-limit"),
        (["eval-traces", "--limit-tasks", "5"], "note: --limit-tasks is now --limit"),
    ],
)
def test_an_old_spelling_still_parses_with_a_notice(
    arguments: list[str], notice: str, capsys: pytest.CaptureFixture[str]
) -> None:
    check_flags(arguments)
    assert notice in capsys.readouterr().err
    help_text = run_combee(arguments[0], "--help").stdout
    assert arguments[1] not in help_text.replace(f"{arguments[1]}-", "")


def test_the_demo_takes_its_old_spellings(tmp_path: Any) -> None:
    with serve_in_thread(ace_responder) as server:
        result = run_combee(
            "demo", "--train", "2", "--batch-size", "2", "--test", "1", "--model", "sim",
            "--base-url", server.base_url, "--out", str(tmp_path / "d"),
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "note: --train is now --train-limit" in result.stderr
    assert "accuracy on 1 Formula test questions:" in result.stdout
