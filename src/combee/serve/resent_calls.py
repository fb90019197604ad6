"""Tool calls an agent sends back in a form of its own (smolagents writes "Calling tools: [...]"
as assistant text and the result as a user message, rather than ``tool_calls`` and ``tool``
messages).

Such a conversation never starts with an earlier exchange's messages *and reply* as sent, so
prefix chaining (:mod:`combee.serve.chaining`) cannot link it. It is linked by structure: a
request continues an exchange whose reply called tools when it begins with that exchange's
request (the same messages, to the digest) and one of those calls reappears in the messages
after it, in any form. A call reappears when its function's name and either its id or every
value of its arguments show in those messages' text, compared on letters and digits only (JSON,
a Python repr or prose all quote ``"Paris"`` as ``Paris``). No words of any framework are
matched.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from combee.tasks.traces.chat import content_text


@dataclass(frozen=True)
class CalledTool:
    """What identifies one tool call wherever it is written: folded name, id and argument
    values."""

    name: str
    id: str
    values: tuple[str, ...]

    def shows_in(self, text: str) -> bool:
        """Whether this call is written in ``text`` (folded by :func:`folded`)."""
        if not self.name or self.name not in text:
            return False
        if self.id and self.id in text:
            return True
        return bool(self.values) and all(value in text for value in self.values)


def called_tools(reply: Mapping[str, Any]) -> tuple[CalledTool, ...]:
    """The tool calls of an assistant ``reply`` (none: an empty tuple)."""
    calls = reply.get("tool_calls")
    found = []
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, Mapping):
            continue
        function = call.get("function")
        function = function if isinstance(function, Mapping) else {}
        values = tuple(v for v in map(folded, _leaves(arguments_of(function))) if v)
        found.append(
            CalledTool(
                folded(str(function.get("name") or "")), folded(str(call.get("id") or "")), values
            )
        )
    return tuple(found)


def reappears(calls: Sequence[CalledTool], later: Sequence[Mapping[str, Any]]) -> bool:
    """Whether one of ``calls`` is written in the ``later`` messages, in any form."""
    if not calls or not later:
        return False
    text = folded("\n".join(_written(message) for message in later))
    return any(call.shows_in(text) for call in calls)


def folded(text: str) -> str:
    """``text``'s letters and digits, case folded: what every way of writing a value keeps."""
    return "".join(character for character in text.casefold() if character.isalnum())


def _written(message: Mapping[str, Any]) -> str:
    calls = message.get("tool_calls")
    shown = json.dumps(calls, ensure_ascii=False, default=str) if calls else ""
    return f"{content_text(message.get('content'))}\n{shown}\n{message.get('tool_call_id') or ''}"


def arguments_of(function: Mapping[str, Any]) -> Any:
    """A tool call's arguments as JSON values (as written, when they are not JSON)."""
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, Mapping):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _leaves(item)
    elif value is not None:
        yield str(value)
