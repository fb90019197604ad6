"""A request in the arguments llama-cpp-python's ``create_chat_completion`` takes: messages
(tools written as text), sampling, and a JSON schema as a grammar llama.cpp accepts."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from combee.llm.bounded import bounded_schema, longest_reply, open_schema
from combee.llm.local.tools import prompt_messages
from combee.llm.types import JsonSchema, Request

logger = logging.getLogger(__name__)


class CallArguments:
    """Builds each call's arguments for one model; keeps each schema's grammar once built."""

    def __init__(self, llama_cpp: Any, seed: int) -> None:
        self._llama_cpp = llama_cpp
        self.seed = seed
        self._formats: dict[tuple[int, int], tuple[JsonSchema, dict[str, Any]]] = {}

    def for_request(
        self, request: Request, tool_schema: JsonSchema | None = None
    ) -> dict[str, Any]:
        """llama-cpp-python's arguments; a request with tools or tool messages is written as
        text (:mod:`combee.llm.local.tools`) and ``tool_schema`` holds its reply."""
        arguments: dict[str, Any] = {
            "messages": prompt_messages(request)
            if request.uses_tools()
            else request.chat_messages(),
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "seed": self.seed if request.seed is None else request.seed,
        }
        schema = tool_schema or request.json_schema
        if schema is not None:
            response_format = self.response_format(schema, request.max_tokens)
            arguments["response_format"] = response_format
            if "schema" in response_format:
                # The grammar is sized for ``max_tokens`` at the usual characters per token;
                # the hard limit allows its worst case (one character per token), so the
                # limit never cuts a reply into invalid JSON: the grammar ends it.
                worst = longest_reply(response_format["schema"])
                arguments["max_tokens"] = max(request.max_tokens, worst)
        return arguments

    def response_format(self, schema: JsonSchema, max_tokens: int) -> dict[str, Any]:
        """The schema bounded to ``max_tokens`` (see :mod:`combee.llm.bounded`), in the
        json_object form llama-cpp-python takes, built once per schema and limit. A grammar
        llama.cpp refuses is never sent: then the bounded schema with open strings, else JSON."""
        key = (id(schema), max_tokens)
        cached = self._formats.get(key)
        if cached is not None and cached[0] is schema:
            return cached[1]
        bounded = bounded_schema(schema.schema, max_tokens)
        response_format: dict[str, Any] = {"type": "json_object"}
        for candidate in (bounded, open_schema(bounded)):
            if grammar_accepted(self._llama_cpp, candidate):
                response_format["schema"] = candidate
                break
        else:
            logger.warning(
                "llama.cpp refuses the grammar of the %s schema; asking for plain JSON", schema.name
            )
        if len(self._formats) >= 256:
            self._formats.clear()
        self._formats[key] = (schema, response_format)
        return response_format


def grammar_accepted(llama_cpp: Any, schema: Mapping[str, Any]) -> bool:
    """Whether llama.cpp's grammar parser takes the grammar llama-cpp-python builds from
    ``schema`` (sampling with one it refuses crashes the process)."""
    try:
        grammar = llama_cpp.llama_grammar.LlamaGrammar.from_json_schema(json.dumps(schema))
    except Exception:  # the converter's own refusal: llama-cpp-python would fall back to JSON
        return False
    sampler = llama_cpp.llama_sampler_init_grammar(
        None, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
    )
    if not sampler:
        return False
    llama_cpp.llama_sampler_free(sampler)
    return True
