"""Domains as the Public Suffix List reads them (``tldextract``'s bundled snapshot, offline): a
name and its registrable domain, a two-label file name (``main.py``) left out. Part of the
canonical form of :mod:`combee.llm.canonical`."""

from __future__ import annotations

import functools
import mimetypes
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tldextract import TLDExtract


@functools.cache
def _suffix_list() -> TLDExtract:
    from tldextract import TLDExtract

    # The snapshot of the Public Suffix List that the package ships: no download, no cache.
    return TLDExtract(cache_dir=None, suffix_list_urls=(), include_psl_private_domains=True)


@functools.cache
def _file_types() -> frozenset[str]:
    table = mimetypes.MimeTypes()  # the standard library's own table, not the system's files
    return frozenset(ext.lstrip(".").lower() for types in table.types_map for ext in types)


def domain_keys(host: str) -> tuple[str, ...]:
    """``host`` (lower case) and its registrable domain, if the Public Suffix List reads it as a
    domain; else nothing."""
    if len(host) > 254 or "." not in host:  # no domain is longer (and none is kept in the cache)
        return ()
    return _domain_keys(host.strip(".").lower())


@functools.lru_cache(maxsize=65536)
def _domain_keys(host: str) -> tuple[str, ...]:
    if not host or len(host) > 253 or "." not in host:
        return ()
    labels = host.split(".")
    last = labels[-1]
    if last.isdigit() or len(last) < 2 or any(not label for label in labels):
        return ()
    if any(len(label) > 63 or label[0] == "-" or label[-1] == "-" for label in labels):
        return ()
    parts = _suffix_list()(host)
    if not parts.suffix or not parts.domain:
        return ()
    registrable = f"{parts.domain}.{parts.suffix}"
    return (host,) if registrable == host else (host, registrable)


def bare_domain_keys(name: str) -> tuple[str, ...]:
    """``name``'s domain keys, unless it is a file name (two labels, a known file type)."""
    labels = name.lower().split(".")
    if len(labels) == 2 and labels[1] in _file_types():
        return ()
    return domain_keys(name)
