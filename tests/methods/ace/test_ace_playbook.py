from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from combee.methods.ace.playbook import (
    DEFAULT_SECTIONS,
    Bullet,
    Playbook,
    Section,
    count_tokens,
    normalize_content,
)

contents = st.text(min_size=1, max_size=60).map(normalize_content).filter(bool)


@st.composite
def playbooks(draw: st.DrawFn) -> Playbook:
    specs = draw(
        st.lists(
            st.tuples(
                st.sampled_from(DEFAULT_SECTIONS),
                contents,
                st.integers(0, 50),
                st.integers(0, 50),
                st.integers(1, 3),
            ),
            max_size=12,
        )
    )
    bullets = []
    number = 0
    for section, content, helpful, harmful, gap in specs:
        number += gap
        bullets.append(
            Bullet(f"{section.slug}-{number:05d}", section.key, content, helpful, harmful)
        )
    return Playbook(bullets=tuple(bullets), next_id=number + 1)


def test_render_format_and_section_order() -> None:
    playbook = Playbook(
        bullets=(
            Bullet("mis-00002", "mistakes", "Do not mix percent and fraction.", 0, 3),
            Bullet("str-00001", "strategies", "Read the units first.", 2, 1),
        ),
        next_id=3,
    )
    text = playbook.render()
    lines = text.splitlines()
    assert lines[0] == "## Strategies and rules"
    assert lines[1] == "[str-00001] helpful=2 harmful=1 :: Read the units first."
    mistakes = lines.index("## Common mistakes")
    assert (
        lines[mistakes + 1] == "[mis-00002] helpful=0 harmful=3 :: Do not mix percent and fraction."
    )
    titles = [line[3:] for line in lines if line.startswith("## ")]
    assert titles == [s.title for s in DEFAULT_SECTIONS]


def test_empty_playbook_renders_headers_only() -> None:
    text = Playbook().render()
    assert [line for line in text.splitlines() if line] == [
        f"## {s.title}" for s in DEFAULT_SECTIONS
    ]
    assert Playbook.parse(text) == Playbook()


def test_slugs_are_short_and_unique() -> None:
    slugs = [s.slug for s in DEFAULT_SECTIONS]
    assert len(set(slugs)) == len(slugs)
    assert all(slug.isalpha() and slug.islower() and len(slug) == 3 for slug in slugs)


@given(playbooks())
def test_parse_round_trips_render(playbook: Playbook) -> None:
    parsed = Playbook.parse(playbook.render())
    assert parsed.bullets == playbook.bullets
    assert parsed.render() == playbook.render()
    assert parsed.next_id == max((b.number for b in playbook.bullets), default=0) + 1


@given(playbooks())
def test_dict_round_trip_keeps_next_id(playbook: Playbook) -> None:
    bigger = playbook.with_bullets(playbook.bullets, next_id=playbook.next_id + 7)
    assert Playbook.from_dict(bigger.to_dict()) == bigger


@given(playbooks())
def test_token_count_is_additive_over_lines(playbook: Playbook) -> None:
    text = playbook.render()
    assert playbook.token_count() == sum(count_tokens(line) for line in text.splitlines())


def test_count_tokens_counts_words_and_punctuation() -> None:
    assert count_tokens("") == 0
    assert count_tokens("Net margin = 12.5%") == 7  # Net margin = 12 . 5 %
    assert count_tokens("a  b\n\nc") == 3


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        (
            "## Strategies and rules\n[str-00001] helpful=0 harmful=0 :: ok\nnot a bullet",
            3,
            "not a",
        ),
        ("[str-00001] helpful=0 harmful=0 :: orphan", 1, "bullet before any section"),
        ("## Strategies and rules\n\n## Nonsense", 3, "unknown section"),
        (
            "## Other\n[oth-00001] helpful=0 harmful=0 :: a\n[oth-00001] helpful=0 harmful=0 :: b",
            3,
            "duplicate bullet id",
        ),
        ("## Other\n[oth-0001] helpful=0 harmful=0 :: short id", 2, "not a"),
        ("## Other\n[oth-00001] helpful=-1 harmful=0 :: negative", 2, "not a"),
        ("## Other\n[oth-00001] helpful=0 harmful=0 ::   ", 2, "not a"),
    ],
)
def test_parse_rejects_malformed_lines_with_line_number(text: str, line: int, problem: str) -> None:
    with pytest.raises(ValueError, match=f"line {line}: {problem}"):
        Playbook.parse(text)


def test_lookup_and_sections() -> None:
    bullet = Bullet("fml-00004", "formulas", "ROI = gain / cost.", 1, 0)
    playbook = Playbook(bullets=(bullet,), next_id=5)
    assert playbook.get("fml-00004") == bullet
    assert playbook.get("fml-00005") is None
    assert "fml-00004" in playbook and "x" not in playbook
    assert len(playbook) == 1 and playbook.bullet_ids == ["fml-00004"]
    assert playbook.in_section("formulas") == [bullet]
    for name in ("formulas", "Formulas and computation", "FML", "formulas & computation"):
        found = playbook.section(name)
        assert found is not None and found.key == "formulas"
    assert playbook.section("nowhere") is None


def test_with_counts_adds_and_ignores_unknown_ids() -> None:
    playbook = Playbook(bullets=(Bullet("str-00001", "strategies", "x", 1, 1),), next_id=2)
    counted = playbook.with_counts({"str-00001": 2, "zzz-00009": 5}, {"str-00001": 1})
    assert counted.get("str-00001") == Bullet("str-00001", "strategies", "x", 3, 2)
    assert playbook.get("str-00001") == Bullet("str-00001", "strategies", "x", 1, 1)


@pytest.mark.parametrize(
    ("bullets", "next_id", "problem"),
    [
        (
            (Bullet("str-00001", "strategies", "a"), Bullet("str-00001", "strategies", "b")),
            2,
            "dup",
        ),
        ((Bullet("str-00001", "nowhere", "a"),), 2, "unknown section"),
        ((Bullet("str-1", "strategies", "a"),), 2, "5 digits"),
        ((Bullet("str-00001", "strategies", "two\nlines"),), 2, "one non-empty line"),
        ((Bullet("str-00001", "strategies", "a", -1),), 2, "negative"),
        ((Bullet("str-00003", "strategies", "a"),), 3, "next_id"),
    ],
)
def test_invalid_playbooks_are_refused(
    bullets: tuple[Bullet, ...], next_id: int, problem: str
) -> None:
    with pytest.raises(ValueError, match=problem):
        Playbook(bullets=bullets, next_id=next_id)


def test_custom_sections_parse() -> None:
    sections = (Section("rules", "Rules", "rul"), Section("facts", "Facts", "fct"))
    playbook = Playbook(
        bullets=(Bullet("fct-00001", "facts", "Water boils."),), sections=sections, next_id=2
    )
    assert Playbook.parse(playbook.render(), sections) == playbook
    with pytest.raises(ValueError, match="unknown section"):
        Playbook.parse(playbook.render())
