"""``topk``: the paper's clustering baseline.

Embed the batch's reflections (their rendered text), cluster them into ``K`` groups with
k-means (seeded), and curate one representative per group (the reflection nearest its
centroid) in a single call; no merge. ``K`` is ``min(n, top_k)``, ``top_k`` 8 unless given.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Sequence
from typing import TypeVar

from combee.core.call_counts import CallRange
from combee.core.types import Method, ReduceTrace, Reflection
from combee.embedding.sentences import (
    CLUSTER_PACKAGES,
    EMBED_PACKAGES,
    Embedder,
    default_embedder,
    preload_default_embedder,
    require,
)
from combee.strategies.settings import TopKSettings
from combee.strategies.single_call import curate_or_skip, one_curate_call

C = TypeVar("C")
U = TypeVar("U")

DEFAULT_TOP_K = 8


def representatives(vectors: Sequence[Sequence[float]], k: int, *, seed: int = 0) -> list[int]:
    """The indices (ascending) of one vector per k-means cluster: the one nearest its
    centroid (the lowest index on a tie).

    Fewer than ``k`` come back only when there are fewer distinct vectors than ``k``; with
    ``k >= len(vectors)`` every index comes back.
    """
    import numpy as np

    n = len(vectors)
    if k < 1:
        raise ValueError(f"k must be at least 1 (got {k})")
    if k >= n:
        return list(range(n))
    points = np.asarray(vectors, dtype=np.float64)
    k = min(k, len(np.unique(points, axis=0)))
    cluster = importlib.import_module("sklearn.cluster")
    model = cluster.KMeans(n_clusters=k, n_init=10, random_state=seed).fit(points)
    labels = np.asarray(model.labels_)
    centers = np.asarray(model.cluster_centers_, dtype=np.float64)
    chosen: list[int] = []
    for label in range(k):
        members = np.flatnonzero(labels == label)
        if members.size == 0:
            continue
        distances = np.linalg.norm(points[members] - centers[label], axis=1)
        chosen.append(int(members[int(np.argmin(distances))]))
    return sorted(chosen)


class TopKStrategy:
    """Curate one representative reflection per k-means cluster of their embeddings.

    ``topk`` holds its settings (:class:`TopKSettings`), kept whole as :attr:`settings`.
    ``embedder`` (anything with ``embed(texts) -> list[list[float]]``) defaults to the bundled
    ``all-MiniLM-L6-v2``, loaded on first use; missing libraries are a ConfigError naming the
    ``embed`` extra, raised here, before any work is done.
    """

    name = "topk"

    def __init__(
        self,
        topk: TopKSettings = TopKSettings(),
        *,
        seed: int = 0,
        embedder: Embedder | None = None,
    ) -> None:
        require(CLUSTER_PACKAGES, strategy=self.name)
        if embedder is None:
            require(EMBED_PACKAGES, strategy=self.name)
            preload_default_embedder()  # ready by the first reduce
        self.settings = topk
        self.seed = seed
        self._embedder = embedder

    @property
    def top_k(self) -> int:
        """The clusters a batch is cut into (at most)."""
        return DEFAULT_TOP_K if self.settings.top_k is None else self.settings.top_k

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = default_embedder()
        return self._embedder

    def batch_size(self, requested: int) -> int:
        return requested

    def reduce_calls(self, n: int) -> dict[str, CallRange]:
        return one_curate_call(n)

    def pick(self, reflections: Sequence[Reflection]) -> list[int]:
        """The indices of the representatives this strategy curates (blocking: it embeds)."""
        k = min(len(reflections), self.top_k)
        if k >= len(reflections):
            return list(range(len(reflections)))
        vectors = self.embedder.embed([r.render() for r in reflections])
        if len(vectors) != len(reflections):
            raise ValueError(
                f"the embedder returned {len(vectors)} vectors for {len(reflections)} texts"
            )
        return representatives(vectors, k, seed=self.seed)

    async def reduce(
        self, method: Method[C, U], context: C, reflections: Sequence[Reflection]
    ) -> ReduceTrace[U]:
        trace: ReduceTrace[U] = ReduceTrace()
        if not reflections:
            return trace
        chosen = await asyncio.to_thread(self.pick, reflections)
        trace.levels.append([chosen])
        trace.update = await curate_or_skip(method, context, [reflections[i] for i in chosen])
        return trace
