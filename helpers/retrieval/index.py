"""`MemoryIndex`: per-user memory store and search. Taught in 05_vector_memory, section 'Extraction → storage → retrieval → injection'.

`MemoryIndex.search` always filters by `user_id` and drops superseded, forgotten and expired memories.
Ranking runs in numpy over the user's rows held in this process (exact cosine, BM25, reciprocal-rank fusion).
A user's rows open from their index file in about the same time whatever their number (else from every
memory document, once), stay current with one small read per request (a revision counter and change log in
the database: another process's inserts, updates and deletions are seen at the next request), and are
dropped least recently used first beyond INDEX_CACHE_MB (helpers/retrieval/users.py). On MongoDB Atlas (or
atlas-local) with a vector index (`create_vector_index`), vector ranking runs in `$vectorSearch`.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
import weakref
from collections import Counter
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from pymongo import ASCENDING, DESCENDING
from pymongo.errors import OperationFailure, PyMongoError

from helpers.config import ConfigError, load_settings
from helpers.retrieval.atlas import atlas_rank, supports_vector_search, vector_index_ready
from helpers.retrieval.cache import UserRows
from helpers.retrieval.changes import ensure_change_indexes
from helpers.retrieval.coarse import COARSE_MIN_ROWS
from helpers.retrieval.embeddings import embed_query, get_embedder
from helpers.retrieval.lookups import MemoryLookups
from helpers.retrieval.names import SPEAKER_BOOST, boost_speaker, check_boost, named, without_names
from helpers.retrieval.ranking import fuse, top_k
from helpers.retrieval.schema import KINDS, Hit, as_utc, check_kinds, check_user_id, utc_now
from helpers.retrieval.snapshot import index_root
from helpers.retrieval.users import UserCache
from helpers.retrieval.writes import MemoryWrites

if TYPE_CHECKING:  # pragma: no cover
    from helpers.db.store import Store
    from helpers.retrieval.embeddings import Embedder

__all__ = ["MemoryIndex", "MODES", "TTL_INDEX_NAME"]

MODES = ("hybrid", "vector", "lexical")
TTL_INDEX_NAME = "memory_ttl"
_DEFAULT: Any = object()  # "use the index's setting"
_INDEXES_MADE: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()
_INDEXES_LOCK = threading.Lock()


class MemoryIndex(MemoryWrites, MemoryLookups):
    """Per-user memory search over the `memories` collection: add episodes, search, forget.

    Thread-safe (one lock). `half_life_days` sets the default recency weight (None: off); `backend` is
    "auto" ($vectorSearch when the server has it and the index is ready, else numpy), "numpy" or "atlas".

    A user's rows are opened on their first read (from their index file under the data dir: about the same
    time for 1,000 or 50,000 memories; without one, from every document, and the file is written for next
    time) and brought up to date on every later call with one small read of the user's revision: a write by
    this or any other process, deletions and `forget_user` included, is seen at the next request, reading only
    what changed. `max_bytes` (default INDEX_CACHE_MB) and `max_users` cap what this process holds, least
    recently used first; `index_files=False` keeps no files (mongomock stores never do). Every ranking is exact
    by default; with `approximate=True` a user with more than COARSE_MIN_ROWS live memories is ranked by
    embedding over the closest coarse lists only (a third of the rows, helpers.retrieval.coarse;
    `coarse_min_rows` sets another threshold) once a writer with `approximate=True` trained them.

    Its writes are helpers/retrieval/writes.py, its reads besides search helpers/retrieval/lookups.py (mixins).
    """

    def __init__(
        self,
        store: Store,
        embedder: Embedder | None = None,
        *,
        half_life_days: float | None = None,
        backend: str = "auto",
        ttl_seconds: int | None = None,
        max_users: int | None = None,
        max_bytes: int | None = None,
        index_files: bool = True,
        names_as_filter: bool = True,
        speaker_boost: float = SPEAKER_BOOST,
        approximate: bool = False,
        coarse_min_rows: int | None = None,
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
        self._lock = threading.RLock()
        if max_bytes is None:
            max_bytes = load_settings().index_cache_mb * 2**20
        self.cache = UserCache(
            store,
            self.embedder.dim,
            root=index_root(store) if index_files else None,
            max_bytes=max_bytes,
            max_users=max_users,
            stats=self.stats,
            coarse_min_rows=(coarse_min_rows or COARSE_MIN_ROWS) if approximate else None,
        )
        self.approximate = bool(approximate)
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
        ensure_change_indexes(self.store)
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
    def _rows(self, user_id: str, *, refresh: bool = True) -> UserRows:
        """The user's rows: opened on first use (index file, else every document), then kept current with the
        change log (one small read per call; helpers.retrieval.users)."""
        rows = self.cache.get(user_id, refresh=refresh)
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
        """For a batch of writes (an import): no per-call refresh of `user_id`'s rows (this index's own writes
        keep them current); another process's writes meanwhile are read on leaving, and the user's index file
        is written then."""
        user_id = check_user_id(user_id)
        with self._lock:
            self.cache.holding.add(user_id)
        try:
            yield self
        finally:
            with self._lock:
                self.cache.holding.discard(user_id)
                self._rows(user_id)  # catch up with anything written elsewhere meanwhile
                self.cache.checkpoint(user_id, force=True)

    def invalidate(self, user_id: str | None = None) -> None:
        """Drop what this process holds of one user (or all); the next read opens them again."""
        with self._lock:
            self.cache.drop(None if user_id is None else check_user_id(user_id))

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
            if mode != "lexical":  # 3. embedding ranking (cosine; over the closest lists only for a large user)
                lists = self.approximate and rows.coarse is not None and atlas_ranked is None
                self.stats["coarse_searches"] += int(lists)
                sims = (
                    rows.cosine(query_vector, mask, approximate=lists)
                    if atlas_ranked is None
                    else rows.scatter(atlas_ranked, mask)
                )
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
