"""The LLM interface, its backends, retries, response cache and accounting.

The names below are imported when first used: a module that needs only the types (most of the
package's users) does not import the HTTP clients.
"""

from typing import TYPE_CHECKING

from combee.lazy import lazy_exports

if TYPE_CHECKING:
    from combee.llm.accounting import CallRecord, Prices
    from combee.llm.cache import ResponseCache
    from combee.llm.client import LLM
    from combee.llm.connect import Endpoint, connect
    from combee.llm.messages import MessageError
    from combee.llm.openai_backend import OpenAIBackend
    from combee.llm.placeholders import Placeholders
    from combee.llm.structured import parse_json_reply
    from combee.llm.types import (
        Backend,
        Completion,
        JsonMode,
        JsonSchema,
        Message,
        Request,
        RoleUsage,
    )

_EXPORTS = {
    "CallRecord": "combee.llm.accounting",
    "Prices": "combee.llm.accounting",
    "ResponseCache": "combee.llm.cache",
    "LLM": "combee.llm.client",
    "Endpoint": "combee.llm.connect",
    "connect": "combee.llm.connect",
    "MessageError": "combee.llm.messages",
    "OpenAIBackend": "combee.llm.openai_backend",
    "Placeholders": "combee.llm.placeholders",
    "parse_json_reply": "combee.llm.structured",
    "Backend": "combee.llm.types",
    "Completion": "combee.llm.types",
    "JsonMode": "combee.llm.types",
    "JsonSchema": "combee.llm.types",
    "Message": "combee.llm.types",
    "Request": "combee.llm.types",
    "RoleUsage": "combee.llm.types",
}

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "LLM",
    "Backend",
    "CallRecord",
    "Completion",
    "Endpoint",
    "JsonMode",
    "JsonSchema",
    "Message",
    "MessageError",
    "OpenAIBackend",
    "Placeholders",
    "Prices",
    "Request",
    "ResponseCache",
    "RoleUsage",
    "connect",
    "parse_json_reply",
]
