"""``combee serve``: the learning gateway (see :mod:`combee.serve.gateway`).

Between any agent and its OpenAI-compatible endpoint: the active playbook goes into each
request, every exchange is stored (:class:`TraceStore`), outcomes come back
(``POST /v1/feedback`` or :func:`feedback`), and new scored traces become the next playbook
version (:func:`learn_round`), checked before it is served, rolled back on demand.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from combee.lazy import lazy_exports

if TYPE_CHECKING:
    from combee.serve.client import feedback
    from combee.serve.learner import ContinuousLearner, RoundResult, learn_round
    from combee.serve.records import Exchange, Feedback, PlaybookVersion
    from combee.serve.running import create_gateway, serve
    from combee.serve.settings import ServeSettings, serve_settings
    from combee.serve.store import TraceStore

_EXPORTS = {
    "feedback": "combee.serve.client",
    "ContinuousLearner": "combee.serve.learner",
    "RoundResult": "combee.serve.learner",
    "learn_round": "combee.serve.learner",
    "Exchange": "combee.serve.records",
    "Feedback": "combee.serve.records",
    "PlaybookVersion": "combee.serve.records",
    "create_gateway": "combee.serve.running",
    "serve": "combee.serve.running",
    "ServeSettings": "combee.serve.settings",
    "serve_settings": "combee.serve.settings",
    "TraceStore": "combee.serve.store",
}

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "ContinuousLearner",
    "Exchange",
    "Feedback",
    "PlaybookVersion",
    "RoundResult",
    "ServeSettings",
    "TraceStore",
    "create_gateway",
    "feedback",
    "learn_round",
    "serve",
    "serve_settings",
]
