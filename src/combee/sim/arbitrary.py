"""A responder that answers every structured request with arbitrary content valid for its schema.

Where the scripted models play along with Combee's prompts, this one does not: strings are
random words, numbers random, arrays of random length, optional fields present or not. A run
against it must still finish and account for everything (operations that cannot apply are
rejected, not fatal). Seeded, so a failure can be replayed.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Mapping
from typing import Any

from combee.sim.responders import Responder, last_user_text, request_schema

WORDS = [
    *("alpha", "beta", "gamma", "ratio", "margin", "yield", "total", "net", "[x-00001]"),
    *("section", "strategies", "mistakes", "::", "helpful", "harmful", "ADD", "UPDATE"),
    *("42", "3.5", "-1", "''"),
]


def arbitrary_instance(schema: Mapping[str, Any], rng: random.Random, depth: int = 0) -> Any:
    """A random value that validates against ``schema`` (the subset of JSON Schema that
    structured-output servers accept: types, properties, required, items, enum, anyOf)."""
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
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 8)))
    if kind == "integer":
        return rng.randint(-5, 100)
    if kind == "number":
        return round(rng.uniform(-10, 1000), 3)
    if kind == "boolean":
        return rng.random() < 0.5
    return None


def arbitrary_responder(seed: int = 0) -> Responder:
    """Schema-valid arbitrary JSON for a structured request; random words otherwise."""
    rng = random.Random(seed)
    lock = threading.Lock()

    def respond(body: Mapping[str, Any]) -> str:
        schema = request_schema(body)
        with lock:
            if schema is not None:
                return json.dumps(arbitrary_instance(schema, rng))
            words = [rng.choice(WORDS) for _ in range(rng.randint(1, 30))]
        return " ".join(words) if last_user_text(body) else ""

    return respond
