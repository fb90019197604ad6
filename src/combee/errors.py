"""Errors a user can cause. Each carries one message that says what to do about it.

The CLI prints ``str(error)`` for any :class:`CombeeError` and exits non-zero; anything else
is a bug.
"""

from __future__ import annotations


class CombeeError(Exception):
    """Base class for every error a user can cause (bad config, data, endpoint, key)."""


class ConfigError(CombeeError):
    """A setting is missing or invalid; the message names the setting."""


class DatasetError(CombeeError):
    """A dataset file or line is malformed; the message names the file and line."""

    def __init__(self, path: str, line: int | None, problem: str) -> None:
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {problem}")
        self.path = path
        self.line = line
        self.problem = problem


class EndpointError(CombeeError):
    """The LLM endpoint cannot be used at all (unreachable, rejected key, unknown model)."""


class LLMCallError(CombeeError):
    """One LLM call failed after all retries; the caller records it and moves on."""


class InvalidReplyError(LLMCallError):
    """The model's reply stayed invalid for the role's schema after the one re-ask."""
