"""Prompt states of the embedded model, looked up by longest shared token prefix, so prompts
that share a long prefix (the playbook) are not read again."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any


class PromptStateCache:
    """The last few llama.cpp states, looked up by longest shared token prefix (least recently
    used evicted first). Plugs into ``Llama.set_cache``.
    """

    def __init__(self, max_states: int) -> None:
        self.max_states = max_states
        self.hits = 0
        self._states: OrderedDict[tuple[int, ...], Any] = OrderedDict()

    def __len__(self) -> int:
        return len(self._states)

    def __bool__(self) -> bool:
        return True  # llama-cpp-python tests ``if self.cache``; an empty cache is still on

    def __getitem__(self, tokens: Sequence[int]) -> Any:
        best_key: tuple[int, ...] | None = None
        best_length = 0
        for key in self._states:
            length = _shared_prefix_length(key, tokens)
            if length > best_length:
                best_key, best_length = key, length
        if best_key is None:
            raise KeyError("no cached state shares a prefix with this prompt")
        self._states.move_to_end(best_key)
        self.hits += 1
        return self._states[best_key]

    def __contains__(self, tokens: Sequence[int]) -> bool:
        return any(_shared_prefix_length(key, tokens) > 0 for key in self._states)

    def __setitem__(self, tokens: Sequence[int], state: Any) -> None:
        # A restored state always re-decodes at least one token before sampling, so its saved
        # logits are never read: keep one row instead of n_batch x vocabulary floats (~300 MB).
        state.scores = state.scores[-1:].copy()
        key = tuple(tokens)
        self._states.pop(key, None)
        self._states[key] = state
        while len(self._states) > self.max_states:
            self._states.popitem(last=False)


def _shared_prefix_length(left: Sequence[int], right: Sequence[int]) -> int:
    length = 0
    for a, b in zip(left, right, strict=False):
        if a != b:
            break
        length += 1
    return length
