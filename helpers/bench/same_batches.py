"""Tools: an embedder wrapper for benchmark runs that replay one script many times (helpers.bench.cost_table)."""

from __future__ import annotations

from typing import Any

from helpers.config import Settings
from helpers.retrieval.embeddings import get_embedder

__all__ = ["SameBatches", "same_batches_embedder"]


class SameBatches:
    """An embedder that computes each batch of texts once per process: the vector rows index the same turns
    (the same script, often the same replies), so a batch seen in an earlier run is not embedded again. Only an
    identical batch is reused, so every vector is the one the wrapped embedder computed for that very call."""

    def __init__(self, embedder: Any):
        self.embedder, self.name, self.dim, self._seen = embedder, embedder.name, embedder.dim, {}

    def __getattr__(self, name: str) -> Any:  # e.g. Voyage's embed_query: passed through, not memoised
        return getattr(self.embedder, name)

    def embed(self, texts: list[str]) -> Any:
        key = tuple(texts)
        if key not in self._seen:
            self._seen[key] = self.embedder.embed(list(texts))
        return self._seen[key].copy()

    def embed_one(self, text: str) -> Any:
        return self.embed([text])[0]


_EMBEDDERS: dict = {}


def same_batches_embedder(settings: Settings) -> SameBatches:
    """One batch-memoising embedder per process and underlying embedder (shared by the vector runs)."""
    inner = get_embedder(settings)
    return _EMBEDDERS.setdefault(id(inner), SameBatches(inner))
