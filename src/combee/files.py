"""Input files read with a bound: a device (``/dev/zero``) or a file larger than any input the
tool reads is refused at once, before memory fills, with an ``OSError`` whose ``strerror`` says
why (callers already name the file and the setting when a read fails). Output files written
whole or not at all: a full disk leaves no half-written file and no ``.partial`` behind."""

from __future__ import annotations

import contextlib
import errno
import gzip
import os
import stat
import zlib
from pathlib import Path
from typing import BinaryIO

from combee.errors import ConfigError

INPUT_LIMIT = 1 << 30
"""The most bytes one input file (a dataset, a playbook, a trace file; unpacked) may hold."""


def _too_large(limit: int) -> OSError:
    return OSError(
        errno.EFBIG, f"holds more than {limit:,} bytes, the most one input file may hold; split it"
    )


_NOT_A_FILE = (
    (stat.S_ISCHR, "is a device, not a file"),
    (stat.S_ISBLK, "is a device, not a file"),
    (stat.S_ISFIFO, "is a named pipe, not a file: save what it carries to a file and give that"),
    (stat.S_ISSOCK, "is a socket, not a file"),
)


def _open_file(path: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened for reading when it is a regular file. Opened without waiting (a named
    pipe with no writer would block the open for ever), then refused when it is not a file."""
    handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    mode = os.fstat(handle).st_mode
    refusal = next((why for kind, why in _NOT_A_FILE if kind(mode)), None)
    if stat.S_ISDIR(mode):
        os.close(handle)
        raise IsADirectoryError(errno.EISDIR, "is a directory", os.fspath(path))
    if refusal is not None:
        os.close(handle)
        raise OSError(errno.EINVAL, refusal)
    return os.fdopen(handle, "rb")


def read_bytes(path: str | os.PathLike[str], *, limit: int = INPUT_LIMIT) -> bytes:
    """The file's bytes (gunzipped when its name ends in ``.gz``), at most ``limit`` of them;
    a device, a named pipe or a socket is refused before a byte is read."""
    with _open_file(path) as handle:
        if os.fstat(handle.fileno()).st_size > limit:
            raise _too_large(limit)
        if Path(path).suffix == ".gz":
            try:
                with gzip.GzipFile(fileobj=handle) as unpacked:
                    data = unpacked.read(limit + 1)
            except (EOFError, zlib.error, gzip.BadGzipFile) as error:
                raise OSError(errno.EINVAL, f"is not a whole gzip file ({error})") from None
        else:
            data = handle.read(limit + 1)
    if len(data) > limit:
        raise _too_large(limit)
    return data


_UTF16_MARKS = (b"\xff\xfe", b"\xfe\xff")


def read_text(path: str | os.PathLike[str], *, limit: int = INPUT_LIMIT) -> str:
    """The file as UTF-8 text, a byte order mark left out (see :func:`read_bytes`);
    ``UnicodeDecodeError`` when it is not UTF-8 (its reason says so when it is UTF-16)."""
    raw = read_bytes(path, limit=limit)
    if raw.startswith(_UTF16_MARKS):
        raise UnicodeDecodeError("utf-8", raw[:2], 0, 2, "it is UTF-16; save it as UTF-8")
    return raw.decode("utf-8-sig")


def read_setting_file(path: str | os.PathLike[str], setting: str) -> str:
    """The UTF-8 text of the file a setting names; a ConfigError naming the file, the setting
    and the cause when it cannot be read."""
    try:
        return read_text(path)
    except OSError as error:
        raise ConfigError(f"{path}: cannot be read: {error.strerror}", setting=setting) from None
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"{path}: is not UTF-8 text (byte {error.start}); give a text file", setting=setting
        ) from None


def write_whole(path: str | os.PathLike[str], text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) atomically: a reader sees the old file or the new
    one; when the write fails (``OSError``) the old file stays and nothing else is left."""
    target = Path(path)
    partial = target.with_name(target.name + ".partial")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, target)
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        raise


def append_whole(path: str | os.PathLike[str], text: str) -> None:
    """Append ``text`` (UTF-8) to ``path``, all of it or none: when a write fails (``OSError``,
    a full disk after part of it) the file is cut back to what it held before."""
    data = memoryview(text.encode("utf-8"))
    handle = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        size = os.fstat(handle).st_size
        try:
            while data:
                data = data[os.write(handle, data) :]
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(handle, size)
            raise
    finally:
        os.close(handle)


_CAUSES = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EFBIG: "past the largest file this process may write: ulimit -f",
    errno.EROFS: "a read-only file system",
    errno.EACCES: "no permission to write there",
}


class UnwritableRunDir(ConfigError):
    """A file of the run directory cannot be written (a full disk, a read-only folder); the
    file is left as it was. ``kept`` says what the folder holds."""

    def __init__(
        self, path: Path, error: OSError, kept: str = "what was written before it stays"
    ) -> None:
        self.path = path
        self.error = error
        reason = error.strerror or str(error)
        why = _CAUSES.get(error.errno or 0, "a full disk or a read-only folder?")
        super().__init__(f"cannot write {path}: {reason} ({why}); {kept}", setting="run_dir")

    def keeping(self, kept: str) -> UnwritableRunDir:
        """The same failure, saying what the folder keeps."""
        return UnwritableRunDir(self.path, self.error, kept)
