"""Every shell and Python block of README.md and docs/*.md runs against the scripted server, or
says why not in a ``<!-- doc-test: skip (reason) -->`` comment right before it (see
tests/docs/doc_blocks.py for the marker, tests/docs/doc_session.py for the rule a block runs by).
The flags of every ``combee`` command in a shell block, skipped or not, go through the real parser
first.
``pytest tests/docs/test_docs.py -rs`` lists the skipped blocks with their reasons; the run's last
lines count the blocks executed and skipped."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from combee.sim import SimConfig, serve_in_thread
from tests.docs.doc_blocks import DOC_FILES, DirectiveError, DocBlock, doc_blocks
from tests.docs.doc_commands import check_flags, combee_commands
from tests.docs.doc_session import DocSession, doc_responder

BLOCKS = [block for path in DOC_FILES for block in doc_blocks(path)]


@pytest.fixture(scope="module")
def session_of(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[Path], DocSession]]:
    open_sessions: dict[Path, DocSession] = {}
    with serve_in_thread(doc_responder, SimConfig()) as server:

        def session_of(path: Path) -> DocSession:
            if path not in open_sessions:
                for done in open_sessions.values():  # the previous document's servers end here
                    done.close()
                blocks = [b for b in BLOCKS if b.path == path]
                folder = tmp_path_factory.mktemp(path.stem)
                open_sessions[path] = DocSession(blocks, folder, server.base_url)
            return open_sessions[path]

        try:
            yield session_of
        finally:
            for session in open_sessions.values():
                session.close()


@pytest.mark.parametrize("block", BLOCKS, ids=lambda block: block.name)
def test_doc_block(block: DocBlock, session_of: Callable[[Path], DocSession]) -> None:
    if block.shell:
        for arguments in combee_commands(block.source):
            check_flags(arguments)
    else:
        compile(block.source, block.name, "exec")
    if block.skip is not None:
        pytest.skip(block.skip)
    session = session_of(block.path)
    if block.shell:
        session.run_shell(block)
    else:
        session.run_python(block)


def test_the_docs_name_combee_commands() -> None:
    """The flag check has something to check: the docs' shell blocks hold many commands."""
    commands = [c for b in BLOCKS if b.shell for c in combee_commands(b.source)]
    assert len(commands) > 50
    assert {"train", "learn", "eval-traces", "compare", "serve", "demo"} <= {c[0] for c in commands}


def test_a_stale_flag_fails_the_check() -> None:
    commands = combee_commands("combee train --task formula \\\n  --no-such-flag 3  # a comment")
    assert commands == [["train", "--task", "formula", "--no-such-flag", "3"]]
    with pytest.raises(AssertionError, match="No such option: --no-such-flag"):
        check_flags(commands[0])
    with pytest.raises(AssertionError, match="requires an argument"):
        check_flags(["serve", "rollback", "--store"])


def test_commands_are_read_as_a_shell_reads_them() -> None:
    source = (
        'grid="--task rules --train-limit 16"\n'
        "combee sim-server --port 8000 &\n"
        "/usr/bin/time -v combee compare $grid [--pipeline] --out runs/x && combee report runs/x\n"
        'COMBEE_MODEL=m make demo DEMO_ARGS="--train-limit 8"\n'
    )
    assert combee_commands(source) == [
        ["sim-server", "--port", "8000"],
        ["compare", "--task", "rules", "--train-limit", "16", "--pipeline", "--out", "runs/x"],
        ["report", "runs/x"],
        ["demo", "--train-limit", "8"],
    ]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("<!-- doc-test: skip (no key) -->\n\nprose\n", "no block right after it"),
        ("<!-- doc-test: skip -->\n```bash\ncombee --help\n```\n", "expected 'doc-test: skip"),
        ("<!-- doc-test: skip (x) -->\n```toml\na = 1\n```\n", "not a shell or Python block"),
    ],
)
def test_a_marker_the_collector_cannot_place_is_an_error(
    tmp_path: Path, text: str, error: str
) -> None:
    page = tmp_path / "page.md"
    page.write_text(text)
    with pytest.raises(DirectiveError, match=error):
        doc_blocks(page)


def test_a_marker_carries_its_reason_to_the_block(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- doc-test: skip (a GPU) -->\n```bash\ncombee demo\n```\n\n```python\nx = 1\n```\n"
        "\n<!-- doc-test: skip (a key) -->\n\n```sh\ncombee eval\n```\n"
    )
    skipped, ran, keyed = doc_blocks(page)
    assert (skipped.skip, skipped.line, skipped.source) == ("a GPU", 2, "combee demo\n")
    assert (ran.skip, ran.language, ran.line) == (None, "python", 6)
    assert (keyed.skip, keyed.language, keyed.line) == ("a key", "sh", 12)


def test_a_run_with_marker_names_the_values_a_block_runs_with(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- doc-test: run with --sizes 16 --train-limit 8 (minutes) -->\n"
        "```bash\ncombee retention --sizes 16,36,64 --out x\n"
        'grid="--train-limit 200"\n```\n'
    )
    (block,) = doc_blocks(page)
    assert (block.skip, block.run_with_reason) == (None, "minutes")
    assert block.run_with == (("--sizes", "16"), ("--train-limit", "8"))
    session = DocSession([block], tmp_path, "http://127.0.0.1:9/v1")
    assert session.prepared(block) == (
        'combee retention --sizes 16 --out x\ngrid="--train-limit 8"\n'
    )
    stale = DocSession([block], tmp_path, "http://127.0.0.1:9/v1")
    with pytest.raises(AssertionError, match="the block has no --limit"):
        stale.prepared(replace(block, run_with=(("--limit", "1"),)))
