"""The LLM interface, its backends, retries, response cache and accounting."""

from combee.llm.accounting import CallRecord, Prices
from combee.llm.cache import ResponseCache
from combee.llm.client import LLM
from combee.llm.connect import Endpoint, connect
from combee.llm.messages import MessageError
from combee.llm.openai_backend import OpenAIBackend
from combee.llm.placeholders import Placeholders
from combee.llm.structured import parse_json_reply
from combee.llm.types import Backend, Completion, JsonMode, JsonSchema, Message, Request, RoleUsage

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
