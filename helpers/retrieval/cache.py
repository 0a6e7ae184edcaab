"""One user's memories as numpy arrays and a BM25 inverted index. Plumbing for 05_vector_memory, section 'Extraction → storage → retrieval → injection'.

`MemoryIndex` keeps one `UserRows` per recently searched user and refreshes it from the database on
every call; you can skip this file on a first read.

BM25 reads a turn together with the words its neighbouring turns add: a turn of a conversation is a reply, and
the words of what it answers (or of what answers it) are often the question's ("The opening night is tomorrow"
→ "I want to savor all the good vibes"). Each turn memory is indexed as its own words plus the new words of the
turns just before and after it in the same conversation (`NEIGHBOUR_WORDS`); the embedding stays the turn's own.
"""

from __future__ import annotations

import math
from collections import Counter
from datetime import datetime

import numpy as np
from bson import ObjectId

from helpers.retrieval.bm25 import bm25_scores, bm25_tokens
from helpers.retrieval.names import speaker_of
from helpers.retrieval.ranking import cosine_scores, recency_weight, with_recency
from helpers.retrieval.schema import Hit, as_utc, decode_vector

__all__ = ["UserRows", "PROJECTION", "NEIGHBOUR_WORDS"]

# Weight of the new words of a turn's neighbours in its BM25 document (0: the turn alone). Chosen on the LoCoMo
# tune part (conv-26, conv-30, conv-41; vector stage, 2,000 tokens) at c5cdcf2: off 87.6%, the turn before only
# 0.5 / 1.0 88.0% / 87.9%, the turn after only 0.5 88.1%, both sides 0.25 / 0.5 / 1.0 / 1.5 / 2.0 88.0% / 88.3% /
# 88.6% / 88.4% / 88.2%; at 1.0 also 1,000 tokens 81.8% → 83.3%, 4,000 tokens 89.6% → 90.3%. Generated tune
# split: 2,000 and 4,000 tokens unchanged (85.1%, 92.0%), 1,000 tokens 72.4% → 66.7% (its chit-chat shares words
# like "living" with a question about work: a cost on our own generated data, stated plainly).
NEIGHBOUR_WORDS = 1

PROJECTION = {
    "user_id": 1,
    "kind": 1,
    "text": 1,
    "embedding": 1,
    "content_hash": 1,
    "source": 1,
    "created_at": 1,
    "updated_at": 1,
    "seen_count": 1,
    "active": 1,
    "superseded_by": 1,
    "expires_at": 1,
}


