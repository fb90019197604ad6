"""A library message names Python parameters; the command line shows each as its flag."""

from __future__ import annotations

from combee.cli.flags import cli_message
from combee.errors import OVERWRITE, ConfigError, EndpointError, Placeholder, parameter


def test_the_setting_and_marked_parameters_become_flags() -> None:
    error = ConfigError(
        f"holds a finished run; pass {OVERWRITE}, or set {parameter('token_budget', None)} "
        f"and {parameter('data', Placeholder('PATH'))}",
        setting="run_dir",
    )
    assert str(error) == (
        "run_dir holds a finished run; pass overwrite=True, or set token_budget=None and data=PATH"
    )
    assert cli_message(error) == (
        "--out holds a finished run; pass --overwrite, or set --token-budget 0 and --data PATH"
    )


def test_a_declared_flag_name_comes_from_the_declaration() -> None:
    error = EndpointError(
        f"set {parameter('json_mode', 'json_object')} or raise {parameter('timeout_s')}; "
        f"{parameter('redact', False)} is not advised"
    )
    assert (
        str(error) == "set json_mode='json_object' or raise timeout_s; redact=False is not advised"
    )
    assert (
        cli_message(error)
        == "set --json-mode json_object or raise --timeout; --no-redact is not advised"
    )


def test_unmarked_text_is_left_as_written() -> None:
    error = ConfigError("must be an object with batch_size() and reduce()", setting="strategy")
    assert cli_message(error) == "--strategy must be an object with batch_size() and reduce()"
