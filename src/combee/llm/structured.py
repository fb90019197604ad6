"""JSON replies: lenient parsing, cached schema validators, and the schema-in-the-prompt text."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import jsonschema_rs
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from combee.errors import CutOffReplyError, parameter
from combee.llm.types import JsonSchema, Message, Request

# strict=False: a raw newline or tab inside a string (small models write them, and a grammar
# does not always stop them) is kept as text rather than failing the whole reply.
_decoder = json.JSONDecoder(strict=False)
_MAX_VALIDATORS = 256


def parse_json_reply(text: str) -> dict[str, Any]:
    """The JSON object in a model reply, tolerating code fences and surrounding prose.

    Raises ValueError when the reply holds no JSON object.
    """
    stripped = _strip_fences(text.strip())
    try:
        value = _decoder.decode(stripped)
    except ValueError:
        value = _first_object(stripped)
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    return value


def _strip_fences(text: str) -> str:
    if not text.startswith("```"):
        return text
    body = text[3:]
    newline = body.find("\n")
    # Drop the info string ("json") of the opening fence.
    body = body[newline + 1 :] if newline >= 0 else body
    end = body.rfind("```")
    return (body[:end] if end >= 0 else body).strip()


def _first_object(text: str) -> Any:
    """The first decodable ``{...}`` in ``text``; the JSON decoder handles braces inside strings."""
    start = text.find("{")
    while start >= 0:
        try:
            value, _ = _decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        return value
    raise ValueError("no JSON object found in the reply")


class _Validator:
    """One schema, compiled twice: a fast check for every reply (jsonschema-rs, compiled code),
    and jsonschema's explanation of the replies that fail it."""

    def __init__(self, schema: JsonSchema) -> None:
        self.schema = schema  # referenced, so its id cannot be reused by another schema
        checked = dict(schema.schema if schema.accepts is None else schema.accepts)
        self.fast = jsonschema_rs.Draft202012Validator(checked)
        self.explain = Draft202012Validator(checked)


class SchemaValidators:
    """One compiled validator per schema, built on first use."""

    def __init__(self) -> None:
        self._by_id: dict[int, _Validator] = {}

    def error(self, schema: JsonSchema, value: Mapping[str, Any]) -> str | None:
        """The most relevant validation error as one line, or None when ``value`` is valid."""
        entry = self._by_id.get(id(schema))
        if entry is None or entry.schema is not schema:
            if len(self._by_id) >= _MAX_VALIDATORS:
                self._by_id.clear()  # callers building a schema per call must not grow this forever
            entry = _Validator(schema)
            self._by_id[id(schema)] = entry
        if entry.fast.is_valid(value):
            return None
        found = best_match(entry.explain.iter_errors(value))
        if found is None:
            return None
        where = "/".join(str(part) for part in found.absolute_path)
        return f"at '{where or '<root>'}': {found.message}"

    def check(self, text: str, schema: JsonSchema) -> tuple[dict[str, Any] | None, str | None]:
        """``(value, None)`` for a reply that is a JSON object matching ``schema``, else
        ``(None, what is wrong)``."""
        try:
            value = parse_json_reply(text)
        except ValueError as error:
            return None, f"the reply is not a JSON object ({error})"
        problem = self.error(schema, value)
        if problem is not None:
            return None, f"the JSON does not match the schema '{schema.name}' {problem}"
        return value, None


class SchemaInstructions:
    """The schema told in the system prompt, for JSON modes whose wire format cannot carry it;
    each schema's text is made once."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[JsonSchema, str]] = {}

    def add(self, messages: Sequence[Message], schema: JsonSchema) -> list[Message]:
        """The messages with the schema described in the last system message (or a new one)."""
        entry = self._by_id.get(id(schema))
        if entry is None or entry[0] is not schema:
            if len(self._by_id) >= _MAX_VALIDATORS:
                self._by_id.clear()
            entry = (schema, schema_instruction(schema))
            self._by_id[id(schema)] = entry
        return in_system_prompt(messages, entry[1])


def schema_instruction(schema: JsonSchema) -> str:
    """The text that tells a model the reply's JSON shape when the wire format cannot."""
    return (
        "Reply with one JSON object only, no prose and no code fences. "
        f"It must satisfy this JSON schema ({schema.name}):\n"
        + json.dumps(schema.schema, sort_keys=True, separators=(",", ":"))
    )


def reask_message(error: str) -> str:
    """The user turn asking the model to correct an invalid JSON reply."""
    return (
        f"Your previous reply was not valid: {error}\n"
        "Answer again with the corrected JSON object only, no prose and no code fences."
    )


def cut_off(role: str, max_tokens: int, reply: str) -> CutOffReplyError:
    """The error of a JSON reply the server cut off at ``max_tokens`` (``finish_reason:
    length``): it names the limit to raise, and no re-ask is made (the same limit would cut
    the corrected reply too)."""
    return CutOffReplyError(
        f"{role}: the reply was cut off at the {max_tokens}-token limit before its JSON was "
        f"complete (it ends with {reply[-60:]!r}); raise {parameter('max_tokens')} "
        f"(now {max_tokens})",
        role=role,
        max_tokens=max_tokens,
    )


def reask_request(request: Request, reply: str, problem: str) -> Request:
    """``request`` again, with the invalid ``reply`` and a turn saying what is wrong with it."""
    return Request.build(
        [
            *request.chat_messages(),
            {"role": "assistant", "content": reply},
            {"role": "user", "content": reask_message(problem)},
        ],
        temperature=request.temperature,
        max_tokens=request.max_tokens,
        json_schema=request.json_schema,
        seed=request.seed,
    )


def in_system_prompt(messages: Sequence[Message], instruction: str) -> list[Message]:
    """``messages`` with ``instruction`` appended to the last system message (or a new one)."""
    result: list[Message] = list(messages)
    for index in range(len(result) - 1, -1, -1):
        if result[index]["role"] == "system":
            content = result[index]["content"]
            result[index] = {"role": "system", "content": f"{content}\n\n{instruction}"}
            return result
    return [{"role": "system", "content": instruction}, *result]
