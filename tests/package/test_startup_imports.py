"""``import combee``, ``combee --help`` and ``combee train --help`` import none of the heavy
libraries (HTTP clients, agent environments, trackers, plotting, models) nor the training
machinery: they are imported when a command runs. Each case starts a fresh interpreter; a
failure names each module that crept in and the chain of imports that brought it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = (
    "openai",
    "aiohttp",
    "httpx",
    "jsonschema",
    "agentdojo",
    "mlflow",
    "ray",
    "matplotlib",
    "numpy",
    "torch",
    "sentence_transformers",
    "llama_cpp",
    "gepa",
    "dspy",
    "starlette",
    "uvicorn",
    "combee.bench",
    "combee.api",
    "combee.engine.training",
    "combee.llm.client",
)
"""Modules (and their submodules) that starting up must not import."""

# Runs in the child before the case: a finder that never finds anything, placed first, sees
# every import and writes down, for the first module of each heavy family, which modules and
# combee functions were running at the time (innermost first).
WITNESS = """
import json, sys

HEAVY = {heavy!r}
CHAINS = {{}}


def _family(name):
    for heavy in HEAVY:
        if name == heavy or name.startswith(heavy + "."):
            return heavy
    return None


class _Witness:
    def find_spec(self, name, path=None, target=None):
        family = _family(name)
        if family is not None and family not in CHAINS:
            chain, frame = [name], sys._getframe(1)
            while frame is not None:
                module = frame.f_globals.get("__name__", "?")
                if frame.f_code.co_name == "<module>":
                    chain.append(module)
                elif module.startswith("combee"):
                    chain.append(module + "." + frame.f_code.co_name + "()")
                frame = frame.f_back
            CHAINS[family] = [c for i, c in enumerate(chain) if i == 0 or c != chain[i - 1]]
        return None


sys.meta_path.insert(0, _Witness())
"""

REPORT = """
loaded = {{h: CHAINS.get(h, [h]) for h in HEAVY if any(m == h or m.startswith(h + ".")
                                                       for m in list(sys.modules))}}
print({marker!r} + json.dumps(loaded))
"""

COMMAND = """
sys.argv = ["combee", *{arguments!r}]
from combee.cli.entry import main
try:
    main()
except SystemExit as done:
    assert done.code in (0, None), done.code
"""

MARKER = "LOADED:"

CASES = {
    "import combee": "import combee\n",
    "combee --help": COMMAND.format(arguments=["--help"]),
    "combee train --help": COMMAND.format(arguments=["train", "--help"]),
}


def loaded_after(case: str) -> dict[str, list[str]]:
    """Heavy modules loaded after the code ``case`` ran in a fresh interpreter -> the chain of
    imports that loaded the first of each."""
    code = WITNESS.format(heavy=HEAVY) + case + REPORT.format(marker=MARKER)
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if x.startswith(MARKER))
    found: dict[str, list[str]] = json.loads(line[len(MARKER) :])
    return found


@pytest.mark.parametrize("case", list(CASES))
def test_starting_up_imports_no_heavy_module(case: str) -> None:
    loaded = loaded_after(CASES[case])
    chains = "\n".join(f"  {heavy}: {' <- '.join(chain)}" for heavy, chain in loaded.items())
    assert not loaded, f"{case} imported {', '.join(loaded)}:\n{chains}"


def test_the_witness_sees_a_heavy_import_and_its_chain() -> None:
    """The check above can fail: a case that imports the training machinery is caught, with
    the modules that led there."""
    loaded = loaded_after("import combee.api\n")
    assert "combee.api" in loaded and "openai" in loaded
    assert loaded["combee.api"][0] == "combee.api"
    assert loaded["openai"][0].startswith("openai") and "combee.api" in loaded["openai"]
