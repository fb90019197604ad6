"""Whether a Python caller sees a run's progress, and in what form: shown where a person is
watching (a terminal, a Jupyter notebook), not in a pipe, a log or CI; ``progress=`` decides
otherwise."""

from __future__ import annotations

import pytest

import combee
from combee.errors import ConfigError
from combee.progress import ConsoleProgress, NotebookProgress, choice, progress_observer
from combee.progress.choice import Place, place_of, shown_by_default


class ZMQInteractiveShell:  # IPython's shell in a Jupyter kernel, by name
    pass


class Shell(ZMQInteractiveShell):  # a hosted notebook's shell (Colab's) derives from it
    pass


class TerminalInteractiveShell:  # IPython in a terminal
    pass


@pytest.mark.parametrize(
    ("shell", "terminal", "place"),
    [
        (None, True, "terminal"),
        (None, False, "elsewhere"),
        (ZMQInteractiveShell(), False, "notebook"),
        (ZMQInteractiveShell(), True, "notebook"),
        (Shell(), False, "notebook"),
        (TerminalInteractiveShell(), True, "terminal"),
        (TerminalInteractiveShell(), False, "elsewhere"),
    ],
)
def test_the_place_follows_the_shell_then_the_terminal(
    shell: object | None, terminal: bool, place: Place
) -> None:
    assert place_of(shell=shell, stderr_is_terminal=terminal) == place


def test_progress_is_shown_by_default_where_a_person_is_watching() -> None:
    assert shown_by_default("terminal") and shown_by_default("notebook")
    assert not shown_by_default("elsewhere")


@pytest.mark.parametrize(
    ("place", "asked", "shown"),
    [
        ("terminal", None, ConsoleProgress),
        ("notebook", None, NotebookProgress),
        ("elsewhere", None, None),
        ("elsewhere", True, ConsoleProgress),  # lines now and then, as in a log
        ("terminal", False, None),
        ("notebook", False, None),
    ],
)
def test_the_observer_follows_the_place_unless_told(
    monkeypatch: pytest.MonkeyPatch, place: Place, asked: bool | None, shown: type | None
) -> None:
    monkeypatch.setattr(choice, "current_place", lambda: place)
    observer = progress_observer(asked)
    if shown is None:
        assert observer is None
    else:
        assert type(observer) is shown


def test_an_observer_of_ones_own_is_used_as_it_is() -> None:
    mine = combee.LoopObserver()
    assert progress_observer(mine) is mine


def test_anything_else_is_a_config_error_naming_progress() -> None:
    with pytest.raises(ConfigError) as raised:
        progress_observer("yes")  # type: ignore[arg-type]
    assert raised.value.setting == "progress"
    assert "LoopObserver" in str(raised.value)
