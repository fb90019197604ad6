"""The shell and Python blocks of README.md and docs/*.md, read with Sybil's Markdown lexers.

A block that cannot run in the test suite says so right before it, in a comment the rendered page
hides and ``grep doc-test:`` finds::

    <!-- doc-test: skip (a hosted API key) -->

The reason is printed in the test report. A skipped shell block still has every flag of its
``combee`` commands checked against the real command line parser. A block that runs, but would
take minutes even on the scripted server, names the smaller values it runs with here, and why::

    <!-- doc-test: run with --sizes 16 (three sizes take minutes) -->

(each flag given keeps its place in every command that has it; flags a command lacks are not added).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from sybil import Document, Region
from sybil.parsers.markdown.lexers import DirectiveInHTMLCommentLexer, FencedCodeBlockLexer

from tests.paths import ROOT

DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = frozenset({"bash", "sh", "shell", "console"})
PYTHON = frozenset({"python", "py"})
_ADJACENT = re.compile(r"\s*(--+>)?\s*")
"""What lies between a directive and its block: the comment's end, blank lines at most."""
_SKIP = re.compile(r"skip \((?P<reason>[^()]+)\)$")
_RUN_WITH = re.compile(r"run with (?P<flags>(?:--[\w-]+ [^\s()]+ ?)+)\((?P<reason>[^()]+)\)$")


@dataclass(frozen=True)
class DocBlock:
    path: Path
    line: int
    """The line of the opening fence."""
    language: str
    source: str
    skip: str | None
    """Why the block does not run here (None: it runs)."""
    run_with: tuple[tuple[str, str], ...] = ()
    """Flags whose values are replaced when the block runs (``run with``), and why."""
    run_with_reason: str | None = None

    @property
    def name(self) -> str:
        return f"{shown(self.path)}:{self.line}"

    @property
    def shell(self) -> bool:
        return self.language in SHELL


class DirectiveError(ValueError):
    """A ``doc-test:`` comment this collector does not understand, or one with no block after it."""


def doc_blocks(path: Path) -> list[DocBlock]:
    """The document's shell and Python blocks in order, each with its skip reason if any."""
    document = Document(path.read_text(encoding="utf-8"), str(path))
    fences = FencedCodeBlockLexer(language=r"[\w-]+")(document)
    directives = list(DirectiveInHTMLCommentLexer("doc-test", arguments=r".+?")(document))
    blocks = []
    for region in fences:
        language = str(region.lexemes["language"])
        before = [d for d in directives if _adjacent(document, d, region)]
        for directive in before:
            directives.remove(directive)
        if language not in SHELL | PYTHON:
            if before:
                raise DirectiveError(f"{_where(document, before[0].start)}: not a shell or "
                                     f"Python block after it")  # fmt: skip
            continue
        line = document.text.count("\n", 0, region.start) + 1
        source = str(region.lexemes["source"])
        block = DocBlock(path, line, language, source, skip=None)
        blocks.append(_directed(document, before[0], block) if before else block)
    if directives:
        raise DirectiveError(f"{_where(document, directives[0].start)}: no block right after it")
    return blocks


def _adjacent(document: Document, directive: Region, block: Region) -> bool:
    between = document.text[directive.end : block.start]
    return directive.end <= block.start and _ADJACENT.fullmatch(between) is not None


def _directed(document: Document, directive: Region, block: DocBlock) -> DocBlock:
    arguments = str(directive.lexemes["arguments"]).strip()
    skip = _SKIP.match(arguments)
    if skip is not None:
        return replace(block, skip=skip.group("reason").strip())
    run_with = _RUN_WITH.match(arguments)
    if run_with is not None:
        words = run_with.group("flags").split()
        flags = tuple(zip(words[::2], words[1::2], strict=True))
        return replace(block, run_with=flags, run_with_reason=run_with.group("reason").strip())
    raise DirectiveError(
        f"{_where(document, directive.start)}: expected 'doc-test: skip (reason)' or "
        f"'doc-test: run with --flag value (reason)', got {arguments!r}"
    )


def _where(document: Document, position: int) -> str:
    line = document.text.count("\n", 0, position) + 1
    return f"{shown(Path(document.path))}:{line}"


def shown(path: Path) -> Path:
    """A document's path as a report shows it: from the repository's root."""
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