class UserRows:
    """One user's memories as arrays: embeddings, flags, dates, and a BM25 inverted index."""

    def __init__(self, dim: int):
        self.dim = dim
        self.n = 0
        self.capacity = 0
        self.ids: list[ObjectId] = []
        self.row_of: dict[ObjectId, int] = {}
        self.texts: list[str] = []
        self.hashes: list[str] = []
        self.by_hash: dict[str, set[int]] = {}
        self.kinds: list[str] = []
        self.sources: list[dict | None] = []
        self.created: list[datetime | None] = []
        self.updated: list[datetime | None] = []
        self.seen: list[int] = []
        self.speakers: list[str | None] = []  # an active turn's named speaker (helpers.retrieval.names)
        self.speaker_rows: Counter = Counter()  # named speaker → active turns of theirs
        self.emb = np.zeros((0, dim), dtype=np.float32)
        self.is_fact = np.zeros(0, dtype=bool)
        self.active = np.zeros(0, dtype=bool)
        self.updated_s = np.zeros(0, dtype=np.float64)
        self.expires_s = np.zeros(0, dtype=np.float64)
        self.doc_len = np.zeros(0, dtype=np.float64)
        self.tf: list[Counter] = []  # the row's BM25 document: its own words + its neighbours' new ones
        self.own: list[Counter] = []  # the row's own words
        self.said: list[Counter] = []  # ... a turn's without its speaker label (what it adds to others)
        self.turn_at: dict[tuple, int] = {}  # (session_id, seq) → row, for turn memories
        self.postings: dict[str, dict[int, int]] = {}
        self.max_updated: datetime | None = None
        self.wrong_dim = 0

    def _grow(self) -> None:
        """Double the arrays' capacity (amortised O(1) appends)."""
        capacity = max(64, self.capacity * 2)

        def grown(array: np.ndarray, fill: float = 0) -> np.ndarray:
            out = np.full((capacity, *array.shape[1:]), fill, dtype=array.dtype)
            out[: self.n] = array[: self.n]
            return out

        self.emb = grown(self.emb)
        self.is_fact, self.active = grown(self.is_fact), grown(self.active)
        self.updated_s, self.expires_s, self.doc_len = grown(self.updated_s), grown(self.expires_s), grown(self.doc_len)
        self.capacity = capacity

    def upsert(self, doc: dict) -> int:
        """Add or replace the row of `doc` (a memory document as stored)."""
        _id = doc["_id"]
        row = self.row_of.get(_id)
        if row is None:
            if self.n == self.capacity:
                self._grow()
            row, self.n = self.n, self.n + 1
            self.row_of[_id] = row
            for column in (
                self.ids,
                self.texts,
                self.hashes,
                self.kinds,
                self.sources,
                self.created,
                self.updated,
                self.seen,
                self.speakers,
            ):
                column.append(None)
            self.tf.append(Counter())
            self.own.append(Counter())
            self.said.append(Counter())
        vector = decode_vector(doc.get("embedding"))
        if vector.shape != (self.dim,):
            self.wrong_dim += 1  # embedded by another model: lexical only
            vector = np.zeros(self.dim, dtype=np.float32)
        created, updated = as_utc(doc.get("created_at")), as_utc(doc.get("updated_at"))
        expires = as_utc(doc.get("expires_at"))
        active = bool(doc.get("active", doc.get("superseded_by") is None))
        old_hash, new_hash = self.hashes[row], doc.get("content_hash", "")
        if old_hash is not None and old_hash != new_hash:
            self.by_hash.get(old_hash, set()).discard(row)
        self.by_hash.setdefault(new_hash, set()).add(row)
        self.ids[row], self.texts[row], self.hashes[row] = _id, doc.get("text", ""), new_hash
        self._place(row, doc.get("kind", "fact"), doc.get("source"))
        self.created[row], self.updated[row] = created, updated or created
        self.seen[row] = int(doc.get("seen_count") or 1)
        self.emb[row] = vector
        self.is_fact[row], self.active[row] = self.kinds[row] == "fact", active
        self.updated_s[row] = (updated or created).timestamp() if (updated or created) else 0.0
        self.expires_s[row] = expires.timestamp() if expires else math.inf
        self._index_terms(row, bm25_tokens(self.texts[row]) if active else [])
        self._count_speaker(row, speaker_of(self.texts[row]) if active and self.kinds[row] == "episode" else None)
        if updated and (self.max_updated is None or updated > self.max_updated):
            self.max_updated = updated
        return row

    def _count_speaker(self, row: int, speaker: str | None) -> None:
        old = self.speakers[row]
        if old is not None:
            self.speaker_rows[old] -= 1
            if self.speaker_rows[old] <= 0:
                del self.speaker_rows[old]
        self.speakers[row] = speaker
        if speaker is not None:
            self.speaker_rows[speaker] += 1

    def participants(self) -> list[str]:
        """The named speakers of this user's active turns ("Caroline", "Melanie"; none for User/Assistant)."""
        return sorted(self.speaker_rows)

    def _key(self, row: int) -> tuple | None:
        source = self.sources[row] or {}
        return (source.get("session_id"), source.get("seq")) if self.kinds[row] == "episode" else None

    def _place(self, row: int, kind: str, source: dict | None) -> None:
        """Set the row's kind and source, and where it sits among the turns (session, seq)."""
        old = self._key(row) if self.kinds[row] is not None else None
        if old is not None and self.turn_at.get(old) == row:
            del self.turn_at[old]
        self.kinds[row], self.sources[row] = kind, source
        key = self._key(row)
        if key is not None and isinstance(key[1], int):
            self.turn_at[key] = row

    def _neighbours(self, row: int) -> list[int]:
        key = self._key(row)
        if key is None or not isinstance(key[1], int):
            return []
        near = (self.turn_at.get((key[0], key[1] + step)) for step in (-1, 1))
        return [r for r in near if r is not None and self.active[r]]

    def _index_terms(self, row: int, tokens: list[str]) -> None:
        """Set the row's own words (`tokens`), then re-index it and its neighbouring turns."""
        self.own[row] = self.said[row] = Counter(tokens)
        if tokens and self.kinds[row] == "episode" and ": " in self.texts[row]:  # a turn's words, not its speaker
            self.said[row] = self.own[row] - Counter(bm25_tokens(self.texts[row].partition(": ")[0]))
        for each in (row, *self._neighbours(row)):
            self._document(each)

    def _document(self, row: int) -> None:
        """Replace the row's entries in the inverted index (term → {row: count}) by its own words plus the new
        words its active neighbouring turns add (NEIGHBOUR_WORDS each)."""
        own = self.own[row]
        for term in self.tf[row]:
            postings = self.postings.get(term)
            if postings is not None:
                postings.pop(row, None)
                if not postings:
                    del self.postings[term]
        counts = Counter(own)
        if own and NEIGHBOUR_WORDS:
            for near in self._neighbours(row):
                counts.update({t: NEIGHBOUR_WORDS * c for t, c in self.said[near].items() if t not in own})
        self.tf[row] = counts
        self.doc_len[row] = sum(counts.values())
        for term, count in counts.items():
            self.postings.setdefault(term, {})[row] = count

    def hit(self, row: int, score: float, similarity: float | None = None, lexical: float | None = None) -> Hit:
        """The row as a `Hit` with the given scores."""
        return Hit(
            str(self.ids[row]),
            self.kinds[row],
            self.texts[row],
            float(score),
            self.created[row],
            self.sources[row],
            self.updated[row],
            similarity,
            lexical,
            self.seen[row],
        )

    def valid(self, kinds: tuple[str, ...], now_s: float) -> np.ndarray:
        """Rows that may be returned: active, of a wanted kind, not expired."""
        n = self.n
        mask = self.active[:n] & (self.expires_s[:n] > now_s)
        if "fact" not in kinds:
            mask &= ~self.is_fact[:n]
        if "episode" not in kinds:
            mask &= self.is_fact[:n]
        return mask

    def cosine(self, vector: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Cosine of every row to `vector` (exact, in numpy); -inf outside `mask`."""
        sims = cosine_scores(self.emb[: self.n], vector)
        sims[~mask] = -np.inf
        return sims

    def scatter(self, ranked: list[tuple[ObjectId, float]], mask: np.ndarray) -> np.ndarray:
        """Scores ranked elsewhere (e.g. by $vectorSearch) per row; -inf for rows not ranked or outside `mask`."""
        scores = np.full(self.n, -np.inf)
        for _id, score in ranked:
            row = self.row_of.get(_id)
            if row is not None and mask[row]:
                scores[row] = score
        return scores

    def bm25(self, query: str, mask: np.ndarray) -> np.ndarray:
        """BM25 score of every row for `query` (0 outside `mask`); document statistics over active rows."""
        scores = bm25_scores(query, self.postings, self.doc_len[: self.n], self.active[: self.n])
        scores[~mask] = 0.0
        return scores

    def best_by_recency(
        self,
        base: dict[int, float],
        now_s: float,
        half_life: float | None,
        k: int,
        sims: np.ndarray | None,
        lexical: np.ndarray | None,
    ) -> list[Hit]:
        """The `k` best of `base` ({row: score}) after the recency weight, as hits (ties: newer, then later row)."""
        rows_at = np.fromiter(base.keys(), dtype=np.int64, count=len(base))
        score = with_recency(
            np.fromiter(base.values(), dtype=np.float64, count=len(base)),
            recency_weight(now_s - self.updated_s[rows_at], half_life),
        )
        order = np.lexsort((-rows_at, -self.updated_s[rows_at], -score))[:k]
        return [
            self.hit(
                int(rows_at[i]),
                float(score[i]),
                None if sims is None or not np.isfinite(sims[rows_at[i]]) else float(sims[rows_at[i]]),
                None if lexical is None else float(lexical[rows_at[i]]),
            )
            for i in (int(i) for i in order)
        ]
