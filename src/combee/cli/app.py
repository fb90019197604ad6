"""The ``combee`` Typer app and how a command's errors reach the user."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from combee.cli.console_log import console_logging
from combee.cli.flags import cli_message
from combee.errors import CombeeError

app = typer.Typer(
    name="combee",
    help="Scale prompt learning: parallel map, augmented shuffle, scan aggregation.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
err = Console(stderr=True, emoji=False)  # ":smile:" in a file name stays as written
T = TypeVar("T")


def _print_version(asked: bool) -> None:
    if asked:
        from importlib.metadata import version

        typer.echo(f"combee {version('combee')}")
        raise typer.Exit()


@app.callback()
def _options(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        help="Print the installed version and exit.",
    ),
) -> None:
    """Scale prompt learning: parallel map, augmented shuffle, scan aggregation."""


def stdout_console() -> Console:
    """The console a command prints its result on: the terminal's width, or, piped to a file or
    another program, wide enough that a table keeps its headers whole (not Rich's 80 columns)."""
    console = Console(emoji=False)
    return console if console.is_terminal else Console(width=200, emoji=False)


def fail(message: str) -> typer.Exit:
    """Print one error line; the caller raises the returned exit."""
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(1)


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """A user-caused error in the block prints one line (flags, not parameters) and exits 1."""
    try:
        yield
    except CombeeError as error:
        raise fail(cli_message(error)) from None


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a command; a user-caused error prints one line (flags, not parameters) and exits 1.
    SIGTERM stops it as Ctrl-C does: finished iterations stay saved, and a rerun continues."""
    import asyncio

    try:
        previous = signal.signal(signal.SIGTERM, _interrupt)
    except ValueError:  # not the main thread: leave signals alone
        previous = None
    try:
        with console_logging(err):
            return asyncio.run(coro)
    except CombeeError as error:
        raise fail(cli_message(error)) from None
    except KeyboardInterrupt:
        err.print(
            "[yellow]interrupted[/]: finished iterations are saved in the run directory; "
            "the same command continues the run"
        )
        raise typer.Exit(130) from None
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
