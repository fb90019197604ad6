"""Stopping a running llama.cpp call: an abort flag that llama.cpp reads at every step."""

from __future__ import annotations

import ctypes
import os
from typing import Any


class AbortFlag:
    """One byte llama.cpp reads at every step of a call (nonzero: stop), with no Python code in
    the loop: the callback is the C library's ``strlen`` on a two-byte buffer, so it returns 0
    until :meth:`set` writes a character there. (A Python callback would need the interpreter
    lock at every step of the computation.) Where ``strlen`` is not found, a Python callback
    reads the same byte."""

    def __init__(self, llama_cpp: Any) -> None:
        self.buffer = ctypes.create_string_buffer(2)
        self.callback: Any = _c_strlen_callback(llama_cpp)
        if self.callback is None:
            buffer = self.buffer
            self.callback = llama_cpp.ggml_abort_callback(lambda _data: buffer.raw[0] != 0)

    def install(self, llama_cpp: Any, llama: Any) -> None:
        llama_cpp.llama_set_abort_callback(
            llama.ctx, self.callback, ctypes.cast(self.buffer, ctypes.c_void_p)
        )

    def set(self) -> None:
        self.buffer[0] = b"x"

    def clear(self) -> None:
        self.buffer[0] = b"\0"

    def __bool__(self) -> bool:
        return self.buffer.raw[0] != 0


def _c_strlen_callback(llama_cpp: Any) -> Any:
    try:
        libc = ctypes.CDLL(None) if os.name != "nt" else ctypes.cdll.msvcrt
        address = ctypes.cast(libc.strlen, ctypes.c_void_p).value
    except (OSError, AttributeError):
        return None
    return None if address is None else llama_cpp.ggml_abort_callback(address)
