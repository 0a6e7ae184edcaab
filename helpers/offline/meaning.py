"""Plumbing: what the offline reader knows about meaning: MiniLM sentence vectors (the local embedder), cached per
text, and their cosine, rounded so that the reader's decisions stay deterministic. Without the local model every
similarity is 0.0 and the reader works on words alone."""

from __future__ import annotations

import functools
import threading

__all__ = ["cosine", "word_similarity"]

_EMBED_LOCK = threading.Lock()


@functools.lru_cache(maxsize=1)
def _embedder():
    try:
        from helpers.retrieval.embeddings import shared_local

        model = shared_local()
        model.embed(["warm up"])
        return model
    except Exception:  # noqa: BLE001 - no local model: the reader works on words alone
        return None


@functools.lru_cache(maxsize=20000)
def _vector(text: str):
    model = _embedder()
    if model is None:
        return None
    with _EMBED_LOCK:
        return model.embed([text])[0]


def cosine(a: str, b: str) -> float:
    """MiniLM cosine of two sentences (0.0 without the local model), rounded so results stay deterministic."""
    va, vb = _vector(a), _vector(b)
    if va is None or vb is None:
        return 0.0
    return round(float(va @ vb), 3)


@functools.lru_cache(maxsize=50000)
def word_similarity(a: str, b: str) -> float:
    """MiniLM cosine of two single words (0.0 without the local model)."""
    return cosine(a, b)
