"""Reads of a `MemoryIndex` besides search: by content hash, by source, by nearest vector; count, list, participants. Taught in 05_vector_memory, section 'Extraction → storage → retrieval → injection'.

`MemoryIndex` (helpers/retrieval/index.py) takes these as a mixin. Fact dedup (helpers.memory.facts) asks for the
same text (`find_hash`) or a near one (`neighbours`); injection reads a hit's neighbouring turns (`episodes_at`).
Each reads the per-user cache under the index's lock, hiding superseded, forgotten and expired memories.
"""

from __future__ import annotations

import time
from datetime import datetime

import numpy as np

from helpers.retrieval.ranking import cosine_scores
from helpers.retrieval.schema import KINDS, Hit, as_utc, check_kinds, check_user_id, utc_now

__all__ = ["MemoryLookups"]


class MemoryLookups:
    """The lookups of `MemoryIndex`. A mixin: it reads the lock and the per-user cache the index sets up."""

    def participants(self, user_id: str) -> list[str]:
        """The named speakers of the user's stored turns ("Caroline", "Melanie"); [] for a User/Assistant chat."""
        with self._lock:
            return (self.cache.peek(uid := check_user_id(user_id)) or self._rows(uid)).participants()

    def find_hash(self, user_id: str, kind: str, digest: str) -> Hit | None:
        """The user's active memory of `kind` with this content hash, if any (newest first)."""
        user_id = check_user_id(user_id)
        with self._lock:
            rows = self._rows(user_id)
            now_s = time.time()
            found = [
                r
                for r in rows.rows_with_hash(digest)
                if rows.kind(r) == kind and rows.active[r] and rows.expires_s[r] > now_s
            ]
            if not found:
                return None
            row = max(found, key=lambda r: rows.updated_s[r])
            return rows.hit(row, 1.0, similarity=1.0)

    def episodes_at(self, user_id: str, keys: set[tuple]) -> dict[tuple, Hit]:
        """The user's active episode memories at these (session_id, seq) sources (a neighbour's turn)."""
        user_id = check_user_id(user_id)
        with self._lock:
            rows = self._rows(user_id)
            found = ((key, rows.turn_row(*key)) for key in keys)  # the cache's (session_id, seq) → turn row
            return {key: rows.hit(row, 0.0) for key, row in found if row is not None and rows.active[row]}

    def neighbours(
        self,
        user_id: str,
        vector: np.ndarray,
        *,
        kinds: tuple[str, ...] = ("fact",),
        min_similarity: float = 0.0,
        limit: int = 10,
        now: datetime | None = None,
    ) -> list[Hit]:
        """The user's active memories most similar to `vector` (exact cosine), most similar first."""
        user_id = check_user_id(user_id)
        now_s = (as_utc(now) or utc_now()).timestamp()
        with self._lock:
            rows = self._rows(user_id)
            if not rows.n:
                return []
            sims = cosine_scores(rows.emb[: rows.n], vector)
            candidates = np.flatnonzero(rows.valid(check_kinds(kinds), now_s) & (sims >= min_similarity))
            order = candidates[np.argsort(-sims[candidates], kind="stable")][:limit]
            return [rows.hit(int(r), float(sims[r]), similarity=float(sims[r])) for r in order]

    def count(self, user_id: str, *, kinds: tuple[str, ...] = ("episode",)) -> int:
        """How many of the user's memories of these kinds are live (what `all` would list), without building them;
        read from the cache as the last search left it (no second refresh per request), loaded if absent."""
        with self._lock:
            rows = self.cache.peek(uid := check_user_id(user_id)) or self._rows(uid)
            return int(rows.valid(check_kinds(kinds), time.time()).sum())

    def all(self, user_id: str, *, kinds: tuple[str, ...] = KINDS, now: datetime | None = None) -> list[Hit]:
        """Every active memory of the user, oldest first (what search can return)."""
        user_id = check_user_id(user_id)
        now_s = (as_utc(now) or utc_now()).timestamp()
        with self._lock:
            rows = self._rows(user_id)
            mask = rows.valid(check_kinds(kinds), now_s)
            order = sorted(
                (r for r in range(rows.n) if mask[r]), key=lambda r: (rows.updated_s[r], str(rows.object_id(r)))
            )
            return [rows.hit(r, 0.0) for r in order]
