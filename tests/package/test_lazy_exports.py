"""Packages whose public names are imported on first use still offer every name in their
``__all__``, the same object as the defining module's, and keep a function where a module of
the same name exists (``combee.llm.connect``, ``combee.report.compare``)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

LAZY_PACKAGES = (
    "combee.llm",
    "combee.tasks",
    "combee.tasks.traces",
    "combee.tasks.agentdojo",
    "combee.strategies",
    "combee.methods.ace",
    "combee.runs",
    "combee.report",
)


@pytest.mark.parametrize("name", LAZY_PACKAGES)
def test_every_public_name_is_there_and_is_the_defining_modules(name: str) -> None:
    package = importlib.import_module(name)
    names = package.__all__
    assert names and set(names) <= set(dir(package))
    for public in names:
        value = getattr(package, public)
        module = importlib.import_module(package._EXPORTS[public])
        assert value is getattr(module, public), public
    star: dict[str, object] = {}
    exec(f"from {name} import *", star)
    assert set(names) <= set(star)
    with pytest.raises(AttributeError, match="no_such_name"):
        package.no_such_name  # noqa: B018 - the access is the test


def test_importing_a_module_named_like_a_function_keeps_the_function() -> None:
    code = (
        "import combee.llm.connect, combee.report.compare, combee\n"
        "print(type(combee.llm.connect).__name__, type(combee.report.compare).__name__)\n"
        "import combee.llm\n"
        "print(combee.llm.connect.__module__, combee.llm.Endpoint.__module__)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["function", "function"] + ["combee.llm.connect"] * 2
