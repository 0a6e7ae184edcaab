"""One user's memories as numpy arrays and BM25 postings: written, read again, ranked. Plumbing for 05_vector_memory, section 'Extraction → storage → retrieval → injection'.

`MemoryIndex` keeps one `UserRows` per recently searched user (helpers.retrieval.users) and ranks over it; you
can skip this file on a first read. The columns are helpers.retrieval.columns; this file writes a memory
document into them (`upsert`), takes one out that was deleted elsewhere (`erase`), keeps each row's BM25
document, and scores rows for search.

BM25 reads a turn together with the words its neighbouring turns add: a turn of a conversation is a reply, and
the words of what it answers (or of what answers it) are often the question's ("The opening night is tomorrow"
→ "I want to savor all the good vibes"). Each turn memory is indexed as its own words plus the new words of the
turns just before and after it in the same conversation (`NEIGHBOUR_WORDS`); the embedding stays the turn's own.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
from bson import ObjectId

from helpers.retrieval.bm25 import bm25_scores, bm25_tokens
from helpers.retrieval.coarse import CoarseIndex, due, train
from helpers.retrieval.columns import NONE, RowColumns, to_us
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
    "rev": 1,
}


def _plain_source(source: object) -> bool:
    """A source the columns hold exactly: {"session_id": str | None, "seq": int | None}."""
    if not isinstance(source, dict) or set(source) != {"session_id", "seq"}:
        return False
    session, seq = source["session_id"], source["seq"]
    return (session is None or isinstance(session, str)) and (
        seq is None or (isinstance(seq, int) and not isinstance(seq, bool) and NONE < seq < 2**63)
    )


class UserRows(RowColumns):
    """One user's memories: columns, embedding matrix, BM25 postings; `upsert` a document, `erase` a row."""

    def __init__(self, dim: int):
        super().__init__(dim)
        self._words: dict[int, tuple[Counter, Counter]] = {}  # row → (own words, words said), computed on use
        self.coarse: CoarseIndex | None = None  # lists over the embeddings of a large user (retrieval.coarse)

    def upsert(self, doc: dict) -> int:
        """Add or replace the row of `doc` (a memory document as stored)."""
        _id = doc["_id"]
        row = self.row_of(_id)
        if row is None:
            if self.n == self.capacity:
                self.grow(max(64, self.capacity * 2))
            row, self.n = self.n, self.n + 1
            if isinstance(_id, ObjectId):
                self.ids[row] = _id.binary
                self.row_map()[_id.binary] = row
            else:
                self.odd["id"][row] = _id
                self.row_map()[("odd", _id)] = row
        self.erased.discard(row)
        vector = decode_vector(doc.get("embedding"))
        if vector.shape != (self.dim,):
            self.wrong_dim += 1  # embedded by another model: lexical only
            vector = np.zeros(self.dim, dtype=np.float32)
        created, updated = as_utc(doc.get("created_at")), as_utc(doc.get("updated_at"))
        expires = as_utc(doc.get("expires_at"))
        active = bool(doc.get("active", doc.get("superseded_by") is None))
        self.set_text(row, doc.get("text", ""))
        self._set_hash(row, doc.get("content_hash", ""))
        self._place(row, doc.get("kind", "fact"), doc.get("source"))
        self.created_us[row], self.updated_us[row] = to_us(created), to_us(updated or created)
        self.seen[row] = int(doc.get("seen_count") or 1)
        self.rev[row] = int(doc.get("rev") or 0)
        self.emb[row] = vector
        if self.coarse is not None and row < len(self.coarse.assign):
            self.coarse.dirty.add(row)  # its list is chosen again before the next search
        self.active[row] = active
        self.updated_s[row] = (updated or created).timestamp() if (updated or created) else 0.0
        self.expires_s[row] = expires.timestamp() if expires else math.inf
        self._words.pop(row, None)
        for each in (row, *self._neighbours(row)):  # re-index the row and its neighbouring turns
            self._document(each)
        speaker = speaker_of(self.text(row)) if active and self.kind(row) == "episode" else None
        self._count_speaker(row, speaker)
        return row

    def erase(self, row: int) -> None:
        """The row's document is gone: nothing of it is kept or found again; its neighbours are re-indexed."""
        near = self._neighbours(row)
        self._count_speaker(row, None)
        self.active[row], self.expires_s[row], self.emb[row] = False, -math.inf, 0.0
        self.set_text(row, "")
        self._set_hash(row, "")
        self._place(row, self.kind(row), None)
        self.erased.add(row)
        self._words.pop(row, None)
        for each in (row, *near):
            self._document(each)

    def _set_hash(self, row: int, digest: object) -> None:
        self.odd["hash"].pop(row, None)
        try:
            packed = digest.encode("ascii")
        except (UnicodeEncodeError, AttributeError):
            packed = None
        if packed is None or len(packed) > 64:
            self.odd["hash"][row], packed = digest, b""
        self.hashes[row] = packed

    def _place(self, row: int, kind: str, source: object) -> None:
        """Set the row's kind and source, and where it sits among the turns (session, seq)."""
        turns = self.turn_map()
        old = self._key(row)
        if old is not None and turns.get(old) == row:
            del turns[old]
        self.odd["kind"].pop(row, None)
        self.odd["source"].pop(row, None)
        if kind not in ("fact", "episode"):
            self.odd["kind"][row] = kind
        self.is_fact[row] = kind == "fact"
        if _plain_source(source):
            session = source["session_id"]
            if session is not None and session not in self.session_of:
                self.session_of[session] = len(self.sessions)
                self.sessions.append(session)
            self.session[row] = -1 if session is None else self.session_of[session]
            self.seq[row] = NONE if source["seq"] is None else source["seq"]
        else:
            self.session[row], self.seq[row] = -2, NONE
            if source is not None:
                self.odd["source"][row] = source
        key = self._key(row)
        if key is not None:
            turns[key] = row

    def _key(self, row: int) -> tuple[int, int] | None:
        if self.is_fact[row] or row in self.odd["kind"]:
            return None
        code, seq = int(self.session[row]), int(self.seq[row])
        return (code, seq) if code >= -1 and seq != NONE else None

    def _count_speaker(self, row: int, speaker: str | None) -> None:
        code = int(self.speaker[row])
        if code >= 0:
            old = self.speakers_seen[code]
            self.speaker_rows[old] -= 1
            if self.speaker_rows[old] <= 0:
                del self.speaker_rows[old]
        if speaker is None:
            self.speaker[row] = -1
            return
        if speaker not in self.speaker_code:
            self.speaker_code[speaker] = len(self.speakers_seen)
            self.speakers_seen.append(speaker)
        self.speaker[row] = self.speaker_code[speaker]
        self.speaker_rows[speaker] += 1

    def _neighbours(self, row: int) -> list[int]:
        key = self._key(row)
        if key is None:
            return []
        turns = self.turn_map()
        near = (turns.get((key[0], key[1] + step)) for step in (-1, 1))
        return [r for r in near if r is not None and self.active[r]]

    def words(self, row: int) -> tuple[Counter, Counter]:
        """The row's own words and, for a turn, those without its speaker label (what it adds to others)."""
        words = self._words.get(row)
        if words is None:
            text = self.text(row)
            own = Counter(bm25_tokens(text)) if self.active[row] else Counter()
            said = own
            if own and self.kind(row) == "episode" and ": " in text:  # a turn's words, not its speaker
                said = own - Counter(bm25_tokens(text.partition(": ")[0]))
            words = self._words[row] = (own, said)
        return words

    def _document(self, row: int) -> None:
        """The row's BM25 document: its own words plus the new words its active neighbouring turns add
        (NEIGHBOUR_WORDS each)."""
        own = self.words(row)[0]
        counts = Counter(own)
        if own and NEIGHBOUR_WORDS:
            for near in self._neighbours(row):
                counts.update({t: NEIGHBOUR_WORDS * c for t, c in self.words(near)[1].items() if t not in own})
        self.postings.set(row, counts)
        self.doc_len[row] = sum(counts.values())

    def nbytes(self) -> int:
        return super().nbytes() + 300 * len(self._words) + (self.coarse.nbytes() if self.coarse else 0)

    def train_coarse(self, min_rows: int | None) -> bool:
        """(Re)train the coarse lists when they are due (helpers.retrieval.coarse); True if trained."""
        live = self.active[: self.n]  # erased rows are inactive too
        if not due(self.coarse, int(live.sum()), min_rows):
            return False
        self.coarse = train(self.emb, live)
        return True

    # -- ranking
    def valid(self, kinds: tuple[str, ...], now_s: float) -> np.ndarray:
        """Rows that may be returned: active, of a wanted kind, not expired."""
        n = self.n
        mask = self.active[:n] & (self.expires_s[:n] > now_s)
        if "fact" not in kinds:
            mask &= ~self.is_fact[:n]
        if "episode" not in kinds:
            mask &= self.is_fact[:n]
        return mask

    def cosine(self, vector: np.ndarray, mask: np.ndarray, *, approximate: bool = False) -> np.ndarray:
        """Cosine of every row to `vector` (in numpy); -inf outside `mask`. `approximate` and coarse lists
        trained: only the rows of the closest lists are scored (exactly), the others get -inf."""
        if approximate and self.coarse is not None:
            rows, scores = self.coarse.probe(vector, self.emb, mask)
            sims = np.full(self.n, -np.inf)
            sims[rows] = scores
            return sims
        sims = cosine_scores(self.emb[: self.n], vector)
        sims[~mask] = -np.inf
        return sims

    def scatter(self, ranked: list[tuple[ObjectId, float]], mask: np.ndarray) -> np.ndarray:
        """Scores ranked elsewhere (e.g. by $vectorSearch) per row; -inf for rows not ranked or outside `mask`."""
        scores = np.full(self.n, -np.inf)
        for _id, score in ranked:
            row = self.row_of(_id)
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
