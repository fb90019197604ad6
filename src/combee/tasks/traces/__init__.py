"""Learning from recorded agent trajectories: one trace type, importers, a task over traces."""

from typing import TYPE_CHECKING

from combee.lazy import lazy_exports

if TYPE_CHECKING:
    from combee.tasks.traces.formats import (
        FORMATS,
        TraceImport,
        detect_format,
        load_traces,
        read_traces,
    )
    from combee.tasks.traces.model import Outcome, ToolCall, Trace, TraceMessage
    from combee.tasks.traces.task import TraceTask
    from combee.tasks.traces.transcript import Transcript, render_transcript

_EXPORTS = {
    "FORMATS": "combee.tasks.traces.formats",
    "TraceImport": "combee.tasks.traces.formats",
    "detect_format": "combee.tasks.traces.formats",
    "load_traces": "combee.tasks.traces.formats",
    "read_traces": "combee.tasks.traces.formats",
    "Outcome": "combee.tasks.traces.model",
    "ToolCall": "combee.tasks.traces.model",
    "Trace": "combee.tasks.traces.model",
    "TraceMessage": "combee.tasks.traces.model",
    "TraceTask": "combee.tasks.traces.task",
    "Transcript": "combee.tasks.traces.transcript",
    "render_transcript": "combee.tasks.traces.transcript",
}
"""Public name -> its module, imported when first used."""

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "FORMATS",
    "Outcome",
    "ToolCall",
    "Trace",
    "TraceImport",
    "TraceMessage",
    "TraceTask",
    "Transcript",
    "detect_format",
    "load_traces",
    "read_traces",
    "render_transcript",
]
