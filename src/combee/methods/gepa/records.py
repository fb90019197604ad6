"""Render reflective-dataset records (gepa's or DSPy's ``Inputs``/``Generated Outputs``/
``Feedback`` mappings, or any JSON-like mapping) as plain text for a prompt."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


def render_value(value: Any, indent: str = "") -> str:
    """Nested mappings become indented ``key: value`` lines; everything else its text."""
    if isinstance(value, Mapping):
        lines: list[str] = []
        for key, inner in value.items():
            if isinstance(inner, Mapping):
                lines.append(f"{indent}{key}:")
                lines.append(render_value(inner, indent + "  "))
                continue
            text = render_value(inner)
            if "\n" in text:
                lines.append(f"{indent}{key}:")
                lines.extend(f"{indent}  {line}" for line in text.splitlines())
            else:
                lines.append(f"{indent}{key}: {text}")
        return "\n".join(lines)
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float, bool)) or value is None:
        return json.dumps(value)
    if isinstance(value, Sequence):
        return json.dumps([_plain(v) for v in value], ensure_ascii=False)
    return str(value)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, Sequence):
        return [_plain(v) for v in value]
    return str(value)


def canonical(value: Any) -> str:
    """A stable JSON text of ``value`` (keys sorted, unknown objects as their ``str``)."""
    return json.dumps(_plain(value), sort_keys=True, ensure_ascii=False)
