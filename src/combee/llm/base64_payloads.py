"""Base64 that encodes a file (an image, a PDF, an archive) or readable text rather than a key:
told by the file signature its first bytes decode to, by the ``;base64,`` of a data URI before
it, or by bytes that are all printable text. A key's bytes are random: decoded, 30 random bytes
are all printable once in 10^13."""

from __future__ import annotations

import base64
import binascii

_PRINTABLE = frozenset(range(32, 127)) | frozenset(b"\t\n\r")
_SIGNATURES = (
    b"\x89PNG",  # PNG
    b"\xff\xd8\xff",  # JPEG
    b"GIF8",  # GIF
    b"RIFF",  # WebP, WAV, AVI
    b"%PDF",  # PDF
    b"PK\x03\x04",  # ZIP, and the office formats built on it
    b"\x1f\x8b",  # gzip
    b"BM",  # bitmap
    b"II*\x00",  # TIFF, little-endian
    b"MM\x00*",  # TIFF, big-endian
    b"OggS",  # Ogg
    b"fLaC",  # FLAC
    b"ID3",  # MP3 with a tag
    b"<svg",  # SVG
    b"<?xml",  # SVG and other XML
)


def encodes_a_payload(word: str, before: str) -> bool:
    """Whether ``word`` (base64) holds a file or text (see the module's description)."""
    return encodes_a_file(word, before) or encodes_text(word)


def encodes_text(word: str) -> bool:
    """Whether ``word`` decodes, as base64, to 12 or more bytes of printable text."""
    data = _decoded(word)
    return len(data) >= 12 and all(byte in _PRINTABLE for byte in data)


def _decoded(word: str) -> bytes:
    text = word.rstrip("=").replace("-", "+").replace("_", "/")
    text = text[: len(text) // 4 * 4]
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return b""


def encodes_a_file(word: str, before: str) -> bool:
    """Whether ``word`` (base64) holds a file: ``before`` (the text just before it) ends a data
    URI's header, or its first bytes are a known file signature."""
    if before.endswith(";base64,"):
        return True
    data = _decoded(word[:16])
    return data.startswith(_SIGNATURES) or data[4:8] == b"ftyp"  # MP4, MOV, HEIC
