"""`MemoryIndex`: per-user memory store and search. Taught in 05_vector_memory, section 'Extraction → storage → retrieval → injection'.

`MemoryIndex.search` always filters by `user_id` and drops superseded, forgotten and expired memories.
Ranking runs in numpy over a per-user in-process cache (exact cosine, BM25, reciprocal-rank fusion);
the cache is refreshed incrementally from an indexed `updated_at` range query on every search, so it
stays correct after inserts and updates by this or any other process. On MongoDB Atlas (or
atlas-local) with a vector index (`create_vector_index`), vector ranking runs in `$vectorSearch`.
"""

from __future__ import annotations

import contextlib
import threading
import time
import warnings
import weakref
from collections import Counter, OrderedDict
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import numpy as np
from bson import ObjectId
from pymongo import ASCENDING, DESCENDING
from pymongo.errors import OperationFailure, PyMongoError

from helpers.config import ConfigError
from helpers.retrieval.atlas import atlas_rank, supports_vector_search, vector_index_ready
from helpers.retrieval.cache import PROJECTION, UserRows
from helpers.retrieval.embeddings import embed_query, get_embedder
from helpers.retrieval.names import SPEAKER_BOOST, boost_speaker, check_boost, named, without_names
from helpers.retrieval.ranking import cosine_scores, fuse, top_k
from helpers.retrieval.schema import (
    KINDS,
    Hit,
    TurnUnit,
    as_utc,
    check_kinds,
    check_source,
    check_user_id,
    content_hash,
    encode_vector,
    episode_text,
    turn_text,
    utc_now,
)

if TYPE_CHECKING:  # pragma: no cover
    from helpers.db.store import Store
    from helpers.retrieval.embeddings import Embedder

__all__ = ["MemoryIndex", "MODES", "TTL_INDEX_NAME", "REFRESH_MARGIN"]

MODES = ("hybrid", "vector", "lexical")
TTL_INDEX_NAME = "memory_ttl"
REFRESH_MARGIN = timedelta(seconds=2)  # re-read docs updated this close to the newest one seen (clock/ordering slack)
_DEFAULT: Any = object()  # "use the index's setting"
_INDEXES_MADE: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()
_INDEXES_LOCK = threading.Lock()


