"""Chat messages as the OpenAI chat API defines them, checked before they are sent.

A request carries the caller's messages as they are: ``system``, ``developer``, ``user``,
``assistant`` (with ``tool_calls``) and ``tool`` results (with ``tool_call_id``), content as a
string or a list of text parts, and the ``tools`` and ``tool_choice`` the model may use. What
Combee's client cannot send faithfully (an image part, an unknown field, a tool call whose
arguments are not a JSON string) is refused with one :class:`MessageError` naming the message
and the field, never dropped or rewritten.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from combee.errors import ConfigError

ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})

_KNOWN = {
    "system": frozenset({"role", "content", "name"}),
    "developer": frozenset({"role", "content", "name"}),
    "user": frozenset({"role", "content", "name"}),
    "assistant": frozenset({"role", "content", "name", "tool_calls", "refusal"}),
    "tool": frozenset({"role", "content", "tool_call_id", "name"}),
}

ToolChoice = str | Mapping[str, Any]
"""``"auto"``, ``"none"``, ``"required"`` or ``{"type": "function", "function": {"name"}}``."""


class MessageError(ConfigError):
    """A message, tool or tool choice the client cannot send as it is."""

    def __init__(self, message: str) -> None:
        super().__init__(message, setting="messages")


def wire_messages(messages: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], ...]:
    """Shallow copies of ``messages`` after checking each one can be sent as it is."""
    out = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise MessageError(
                f"message {index} is a {type(message).__name__}, not a mapping "
                "(an OpenAI chat message: {'role': ..., 'content': ...})"
            )
        role = message.get("role")
        if role not in ROLES:
            raise MessageError(
                f"message {index} has role {role!r}; the OpenAI chat API knows "
                f"{', '.join(sorted(ROLES))}"
            )
        if len(message) > 2 or role == "tool" or not isinstance(message.get("content"), str):
            _check(index, role, message)  # the common case, role and text, needs no more
        out.append(dict(message))
    return tuple(out)


def _check(index: int, role: str, message: Mapping[str, Any]) -> None:
    unknown = [k for k, v in message.items() if k not in _KNOWN[role] and v is not None]
    if unknown:
        raise MessageError(
            f"message {index} ({role}) has field(s) {', '.join(map(repr, unknown))} that "
            f"Combee's client does not carry; a {role} message may have "
            f"{', '.join(sorted(_KNOWN[role]))}"
        )
    name = message.get("name")
    if name is not None and not isinstance(name, str):
        raise MessageError(f"message {index} ({role}): 'name' must be a string")
    calls = message.get("tool_calls")
    if calls is not None:
        _check_calls(index, calls)
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        raise MessageError(
            f"message {index} (tool) needs 'tool_call_id': the id of the assistant's tool call "
            "it answers"
        )
    if message.get("content") is None and not (role == "assistant" and calls):
        raise MessageError(
            f"message {index} ({role}) has no content; only an assistant message with "
            "tool_calls may leave it out (give a string, '' for none)"
        )
    _check_content(index, role, message)


def _check_content(index: int, role: str, message: Mapping[str, Any]) -> None:
    content = message.get("content")
    if content is None or isinstance(content, str):
        return
    if not isinstance(content, list):
        raise MessageError(
            f"message {index} ({role}): content is a {type(content).__name__}; give a string "
            "or a list of text parts"
        )
    for part in content:
        if not (
            isinstance(part, Mapping)
            and part.get("type") == "text"
            and isinstance(part.get("text"), str)
        ):
            kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
            raise MessageError(
                f"message {index} ({role}) has a content part of type {kind!r}; Combee's "
                "client carries text parts only ({'type': 'text', 'text': ...})"
            )


def _check_calls(index: int, calls: Any) -> None:
    if not isinstance(calls, list | tuple):
        raise MessageError(f"message {index} (assistant): 'tool_calls' must be a list")
    for number, call in enumerate(calls):
        where = f"message {index} (assistant), tool call {number}"
        function = call.get("function") if isinstance(call, Mapping) else None
        if not (
            isinstance(call, Mapping)
            and isinstance(call.get("id"), str)
            and call.get("type", "function") == "function"
            and isinstance(function, Mapping)
            and isinstance(function.get("name"), str)
        ):
            raise MessageError(
                f"{where} must be {{'id': str, 'type': 'function', 'function': "
                "{'name': str, 'arguments': str}}"
            )
        if not isinstance(function.get("arguments"), str):
            raise MessageError(
                f"{where} ({function['name']}): 'arguments' must be a JSON string, as the OpenAI "
                "chat API sends it (json.dumps(arguments))"
            )


def wire_tools(tools: Sequence[Mapping[str, Any]] | None) -> tuple[dict[str, Any], ...]:
    """Copies of ``tools`` (``[{"type": "function", "function": {"name", "parameters"}}]``)."""
    if not tools:
        return ()
    out = []
    for index, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if not (
            isinstance(tool, Mapping)
            and tool.get("type") == "function"
            and isinstance(function, Mapping)
            and isinstance(function.get("name"), str)
            and isinstance(function.get("parameters", {}), Mapping)
        ):
            raise MessageError(
                f"tool {index} must be {{'type': 'function', 'function': {{'name': str, "
                "'description': str, 'parameters': <JSON schema>}}"
            )
        out.append(dict(tool))
    return tuple(out)


def check_tool_choice(choice: ToolChoice | None, tools: Sequence[Mapping[str, Any]]) -> None:
    if choice is None:
        return
    if isinstance(choice, str):
        if choice not in ("auto", "none", "required"):
            raise MessageError(
                f"tool_choice {choice!r}: give 'auto', 'none', 'required' or "
                "{'type': 'function', 'function': {'name': ...}}"
            )
        if choice == "required" and not tools:
            raise MessageError("tool_choice 'required' needs tools")
        return
    name = forced_tool(choice)
    if name is None or name not in tool_names(tools):
        raise MessageError(
            f"tool_choice {dict(choice)!r} must name one of the tools given "
            f"({', '.join(tool_names(tools)) or 'none'})"
        )


def forced_tool(choice: ToolChoice | None) -> str | None:
    """The tool ``choice`` names (``{"type": "function", "function": {"name"}}``), else None."""
    if not isinstance(choice, Mapping):
        return None
    function = choice.get("function")
    name = function.get("name") if isinstance(function, Mapping) else None
    return name if isinstance(name, str) else None


def tool_names(tools: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(tool["function"]["name"]) for tool in tools]


def content_text(content: Any) -> str:
    """A message's content as text (a list of text parts joined by newlines)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))


def message_texts(message: Mapping[str, Any]) -> Iterator[str]:
    """Every text a message carries: its content and its tool calls' arguments."""
    yield content_text(message.get("content"))
    for call in message.get("tool_calls") or ():
        yield str(call["function"].get("arguments", ""))


def map_texts(message: Mapping[str, Any], change: Callable[[str], str]) -> dict[str, Any]:
    """``message`` with ``change`` applied to its content (each text part) and its tool calls'
    arguments; everything else as it was."""
    out = dict(message)
    content = message.get("content")
    if isinstance(content, str):
        out["content"] = change(content)
    elif isinstance(content, list):
        out["content"] = [{**part, "text": change(part["text"])} for part in content]
    calls = message.get("tool_calls")
    if calls:
        out["tool_calls"] = [map_call_arguments(call, change) for call in calls]
    return out


def map_call_arguments(call: Mapping[str, Any], change: Callable[[str], str]) -> dict[str, Any]:
    function = call["function"]
    return {**call, "function": {**function, "arguments": change(function["arguments"])}}
