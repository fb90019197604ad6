"""How many reflections one ACE curator call can turn into operations, measured.

Two limits, whichever is smaller:

- the reply: ``max_tokens`` over the tokens one operation takes. Before any curator reply the
  figure is the bounded schema's (full-length lessons at :data:`~combee.llm.bounded.
  CHARS_PER_TOKEN` characters a token); after, the tokens the model's own replies spent per
  operation. A model decoded under the bounded grammar never writes more operations than the
  grammar admits, whatever their length.
- the prompt, when the model's context window is known: the window, less ``max_tokens`` kept
  for the reply and the prompt without reflections (playbook and instructions), over the
  reflections' mean length as the curator prompt shows them. Characters become tokens at the
  ratio the model's earlier prompts measured (before any: :data:`FIRST_CHARS_PER_TOKEN`).

A merge call is sized on the updates it would read (:func:`merge_fan_in`): as many as fit the
window beside the playbook and the reply.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from combee.core.capacity import CallCapacity
from combee.llm.bounded import bounded_schema
from combee.llm.types import Completion, JsonSchema, Message, ModelLimits

SAFETY = 0.9
"""The share of a window a merge prompt and its reply are sized to fill (an estimate of tokens
from characters is not a count)."""
FIRST_CHARS_PER_TOKEN = 3.0
"""Characters a prompt token is taken to hold before any prompt was measured (English text
averages about 4; a lower figure errs toward smaller groups)."""


@dataclass
class CuratorMeter:
    """What earlier curator calls measured: tokens per operation and characters per token."""

    reply_tokens: int = 0
    operations: int = 0
    prompt_chars: int = 0
    prompt_tokens: int = 0

    def observe(self, messages: Sequence[Message], completion: Completion, written: int) -> None:
        """Count one curator reply that wrote ``written`` operations."""
        if written > 0 and completion.completion_tokens > 0:
            self.reply_tokens += completion.completion_tokens
            self.operations += written
        if completion.prompt_tokens > 0:
            self.prompt_chars += _chars(messages)
            self.prompt_tokens += completion.prompt_tokens

    @property
    def chars_per_token(self) -> float:
        if self.prompt_tokens == 0:
            return FIRST_CHARS_PER_TOKEN
        return self.prompt_chars / self.prompt_tokens

    def measure(
        self,
        *,
        schema: JsonSchema,
        max_tokens: int,
        limits: ModelLimits,
        without: Sequence[Message],
        with_all: Sequence[Message],
        count: int,
    ) -> CallCapacity:
        """The capacity of one call: ``without`` is the curator prompt with no reflections,
        ``with_all`` the prompt with all ``count`` of them."""
        bound = _payload_items(schema, max_tokens)
        if self.operations:
            per_op = self.reply_tokens / self.operations
            by_reply = max(1, int(max_tokens / per_op))
            if limits.bounded_replies:
                by_reply = min(by_reply, bound)
            reply_why = f"{per_op:.0f} reply tokens per operation measured"
        else:
            by_reply = bound
            reply_why = "the reply bound's room for full-length operations"
        why = f"{by_reply} operations per {max_tokens}-token reply ({reply_why})"
        window = limits.context_window
        if window is None or count == 0:
            return CallCapacity(by_reply, f"{why}; context window not known")
        ratio = self.chars_per_token
        fixed = _chars(without) / ratio
        each = max(1.0, (_chars(with_all) - _chars(without)) / ratio / count)
        room = window - max_tokens - fixed
        by_prompt = max(1, int(room / each))
        why += (
            f"; {by_prompt} reflections of ~{each:.0f} tokens fit the {window}-token window "
            f"beside the reply and ~{fixed:.0f} prompt tokens"
        )
        return CallCapacity(min(by_reply, by_prompt), why)


def _payload_items(schema: JsonSchema, max_tokens: int) -> int:
    """How many operations the curator schema bounded to ``max_tokens`` admits."""
    bounded = bounded_schema(schema.schema, max_tokens)
    operations = bounded.get("properties", {}).get("operations", {})
    return max(1, int(operations.get("maxItems", 1)))


def _chars(messages: Sequence[Message]) -> int:
    return sum(len(m.get("content", "")) for m in messages)


def tokens_in(messages: Sequence[Message], meter: CuratorMeter) -> float:
    """About how many tokens ``messages`` take, at the ratio earlier prompts measured."""
    return _chars(messages) / meter.chars_per_token


def merge_fan_in(
    *,
    meter: CuratorMeter,
    window: int,
    max_tokens: int,
    without: Sequence[Message],
    with_all: Sequence[Message],
    count: int,
) -> int:
    """How many updates of the mean size of the ``count`` in ``with_all`` (the merge prompt
    over all of them; ``without``: over none) one merge call can read in ``window`` tokens."""
    fixed = tokens_in(without, meter)
    each = max(1.0, (tokens_in(with_all, meter) - fixed) / max(1, count))
    room = SAFETY * (window - max_tokens) - fixed
    return max(1, int(room / each))