class MemoryIndex:
    """Per-user memory search over the `memories` collection: add episodes, search, forget.

    Thread-safe (one lock). `half_life_days` sets the default recency weight (None: off); `backend` is
    "auto" ($vectorSearch when the server has it and the index is ready, else numpy), "numpy" or "atlas".

    The per-user cache is loaded on a user's first search (about 1 s for 10,000 memories on the local
    server) and then refreshed on every call with one indexed query for documents whose `updated_at` is
    at or after the newest one seen (minus 2 s of slack). Writes through this class update it directly.
    Two things it cannot see: hard deletes made elsewhere and writes from another process that backdate
    `updated_at`; call `invalidate(user_id)` after those.
    """

    def __init__(
        self,
        store: Store,
        embedder: Embedder | None = None,
        *,
        half_life_days: float | None = None,
        backend: str = "auto",
        ttl_seconds: int | None = None,
        max_users: int = 64,
        names_as_filter: bool = True,
        speaker_boost: float = SPEAKER_BOOST,
    ):
        if backend not in ("auto", "numpy", "atlas"):
            raise ConfigError(f"backend must be 'auto', 'numpy' or 'atlas', got {backend!r}")
        self.store, self.embedder = store, (embedder if embedder is not None else get_embedder())
        self.half_life_days, self.backend, self.ttl_seconds, self.max_users = (
            half_life_days,
            backend,
            ttl_seconds,
            max_users,
        )
        # named participants: out of the embedded question, their turns boosted when named (retrieval.names)
        self.names_as_filter, self.speaker_boost = bool(names_as_filter), check_boost(speaker_boost)
        self.stats = Counter()
        self._users: OrderedDict[str, UserRows] = OrderedDict()
        self._lock = threading.RLock()
        self._held: set[str] = set()  # users whose memories only this index writes for now (holding())
        self._ensure_indexes()

    def __repr__(self) -> str:
        return f"MemoryIndex({self.store!r}, embedder={self.embedder.name!r}, backend={self.vector_backend!r})"

    # -- setup
    def _ensure_indexes(self) -> None:
        """Lookup indexes this module's queries need (once per store per process; idempotent)."""
        with _INDEXES_LOCK:
            if _INDEXES_MADE.get(self.store):
                return
        memories = self.store.memories
        memories.create_index(
            [("user_id", ASCENDING), ("kind", ASCENDING), ("content_hash", ASCENDING)], name="user_kind_hash"
        )
        memories.create_index([("user_id", ASCENDING), ("updated_at", DESCENDING)], name="user_updated")
        with _INDEXES_LOCK:
            _INDEXES_MADE[self.store] = True

    def ensure_ttl_index(self, seconds: int | None) -> str:
        """Forget memories not stated again for `seconds`: a TTL index on `expires_at` (idempotent); None stops.

        Each later write (insert, or a fact stated again) sets `expires_at = now + seconds`; memories
        written before keep no expiry. Search hides expired memories at once; the server deletes them
        within its TTL monitor's period (about a minute on MongoDB).
        """
        if seconds is not None and (not isinstance(seconds, int) or isinstance(seconds, bool) or seconds < 1):
            raise ValueError(f"seconds must be a positive int or None, got {seconds!r}")
        try:
            self.store.memories.create_index([("expires_at", ASCENDING)], name=TTL_INDEX_NAME, expireAfterSeconds=0)
        except OperationFailure as err:
            raise ConfigError(
                f"cannot create the TTL index on memories.expires_at ({err}); drop the conflicting "
                f"index or call ensure_ttl_index(None)"
            ) from None
        self.ttl_seconds = seconds
        return TTL_INDEX_NAME

    @property
    def vector_backend(self) -> str:
        """'atlas' when vector ranking runs in $vectorSearch, else 'numpy' (exact cosine in process)."""
        if self.backend in ("numpy", "atlas"):
            return self.backend
        try:
            return "atlas" if vector_index_ready(self.store) else "numpy"
        except PyMongoError:
            return "numpy"

    def describe(self) -> str:
        """One line: embedder and where vector ranking runs."""
        if self.vector_backend == "atlas":
            where = "$vectorSearch (Atlas Vector Search)"
        elif self.backend == "auto" and supports_vector_search(self.store):
            where = "exact cosine in numpy (the server has Atlas Search: create_vector_index(store) to use it)"
        else:
            where = "exact cosine in numpy over a per-user cache"
        return f"memory search: {self.embedder.name} ({self.embedder.dim} dims) · {where} · BM25 in process"

    # -- cache
    def _rows(self, user_id: str) -> UserRows:
        """The user's cached rows, loaded on first use and refreshed from `updated_at` on every call."""
        rows = self._users.get(user_id)
        if rows is None:
            rows = UserRows(self.embedder.dim)
            started = time.perf_counter()
            for doc in self.store.memories.find({"user_id": user_id}, PROJECTION):
                if doc.get("user_id") == user_id:
                    rows.upsert(doc)
            self.stats["full_loads"] += 1
            self.stats["full_load_ms"] += int((time.perf_counter() - started) * 1000)
            self._users[user_id] = rows
            while len(self._users) > self.max_users:
                self._users.popitem(last=False)
        else:
            self._users.move_to_end(user_id)
            if user_id in self._held:
                return rows  # holding(): every write goes through this index, which updates the cache itself
            since = rows.max_updated - REFRESH_MARGIN if rows.max_updated else datetime(1970, 1, 1, tzinfo=timezone.utc)
            for doc in self.store.memories.find({"user_id": user_id, "updated_at": {"$gte": since}}, PROJECTION):
                if doc.get("user_id") == user_id:
                    rows.upsert(doc)
            self.stats["refreshes"] += 1
        if rows.wrong_dim and not self.stats["warned_dim"]:
            self.stats["warned_dim"] += 1
            warnings.warn(
                f"{rows.wrong_dim} memories of user {user_id!r} were embedded with another model than "
                f"{self.embedder.name} ({self.embedder.dim} dims); they are found by words only. Set "
                "EMBEDDER back, or delete and re-add them.",
                RuntimeWarning,
                stacklevel=3,
            )
        return rows

    @contextlib.contextmanager
    def holding(self, user_id: str):
        """For a batch of writes (an import): no per-call refresh of `user_id`'s cached rows (this index's own
        writes keep them current); another process's writes meanwhile are read on leaving."""
        user_id = check_user_id(user_id)
        with self._lock:
            self._held.add(user_id)
        try:
            yield self
        finally:
            with self._lock:
                self._held.discard(user_id)
                self._rows(user_id)  # catch up with anything written elsewhere meanwhile

    def invalidate(self, user_id: str | None = None) -> None:
        """Drop the cache of one user (or all): needed only after deleting memories outside this class."""
        with self._lock:
            if user_id is None:
                self._users.clear()
            else:
                self._users.pop(check_user_id(user_id), None)

    # -- writes (used by helpers.memory.facts too)
    def new_doc(
        self,
        user_id: str,
        kind: str,
        text: str,
        vector: np.ndarray,
        source: dict | None,
        *,
        now: datetime | None = None,
    ) -> dict:
        """A memory document in the schema of helpers.retrieval.schema (not yet stored)."""
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        now = as_utc(now) or utc_now()
        return {
            "user_id": check_user_id(user_id),
            "kind": kind,
            "text": text,
            "embedding": encode_vector(vector),
            "embedding_model": self.embedder.name,
            "content_hash": content_hash(text),
            "source": check_source(source),
            "created_at": now,
            "updated_at": now,
            "seen_count": 1,
            "superseded_by": None,
            "valid_to": None,
            "active": True,
            "expires_at": now + timedelta(seconds=self.ttl_seconds) if self.ttl_seconds else None,
        }

    def insert(self, doc: dict) -> str:
        """Store one memory document and add it to the cache; returns its id."""
        user_id = check_user_id(doc.get("user_id"))
        with self._lock:
            self.store.memories.insert_one(doc)
            if user_id in self._users:
                self._users[user_id].upsert(doc)
        return str(doc["_id"])

    def update(
        self,
        user_id: str,
        ids: Iterable[str | ObjectId],
        fields: dict,
        *,
        inc: dict | None = None,
        only_active: bool = False,
    ) -> int:
        """`$set` fields (and `$inc`) on some of the user's memories, then re-read them into the cache."""
        user_id = check_user_id(user_id)
        object_ids = [ObjectId(i) for i in ids]
        if not object_ids:
            return 0
        query: dict = {"_id": {"$in": object_ids}, "user_id": user_id}
        if only_active:
            query["active"] = True
        update: dict = {"$set": dict(fields)}
        if inc:
            update["$inc"] = dict(inc)
        with self._lock:
            matched = self.store.memories.update_many(query, update).matched_count
            if user_id in self._users:
                for doc in self.store.memories.find({"_id": {"$in": object_ids}, "user_id": user_id}, PROJECTION):
                    self._users[user_id].upsert(doc)
        return matched

    def touch(self, user_id: str, memory_id: str | ObjectId, *, now: datetime | None = None) -> None:
        """The memory was stated again: updated_at = now, seen_count + 1, expiry pushed back."""
        now = as_utc(now) or utc_now()
        later = {"expires_at": now + timedelta(seconds=self.ttl_seconds)} if self.ttl_seconds else {}
        self.update(user_id, [memory_id], {"updated_at": now, **later}, inc={"seen_count": 1})

    def forget(self, user_id: str, ids: Iterable[str], *, now: datetime | None = None) -> int:
        """Hide memories from search (active=False, valid_to=now); the documents stay for the record."""
        now = as_utc(now) or utc_now()
        return self.update(user_id, ids, {"active": False, "valid_to": now, "updated_at": now})

    def delete_user(self, user_id: str) -> int:
        """Delete every memory of one user (the right to be forgotten); returns how many."""
        user_id = check_user_id(user_id)
        with self._lock:
            deleted = self.store.memories.delete_many({"user_id": user_id}).deleted_count
            self._users.pop(user_id, None)
        return deleted

    def add_episode(
        self,
        user_id: str,
        session_id: str | None,
        seq: int | None,
        user_text: str,
        assistant_text: str,
        *,
        now: datetime | None = None,
    ) -> str:
        """Store one exchange verbatim ("User: … / Assistant: …") as an `episode` memory; idempotent per source."""
        user_id = check_user_id(user_id)
        source = check_source({"session_id": session_id, "seq": seq})
        if not isinstance(user_text, str) or not isinstance(assistant_text, str):
            raise ValueError("user_text and assistant_text must be str")
        text = episode_text(user_text, assistant_text)
        digest = content_hash(text)
        with self._lock:
            if seq is not None:
                for doc in self.store.memories.find(
                    {"user_id": user_id, "kind": "episode", "content_hash": digest}, {"source": 1}
                ):
                    if doc.get("source") == source:
                        return str(doc["_id"])  # the same exchange again (a retried write)
        vector = self.embedder.embed([text])[0]
        return self.insert(self.new_doc(user_id, "episode", text, vector, source, now=now))

    def add_turns(
        self, user_id: str, session_id: str, units: list[TurnUnit], *, now: datetime | None = None
    ) -> list[str]:
        """Store turns as `episode` memories in one batch (one embedding call, one insert); idempotent per
        (session, seq). Each text starts with its speaker; each date is when the turn was said."""
        user_id = check_user_id(user_id)
        have = {
            doc["source"]["seq"]
            for doc in self.store.memories.find(
                {
                    "user_id": user_id,
                    "kind": "episode",
                    "source.session_id": session_id,
                    "source.seq": {"$in": [u.seq for u in units]},
                },
                {"source": 1},
            )
        }
        todo = [u for u in units if u.seq not in have and u.text.strip()]
        if not todo:
            return []
        texts = [turn_text(u.role, u.text, u.speaker, u.when) for u in todo]
        vectors = self.embedder.embed(texts)
        docs = [
            self.new_doc(user_id, "episode", text, vector, {"session_id": session_id, "seq": u.seq}, now=u.when or now)
            for u, text, vector in zip(todo, texts, vectors)
        ]
        self.store.memories.insert_many(docs, ordered=True)
        with self._lock:
            if user_id in self._users:
                for doc in docs:
                    self._users[user_id].upsert(doc)
        return [str(doc["_id"]) for doc in docs]

    # -- reads
    def participants(self, user_id: str) -> list[str]:
        """The named speakers of the user's stored turns ("Caroline", "Melanie"); [] for a User/Assistant chat."""
        with self._lock:
            return (self._users.get(uid := check_user_id(user_id)) or self._rows(uid)).participants()

    def find_hash(self, user_id: str, kind: str, digest: str) -> Hit | None:
        """The user's active memory of `kind` with this content hash, if any (newest first)."""
        user_id = check_user_id(user_id)
        with self._lock:
            rows = self._rows(user_id)
            now_s = time.time()
            found = [
                r
                for r in rows.by_hash.get(digest, ())
                if rows.kinds[r] == kind and rows.active[r] and rows.expires_s[r] > now_s
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
            found = ((key, rows.turn_at.get(key)) for key in keys)  # the cache's (session_id, seq) → turn row
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
            rows = self._users.get(uid := check_user_id(user_id)) or self._rows(uid)
            return int(rows.valid(check_kinds(kinds), time.time()).sum())

    def all(self, user_id: str, *, kinds: tuple[str, ...] = KINDS, now: datetime | None = None) -> list[Hit]:
        """Every active memory of the user, oldest first (what search can return)."""
        user_id = check_user_id(user_id)
        now_s = (as_utc(now) or utc_now()).timestamp()
        with self._lock:
            rows = self._rows(user_id)
            mask = rows.valid(check_kinds(kinds), now_s)
            order = sorted((r for r in range(rows.n) if mask[r]), key=lambda r: (rows.updated_s[r], str(rows.ids[r])))
            return [rows.hit(r, 0.0) for r in order]

    def search(
        self,
        user_id: str,
        query: str,
        *,
        k: int = 5,
        kinds: tuple[str, ...] = KINDS,
        mode: str = "hybrid",
        now: datetime | None = None,
        half_life_days: float | None = _DEFAULT,
        query_vector: np.ndarray | None = None,
        candidates: int | None = None,
        lexical_weight: float | None = None,
    ) -> list[Hit]:
        """The user's `k` best memories for `query` (never another user's; never superseded or expired).

        mode: "vector" (cosine), "lexical" (BM25) or "hybrid" (reciprocal-rank fusion of both, k=60).
        Scores are multiplied by the recency weight 0.5 ** (age_days / half_life_days), age counted from
        `updated_at` (last stated), when a half-life is set here or on the index (None here turns it off);
        ties go to the more recent memory. `query_vector` skips embedding the query. Between named people, the
        question is embedded without their names; the one it names gets `speaker_boost` (retrieval.names).
        """
        user_id, kinds = _check_search(user_id, query, k, kinds, mode)
        now_s = (as_utc(now) or utc_now()).timestamp()
        half_life = self.half_life_days if half_life_days is _DEFAULT else half_life_days
        pool = candidates or max(50, 10 * k)  # how many each ranking passes to the fusion
        people = self.participants(user_id) if self.names_as_filter else []
        about = named(query, people)  # the participants the question names
        if mode != "lexical" and query_vector is None:  # embedded without them: the cosine measures what is asked
            query_vector = embed_query(self.embedder, without_names(query, people))  # Voyage: input_type="query"
        atlas_ranked = None
        if mode != "lexical" and self.vector_backend == "atlas":
            self.stats["atlas_searches"] += 1
            atlas_ranked = atlas_rank(self.store, user_id, query_vector, kinds, pool)
        with self._lock:
            rows = self._rows(user_id)
            mask = rows.valid(kinds, now_s)  # 1. candidates: live, wanted kinds, this user
            if not mask.any():
                return []
            newer = rows.updated_s[: rows.n]
            lexical = sims = None
            rankings: dict[str, list[int]] = {}
            if mode != "vector":  # 2. lexical ranking (BM25)
                lexical = rows.bm25(query, mask)
                rankings["lexical"] = top_k(np.where(lexical > 0, lexical, -np.inf), pool, newer)
            if mode != "lexical":  # 3. embedding ranking (cosine)
                sims = rows.cosine(query_vector, mask) if atlas_ranked is None else rows.scatter(atlas_ranked, mask)
                rankings["vector"] = top_k(sims, pool, newer)
            base = fuse(mode, rankings, sims, lexical, lexical_weight)  # 4. one score per row (RRF in hybrid)
            if not base:
                return []
            if len(about) == 1 and self.speaker_boost:  # 4b. the one person asked about: their own turns first
                base = boost_speaker(base, rows.speakers, about[0], self.speaker_boost)
            hits = rows.best_by_recency(base, now_s, half_life, k, sims, lexical)  # 5. recency weight, top k
            self.stats["searches"] += 1
            return hits


def _check_search(user_id: Any, query: Any, k: Any, kinds: Any, mode: Any) -> tuple[str, tuple[str, ...]]:
    """Validate `search`'s arguments (before any query runs); returns the user id and the kinds."""
    user_id = check_user_id(user_id)
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if not isinstance(query, str):
        raise ValueError(f"query must be a str, got {type(query).__name__}")
    kinds = check_kinds(kinds)
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}")
    return user_id, kinds
