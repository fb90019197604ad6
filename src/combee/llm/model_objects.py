"""Messages held as the ``openai`` SDK's objects, read as the dicts they stand for.

An agent written against the SDK appends ``reply.choices[0].message`` (a pydantic
``ChatCompletionMessage``) to its conversation as OpenAI's examples do, or puts
``message.tool_calls`` into a dict of its own. Wherever Combee reads such a conversation (a
request, an :class:`~combee.tasks.agent.Episode`) it reads each model object as its
``model_dump``: JSON values, with the fields that are None left out, as the API omits them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class DumpsModel(Protocol):
    """An object that writes itself as a dict (a pydantic model, such as the SDK's)."""

    def model_dump(self, *, mode: str = ..., exclude_none: bool = ...) -> dict[str, Any]: ...


def plain_value(value: Any) -> Any:
    """``value`` with every model object in it (at any depth of dicts and lists) written as
    its dict; a dict or list holding none is returned as it is (the same object)."""
    if isinstance(value, Mapping):
        items = {key: plain_value(item) for key, item in value.items()}
        changed = any(items[key] is not value[key] for key in items)
        return items if changed else value
    if isinstance(value, list):
        values = [plain_value(item) for item in value]
        return values if any(a is not b for a, b in zip(values, value, strict=True)) else value
    if isinstance(value, DumpsModel):
        return value.model_dump(mode="json", exclude_none=True)
    return value
