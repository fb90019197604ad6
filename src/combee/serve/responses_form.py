"""A Responses API exchange in the chat form the store keeps and the learner reads.

- ``instructions`` are the system message, first;
- ``input`` is a user message when it is a string; as items, a message item is a message of its
  role (its ``input_text``/``output_text``/``refusal`` parts as its text), a ``function_call``
  (or ``custom_tool_call``) is a tool call of an assistant message, and a
  ``function_call_output`` (or ``custom_tool_call_output``) is a tool message;
- the reply's ``output`` items are one assistant message: their text, and their function
  calls as its ``tool_calls``.

An assistant's items that follow one another (its text, then the calls it made in the same
turn) are one assistant message, in the input as in the output: so a request that resends an
earlier reply's items continues that exchange (:mod:`combee.serve.chaining`). Items that are
neither (reasoning, a hosted tool's call, a reference to a stored item) are left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from combee.llm.wire import dumps, loads
from combee.serve.http_errors import BadRequest

_TEXT_PARTS = {"input_text": "text", "output_text": "text", "text": "text", "refusal": "refusal"}
"""Content part types that are text, and the field that holds it."""
_CALLS = {"function_call": "arguments", "custom_tool_call": "input"}
_CALL_OUTPUTS = ("function_call_output", "custom_tool_call_output")


def request_messages(body: Any) -> list[dict[str, Any]]:
    """The chat messages of a Responses request's body; :class:`BadRequest` when it is not a
    JSON object whose ``input`` is a string or a list of objects."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object with an 'input'")
    given = body.get("input")
    if isinstance(given, str):
        items: list[Any] = [{"role": "user", "content": given}]
    elif isinstance(given, list) and all(isinstance(item, dict) for item in given):
        items = given
    elif given is None and any(
        body.get(k) for k in ("previous_response_id", "conversation", "prompt")
    ):
        items = []
    else:
        raise BadRequest("'input' must be a string or a list of items (JSON objects)")
    messages = _messages(items)
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        messages.insert(0, {"role": "system", "content": instructions})
    return messages


def reply_message(content: bytes) -> dict[str, Any] | None:
    """The assistant message of a Responses reply's body (a response object), if it is one."""
    try:
        response = loads(content)
    except ValueError:
        return None
    return output_message(response)


def output_message(response: Any) -> dict[str, Any] | None:
    """The assistant message of a response object's ``output`` items (None: no output list)."""
    output = response.get("output") if isinstance(response, Mapping) else None
    if not isinstance(output, list):
        return None
    items = [item for item in output if isinstance(item, Mapping)]
    for message in _messages(items):
        if message["role"] == "assistant":
            return message
    return {"role": "assistant", "content": ""}


def chat_tools(tools: Any) -> list[Any]:
    """A Responses request's tools, its function tools in the chat form (the others, hosted
    tools, as they came)."""
    if not isinstance(tools, list):
        return []
    shown: list[Any] = []
    for tool in tools:
        if isinstance(tool, Mapping) and tool.get("type") == "function" and "function" not in tool:
            function = {
                k: tool[k] for k in ("name", "description", "parameters", "strict") if k in tool
            }
            shown.append({"type": "function", "function": function})
        else:
            shown.append(tool)
    return shown


def _messages(items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for item in items:
        kind = item.get("type") or ("message" if "role" in item else "")
        if kind == "message":
            message = {
                "role": str(item.get("role") or "user"),
                "content": _content(item.get("content")),
            }
            if message["role"] == "assistant":
                _assistant(messages, message["content"], None)
            else:
                messages.append(message)
        elif kind in _CALLS:
            call = {
                "id": str(item.get("call_id") or item.get("id") or ""),
                "type": "function",
                "function": {
                    "name": str(item.get("name") or ""),
                    "arguments": _text(item.get(_CALLS[kind])),
                },
            }
            _assistant(messages, None, call)
        elif kind in _CALL_OUTPUTS:
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": str(item.get("call_id") or ""),
                    "content": _content(item.get("output")),
                }
            )
    return messages


def _assistant(messages: list[dict[str, Any]], content: Any, call: dict[str, Any] | None) -> None:
    """Add ``content`` or ``call`` to the assistant message at the end (one made if the last
    message is not the assistant's)."""
    if not messages or messages[-1]["role"] != "assistant":
        messages.append({"role": "assistant", "content": None})
    last = messages[-1]
    if content is not None:
        before = last["content"]
        if before is None:
            last["content"] = content
        elif isinstance(before, str) and isinstance(content, str):
            last["content"] = f"{before}\n{content}" if before and content else before + content
        else:
            last["content"] = [*_parts(before), *_parts(content)]
    if call is not None:
        last.setdefault("tool_calls", []).append(call)


def _content(content: Any) -> Any:
    """A message's content in the chat form: its text when all its parts are text, else chat
    content parts (an image as ``image_url``; other parts as they came)."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        return _text(content)
    texts = [_part_text(part) for part in content]
    if all(text is not None for text in texts):
        return "\n".join(text for text in texts if text)
    return [_chat_part(part, text) for part, text in zip(content, texts, strict=True)]


def _part_text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if isinstance(part, Mapping) and part.get("type") in _TEXT_PARTS:
        return str(part.get(_TEXT_PARTS[str(part["type"])]) or "")
    return None


def _chat_part(part: Any, text: str | None) -> Any:
    if text is not None:
        return {"type": "text", "text": text}
    if isinstance(part, Mapping) and part.get("type") == "input_image" and part.get("image_url"):
        return {"type": "image_url", "image_url": {"url": part["image_url"]}}
    return part


def _parts(content: Any) -> list[Any]:
    if isinstance(content, list):
        return content
    return [{"type": "text", "text": content}] if content else []


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "" if value is None else dumps(value).decode("utf-8")
