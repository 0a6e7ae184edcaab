"""A fast, deterministic stand-in embedder for tests that need vectors but not meaning (tests/ is on pytest's
pythonpath, so any test imports it as `from _embedders import HashEmbedder`)."""

from __future__ import annotations

import hashlib

import numpy as np


class HashEmbedder:
    """A pseudo-random unit vector per distinct text (no meaning at all): equal texts, equal vectors."""

    name = "hash-embedder"
    dim = 384

    def embed(self, texts: list[str]) -> np.ndarray:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:8], "little")
            row = np.random.default_rng(seed).normal(size=self.dim).astype(np.float32)
            rows.append(row / np.linalg.norm(row))
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim)

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]
