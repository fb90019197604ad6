"""Library errors name Python parameters; on the command line they name flags."""

from __future__ import annotations

import functools

from combee.declare import Declared
from combee.errors import CombeeError

FLAGS = {
    "run_dir": "--out",
    "initial_context": "--initial-playbook",
    "llm": "--model",
    "score": "--scorer",
    "samples": "--task",
    "prices": "--price-prompt/--price-completion",
    "context": "--playbook",
}
"""Parameters that are not declared settings and whose flag is not simply ``--`` plus the
name with dashes (a declared setting's flag comes from its declaration)."""


@functools.cache
def _declared() -> dict[str, Declared]:
    # Imported at the first message: the command line starts without every settings module.
    from combee.llm.connect import ENDPOINT_SETTINGS
    from combee.serve.settings import SERVE_SETTINGS
    from combee.settings import LEARN_SETTINGS, SETTINGS

    every = (*SERVE_SETTINGS, *ENDPOINT_SETTINGS, *LEARN_SETTINGS, *SETTINGS)
    return {item.name: item for item in every if item.option_flag is not None}


def flag(parameter: str) -> str:
    """The flag of a library parameter: its declaration's, else ``--`` and the name with
    dashes (or its entry in ``FLAGS``)."""
    item = _declared().get(parameter)
    if item is not None and item.option_flag is not None:
        return item.option_flag
    return FLAGS.get(parameter, "--" + parameter.replace("_", "-"))


def flag_value(parameter: str, value: object) -> str:
    """``parameter=value`` as given on the command line: ``--overwrite`` for True,
    ``--no-overwrite`` for False, 0 for None where the flag takes 0 for None."""
    name = flag(parameter)
    if value is True:
        return name
    if value is False:
        return f"--no-{name[2:]}"
    item = _declared().get(parameter)
    if value is None and item is not None and item.bounds.cli_zero_is_none:
        value = 0
    return f"{name} {value}"


def cli_message(error: CombeeError) -> str:
    """The message with each parameter it names shown as its flag."""
    return error.render(flag, flag_value)
