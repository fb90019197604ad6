"""The ``combee`` commands of a documented shell block, checked against the real parser.

Read the way a reader types them: backslash continuations joined, ``#`` comments dropped,
``NAME=value`` assignments expanded where ``$NAME`` is used, ``[--flag]`` (an optional flag) taken
as the flag, a ``time`` wrapper looked through, and ``make demo DEMO_ARGS="..."`` taken as
``combee demo ...``. Every flag and its value then goes through the command's own Click parser
(Typer's), so an unknown or renamed flag, a missing value or a value of the wrong type fails.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from functools import cache
from typing import Any

import typer

_OPERATORS = frozenset({"&&", "||", "|", ";", "&"})
_WRAPPERS = frozenset({"time", "/usr/bin/time", "-v", "nice", "-n"})


def combee_commands(source: str) -> list[list[str]]:
    """Each ``combee`` command line of a shell block, as the arguments after ``combee``."""
    variables: dict[str, str] = {}
    commands = []
    for words in _simple_commands(source.replace("\\\n", " ")):
        while words and _assignment(words[0]):
            name, _, value = words.pop(0).partition("=")
            variables[name] = value
        words = [w for word in words for w in _expand(word, variables)]
        while words and (words[0] in _WRAPPERS or words[0].isdigit()):
            words.pop(0)
        if words[:1] == ["combee"]:
            commands.append(words[1:])
        elif words[:2] == ["make", "demo"]:
            arguments = [w.partition("=")[2] for w in words if w.startswith("DEMO_ARGS=")]
            commands.append(["demo", *(shlex.split(arguments[0]) if arguments else [])])
    return commands


def check_flags(arguments: list[str]) -> None:
    """Parse ``combee ARGUMENTS`` with the real parser; raise ``AssertionError`` naming the
    command and what the parser said when it refuses them."""
    try:
        _parse(arguments)
    except Exception as error:  # Click's usage errors: the parser's message is the point
        message = error.format_message() if hasattr(error, "format_message") else error
        raise AssertionError(f"combee {' '.join(arguments)}: {message}") from None


def _parse(arguments: list[str]) -> None:
    command: Any = _cli()
    name, rest, parent = "combee", list(arguments), None
    while True:
        context = command.make_context(name, rest, parent=parent)
        pending = [*context._protected_args, *context.args] if hasattr(command, "commands") else []
        if not pending:
            return
        name, command, rest = command.resolve_command(context, pending)
        parent = context


@cache
def _cli() -> Any:
    from combee.cli.main import app

    return typer.main.get_command(app)


def _simple_commands(text: str) -> Iterator[list[str]]:
    for line in text.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words: list[str] = []
        for token in lexer:
            if token in _OPERATORS:
                yield words
                words = []
            else:
                optional = token.startswith("[") or (token.startswith("-") and token.endswith("]"))
                words.append(token.strip("[]") if optional else token)
        yield [w for w in words if w]


def _assignment(word: str) -> bool:
    name, equals, _ = word.partition("=")
    return bool(equals) and name.isidentifier()


def _expand(word: str, variables: dict[str, str]) -> list[str]:
    if word.startswith("$") and word[1:] in variables:
        return shlex.split(variables[word[1:]])
    return [word]
