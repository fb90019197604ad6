"""The ``combee`` command's entry point: Ctrl-C while the command line is still loading ends
quietly, as it does once a command runs."""

from __future__ import annotations

import signal  # built into the interpreter: importing it reads no file
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType


def main() -> None:
    # While the command line loads, Ctrl-C is noted rather than raised: raised, it can land
    # in the import machinery's own callbacks, which print it as an ignored exception and go
    # on loading.
    interrupted: list[int] = []

    def note(signum: int, frame: FrameType | None) -> None:
        interrupted.append(signum)

    previous = signal.signal(signal.SIGINT, note)
    try:
        from combee.cli.main import app
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        if interrupted:
            raise KeyboardInterrupt
        app()
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        raise SystemExit(130) from None
