"""The API forms whose exchanges the gateway learns from: chat completions and the Responses
API. A form says where the upstream answers it, how its body reads as chat messages, where the
playbook goes, and how its reply (whole or streamed) reads as the assistant's message; the relay
itself (:meth:`combee.serve.gateway.Gateway.relay`) is the same for both."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from combee.serve import exchange_draft, responses_form
from combee.serve.http_errors import BadRequest
from combee.serve.playbook_injection import with_served_instructions, with_served_playbook
from combee.serve.records import PlaybookVersion
from combee.serve.responses_stream import ResponsesStreamReader
from combee.serve.streams import StreamReader


class ReplyStream(Protocol):
    """A streamed reply on its way: the bytes to pass on now, the rest at its end, and the
    assistant message it carried."""

    def feed(self, chunk: bytes) -> bytes: ...

    def rest(self) -> bytes: ...

    def message(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class ExchangeForm:
    path: str
    """The upstream's route (after its base URL)."""
    messages: Callable[[Any], list[dict[str, Any]]]
    """The request body's chat messages; :class:`BadRequest` for a body out of form."""
    with_playbook: Callable[[dict[str, Any], PlaybookVersion | None, str], dict[str, Any]]
    """The body to send: the playbook put in, the default model when it names none."""
    tools: Callable[[dict[str, Any]], list[Any]]
    """The request's tools, in the chat form."""
    reply: Callable[[bytes], dict[str, Any] | None]
    """The assistant message of a whole reply's body."""
    stream: Callable[[], ReplyStream]
    """A reader for a streamed reply."""


def _chat_messages(body: Any) -> list[dict[str, Any]]:
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        raise BadRequest("the body must be a JSON object with a 'messages' list")
    if not all(isinstance(m, dict) for m in body["messages"]):
        raise BadRequest("every message must be a JSON object")
    messages: list[dict[str, Any]] = body["messages"]
    return messages


def _chat_tools(body: dict[str, Any]) -> list[Any]:
    tools = body.get("tools")
    return tools if isinstance(tools, list) else []


CHAT = ExchangeForm(
    path="/chat/completions",
    messages=_chat_messages,
    with_playbook=with_served_playbook,
    tools=_chat_tools,
    reply=exchange_draft.reply_message,
    stream=StreamReader,
)

RESPONSES = ExchangeForm(
    path="/responses",
    messages=responses_form.request_messages,
    with_playbook=with_served_instructions,
    tools=lambda body: responses_form.chat_tools(body.get("tools")),
    reply=responses_form.reply_message,
    stream=ResponsesStreamReader,
)
