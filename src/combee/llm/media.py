"""Base64 that encodes a file (an image, a PDF, an archive) rather than a key: told by the file
signature its first bytes decode to, or by the ``;base64,`` of a data URI before it."""

from __future__ import annotations

import base64
import binascii

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


def encodes_a_file(word: str, before: str) -> bool:
    """Whether ``word`` (base64) holds a file: ``before`` (the text just before it) ends a data
    URI's header, or its first bytes are a known file signature."""
    if before.endswith(";base64,"):
        return True
    head = word[:16].replace("-", "+").replace("_", "/")
    try:
        data = base64.b64decode(head[: len(head) // 4 * 4], validate=True)
    except (binascii.Error, ValueError):
        return False
    return data.startswith(_SIGNATURES) or data[4:8] == b"ftyp"  # MP4, MOV, HEIC
