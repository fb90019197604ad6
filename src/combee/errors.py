"""Errors a user can cause. Each carries one message that says what to do about it.

Library errors name the Python parameter they concern (``batch_size``), never a command-line
flag; they carry typed fields so a caller can act on them. A message marks each parameter it
names (:func:`parameter`, and ``setting`` of a :class:`ConfigError`), so that the CLI shows
its flag instead (:meth:`CombeeError.render`). Anything that is not a :class:`CombeeError` is
a bug.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

_MARK = "\x1f"
"""Around a parameter a message names (a control character no message text holds)."""
_VALUE = "\x1e"
"""Between that parameter's name and the value the message assigns it."""


class Placeholder(str):
    """A value the user chooses, written as its name: ``PATH`` in ``data=PATH``."""

    def __repr__(self) -> str:
        return str(self)


def parameter(name: str, *value: object) -> str:
    """``name`` marked in a message as the parameter it is; with a value, the assignment
    ``name=value``. ``str(error)`` writes it as Python does (``overwrite=True``),
    :meth:`CombeeError.render` as a front end names its options (``--overwrite``)."""
    if not value:
        return f"{_MARK}{name}{_MARK}"
    return f"{_MARK}{name}{_VALUE}{value[0]!r}{_MARK}"


OVERWRITE = parameter("overwrite", True)
"""What a message tells the user to pass to write over a folder's run."""


def _value(text: str) -> object:
    try:
        found: object = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return Placeholder(text)
    return found


class CombeeError(Exception):
    """Base class for every error a user can cause (bad config, data, endpoint, key)."""

    def __str__(self) -> str:
        return self.render(str)

    def render(
        self,
        name: Callable[[str], str],
        assignment: Callable[[str, object], str] | None = None,
    ) -> str:
        """The message with each parameter it marks shown as ``name(parameter)`` and each
        assignment as ``assignment(parameter, value)`` (by default ``name(parameter)=value``,
        the value as Python writes it)."""
        pieces = super().__str__().split(_MARK)
        if len(pieces) % 2 == 0:  # an unpaired mark is not one of ours
            return _MARK.join(pieces)
        for index in range(1, len(pieces), 2):
            named, assigns, text = pieces[index].partition(_VALUE)
            if not assigns:
                pieces[index] = name(named)
            elif assignment is None:
                pieces[index] = f"{name(named)}={_value(text)!r}"
            else:
                pieces[index] = assignment(named, _value(text))
        return "".join(pieces)


class ConfigError(CombeeError):
    """A setting is missing or invalid.

    With ``setting``, the message reads ``"<setting> <problem>"`` (``batch_size must be at least
    1 (got 0)``); :meth:`render` lets a front end name the setting its own way (``--batch-size``).
    """

    def __init__(self, problem: str, *, setting: str | None = None) -> None:
        self.problem = problem
        self.setting = setting
        super().__init__(f"{parameter(setting)} {problem}" if setting else problem)


class DatasetError(CombeeError):
    """A dataset file or line is malformed; the message names the file and line."""

    def __init__(self, path: str, line: int | None, problem: str) -> None:
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {problem}")
        self.path = path
        self.line = line
        self.problem = problem


class EndpointError(CombeeError):
    """The LLM endpoint cannot be used at all (unreachable, rejected key, unknown model).

    ``setting`` names the parameter most likely to fix it (``base_url``, ``model``,
    ``api_key_env``, ``json_mode``) when there is one.
    """

    def __init__(self, message: str, *, setting: str | None = None) -> None:
        super().__init__(message)
        self.setting = setting


class RunFailedError(CombeeError):
    """The run stopped because too many of its calls failed (an outage, a model that cannot
    answer): finished iterations stay saved, nothing after them is reported as a result."""


class LLMCallError(CombeeError):
    """One LLM call failed after all retries; the caller records it and moves on.

    ``role`` is the calling role (generator, reflector, curator, ...), ``kind`` the failure
    kind (``429``, ``5xx``, ``timeout``, ``connection``, ``bad_body``, ``invalid_reply``, ...),
    ``status`` the HTTP status when there was one and ``attempts`` how many attempts were made.
    """

    def __init__(
        self,
        message: str,
        *,
        role: str | None = None,
        kind: str | None = None,
        status: int | None = None,
        attempts: int | None = None,
    ) -> None:
        super().__init__(message)
        self.role = role
        self.kind = kind
        self.status = status
        self.attempts = attempts


class InvalidReplyError(LLMCallError):
    """The model's reply stayed invalid for the role's schema after the one re-ask."""


class CutOffReplyError(InvalidReplyError):
    """The model's reply stopped at ``max_tokens`` (``finish_reason: length``) before its JSON
    was complete. It is not re-asked: the same limit would cut the answer again."""

    def __init__(self, message: str, *, role: str | None = None, max_tokens: int) -> None:
        super().__init__(message, role=role, kind="cut_off", attempts=1)
        self.max_tokens = max_tokens


class SampleError(CombeeError):
    """One sample could not be run (an agent that raised or returned no episode); the run
    records it as that sample's failure and goes on."""

    kind: str | None = None
    """The failure's kind as the run records it (``SampleFailure.kind``); None: unclassified."""


class InvalidStepError(SampleError):
    """An agent's step never gave a valid action (a reply that still does not match its schema
    after the re-ask, tool-call arguments that are not a JSON object): the episode is that
    sample's failure, counted as an invalid step
    (``invalid_steps``), never reflected on as a genuine episode."""

    kind = "invalid_step"
