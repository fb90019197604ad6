"""A responder that answers every structured request with arbitrary content valid for its schema.

Where the scripted models play along with Combee's prompts, this one does not: strings are
random words, numbers random, arrays of random length, optional fields present or not. A run
against it must still finish and account for everything (operations that cannot apply are
rejected, not fatal). Offered native tools, it answers now with text only, now with one to
three calls to tools it picks, with arbitrary valid arguments. Seeded, so a failure can be
replayed.
"""

from __future__ import annotations

import json
import math
import random
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from combee.sim.responders import (
    Reply,
    Responder,
    callable_tools,
    calls_required,
    last_user_text,
    request_schema,
    tool_parameters,
)

WORDS = [
    *("alpha", "beta", "gamma", "ratio", "margin", "yield", "total", "net", "[x-00001]"),
    *("section", "strategies", "mistakes", "::", "helpful", "harmful", "ADD", "UPDATE"),
    *("42", "3.5", "-1", "''"),
]


def arbitrary_instance(schema: Mapping[str, Any], rng: random.Random, depth: int = 0) -> Any:
    """A random value that validates against ``schema`` (the subset of JSON Schema that
    structured-output servers accept: types, properties, required, items, enum, anyOf, and
    the bounds of numbers, strings and arrays)."""
    if "enum" in schema:
        return rng.choice(list(schema["enum"]))
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return arbitrary_instance(rng.choice(list(schema[key])), rng, depth + 1)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = rng.choice(kind)
    if kind == "object":
        properties: Mapping[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", []))
        return {
            name: arbitrary_instance(sub, rng, depth + 1)
            for name, sub in properties.items()
            if name in required or rng.random() < 0.5
        }
    if kind == "array":
        low = int(schema.get("minItems", 0))
        high = int(schema.get("maxItems", low + (3 if depth < 4 else 0)))
        items = schema.get("items", {"type": "string"})
        return [arbitrary_instance(items, rng, depth + 1) for _ in range(rng.randint(low, high))]
    if kind == "string":
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 8)))
        text = text.ljust(int(schema.get("minLength", 0)), "x")
        return text[: schema["maxLength"]] if "maxLength" in schema else text
    if kind == "integer":
        bottom, top = _bounds(schema, -5, 100, 1)
        return rng.randint(math.ceil(bottom), math.floor(top))
    if kind == "number":
        return round(rng.uniform(*_bounds(schema, -10, 1000, 0.001)), 3)
    if kind == "boolean":
        return rng.random() < 0.5
    return None


def _bounds(schema: Mapping[str, Any], low: float, high: float, step: float) -> tuple[float, float]:
    """The range to draw a number from: the schema's bounds, else ``low``..``high``."""
    span = high - low
    has_low = "minimum" in schema or "exclusiveMinimum" in schema
    if has_low:
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0) + step)
    if "maximum" in schema or "exclusiveMaximum" in schema:
        high = schema.get("maximum", schema.get("exclusiveMaximum", 0) - step)
    if high < low:  # one bound given, outside the default range
        low, high = (low, low + span) if has_low else (high - span, high)
    return low, high


def arbitrary_responder(seed: int = 0) -> Responder:
    """Schema-valid arbitrary JSON for a structured request; random words otherwise; with tools,
    sometimes calls to them."""
    rng = random.Random(seed)
    lock = threading.Lock()

    def respond(body: Mapping[str, Any]) -> str | Reply:
        schema = request_schema(body)
        tools = callable_tools(body)
        with lock:
            if tools and (calls_required(body) or rng.random() < 2 / 3):
                return Reply(None, arbitrary_calls(tools, rng))
            if schema is not None:
                return json.dumps(arbitrary_instance(schema, rng))
            words = [rng.choice(WORDS) for _ in range(rng.randint(1, 30))]
        return " ".join(words) if last_user_text(body) else ""

    return respond


def arbitrary_calls(tools: Sequence[Mapping[str, Any]], rng: random.Random) -> list[dict[str, Any]]:
    """One to three calls to tools chosen from ``tools`` (OpenAI ``function`` specs), each with
    arbitrary arguments valid for the tool's parameters."""
    calls = []
    for _ in range(rng.randint(1, 3)):
        function = rng.choice(list(tools))
        arguments = arbitrary_instance(tool_parameters(function), rng)
        calls.append({"name": function["name"], "arguments": arguments})
    return calls
