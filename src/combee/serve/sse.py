"""Server-sent events as they arrive: bytes cut into whole events (at blank lines), each passed
on exactly as the upstream wrote it, and the ``data:`` payload of one."""

from __future__ import annotations


class EventCutter:
    """Holds the bytes of an unfinished event until its blank line arrives."""

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        """The events completed by ``chunk``, each with its terminating blank line."""
        data = self._pending + chunk
        end = max(data.rfind(b"\n\n"), data.rfind(b"\r\n\r\n"))
        if end < 0:
            self._pending = data
            return []
        cut = end + (4 if data[end : end + 4] == b"\r\n\r\n" else 2)
        ready, self._pending = data[:cut], data[cut:]
        return _events(ready)

    def rest(self) -> bytes:
        """What is left when the stream ends: an event without its blank line, if any."""
        tail, self._pending = self._pending, b""
        return tail


def _events(data: bytes) -> list[bytes]:
    """``data`` (whole events) cut into events, each with its terminating blank line."""
    events = []
    start = 0
    while start < len(data):
        end = data.find(b"\n\n", start)
        crlf = data.find(b"\r\n\r\n", start)
        if crlf != -1 and (end == -1 or crlf < end):
            stop = crlf + 4
        elif end != -1:
            stop = end + 2
        else:
            stop = len(data)
        events.append(data[start:stop])
        start = stop
    return events


def event_data(event: bytes) -> bytes | None:
    """The ``data:`` payload of an event (its lines joined), or None."""
    lines = [line[5:].lstrip(b" ") for line in event.splitlines() if line.startswith(b"data:")]
    return b"\n".join(lines).strip() if lines else None
