"""Arrows point down only: each room of the package imports from rooms below it, never above.

The order is the package's import order (the Layout of the README explains it): the command line
and the users of the front door on top, the front door (``combee.api``) and the run engine below
them, then what a run is made of, down to the ground floor every room may use. Imports made only
for type checkers count too: they are arrows a reader follows all the same.
"""

from __future__ import annotations

import ast
from pathlib import Path

import combee

LAYERS: list[set[str]] = [
    {"cli"},
    {"serve", "bench", "report"},
    {"api"},
    {"engine"},
    {"settings", "runs", "progress", "exec", "sim"},
    {"methods"},
    {"strategies"},
    {"core"},
    {"tasks"},
    {"embedding", "llm"},
    {"plugins", "files", "mlflow_store", "sync"},
    {"declare", "lazy"},
    {"errors"},
]
"""Top to bottom. A room is a subpackage or a module at the package root."""

PACKAGE = Path(combee.__file__).parent
LEVEL = {room: level for level, rooms in enumerate(LAYERS) for room in rooms}


def _room(module: str) -> str:
    """``combee.core.loop`` -> ``core``; ``combee.api`` -> ``api``."""
    return module.split(".")[1]


def _module_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: Path) -> set[str]:
    """The ``combee`` modules a file names in its imports."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            if node.module == "combee":  # from combee import files
                names.update(f"combee.{alias.name}" for alias in node.names)
    return {name for name in names if name.startswith("combee.")}


def _arrows() -> list[tuple[str, str]]:
    """Every (importing module, imported module) pair between two rooms."""
    arrows = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_of(path)
        if module == "combee":
            continue  # the package's own door re-exports from every room, lazily
        for imported in sorted(_imported(path)):
            if _room(imported) != _room(module):
                arrows.append((module, imported))
    return arrows


def test_every_room_has_a_place_in_the_order() -> None:
    rooms = {
        path.stem
        for path in PACKAGE.iterdir()
        if not path.name.startswith(("_", "."))
        and (path.suffix == ".py" or (path / "__init__.py").exists())
    }
    assert rooms == set(LEVEL), "add the new room to LAYERS (and to the Layout of the README)"


def test_arrows_point_down_only() -> None:
    arrows = _arrows()
    assert len(arrows) > 100  # the walk did find the package's imports
    up = [
        f"{module} -> {imported}"
        for module, imported in arrows
        if LEVEL[_room(imported)] <= LEVEL[_room(module)]
    ]
    assert up == []


def test_the_check_sees_an_arrow_up(tmp_path: Path) -> None:
    """A file in ``tasks`` importing the run tracker would be refused."""
    source = tmp_path / "reader.py"
    source.write_text("from combee.runs.tracking import MlflowTracker\n", encoding="utf-8")
    (imported,) = _imported(source)
    assert LEVEL[_room(imported)] < LEVEL["tasks"]
