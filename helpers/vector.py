"""Per-user long-term memory search: episodes, vector/BM25/hybrid ranking, packing. Taught in 05_vector_memory.

Every memory is one document in the `memories` collection, facts (helpers.facts) and episodes alike:

    {user_id, kind: "fact"|"episode", text, embedding, embedding_model, content_hash,
     source: {session_id, seq}, created_at, updated_at, seen_count,
     superseded_by: None|ObjectId, valid_to: None|datetime, active: bool, expires_at: None|datetime}

`embedding` is a BSON binary vector (subtype 9, float32): 1.5 KB instead of ~5 KB for a list of 384
doubles, decoded with one `np.frombuffer`, exactly the embedder's float32, and indexed natively by
MongoDB Atlas Vector Search. mongomock and the local SecantusDB server store it as opaque bytes.
`active` mirrors `superseded_by is None` as a boolean, because `$vectorSearch` pre-filters on booleans.

`MemoryIndex.search` always filters by `user_id` and drops superseded, forgotten and expired memories.
Ranking runs in numpy over a per-user in-process cache (exact cosine, BM25, reciprocal-rank fusion);
the cache is refreshed incrementally from an indexed `updated_at` range query on every search, so it
stays correct after inserts and updates by this or any other process. On MongoDB Atlas (or
atlas-local) with a vector index (`create_vector_index`), vector ranking runs in `$vectorSearch`.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
import time
import unicodedata
import uuid
import warnings
import weakref
from collections import Counter, OrderedDict
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np
from bson import ObjectId
from bson.binary import Binary, BinaryVectorDtype
from pymongo import ASCENDING, DESCENDING
from pymongo.errors import OperationFailure, PyMongoError

from . import prompts
from .config import ConfigError
from .embeddings import embed_query

if TYPE_CHECKING:  # pragma: no cover
    from .config import Settings
    from .embeddings import Embedder
    from .store import Store

__all__ = [
    "Hit",
    "MemoryIndex",
    "pack",
    "format_memories",
    "retrieve_block",
    "bm25_tokens",
    "normalise_text",
    "content_hash",
    "encode_vector",
    "decode_vector",
    "check_user_id",
    "supports_vector_search",
    "create_vector_index",
    "run_retrieval_benchmark",
    "KINDS",
    "MODES",
    "RRF_K",
    "VECTOR_INDEX_NAME",
]

KINDS = ("fact", "episode")
MODES = ("hybrid", "vector", "lexical")
RRF_K = 60                      # reciprocal-rank fusion constant (Cormack et al. 2009)
LEXICAL_WEIGHT = 0.5  # BM25 weight in the fusion (embeddings: 1.0); best MRR on `python -m helpers.bench recall`
BM25_K1, BM25_B = 1.2, 0.75     # the usual BM25 parameters
VECTOR_INDEX_NAME = "memory_vector"
TTL_INDEX_NAME = "memory_ttl"
REFRESH_MARGIN = timedelta(seconds=2)   # re-read docs updated this close to the newest one seen (clock/ordering slack)
EPISODE_USER_CHARS = 1000       # an episode keeps the user's words (up to this many characters) ...
EPISODE_ASSISTANT_CHARS = 400   # ... and the start of the reply
_DEFAULT: Any = object()        # "use the index's setting"
_PROJECTION = {"user_id": 1, "kind": 1, "text": 1, "embedding": 1, "content_hash": 1, "source": 1, "created_at": 1,
               "updated_at": 1, "seen_count": 1, "active": 1, "superseded_by": 1, "expires_at": 1}


# ---------------------------------------------------------------------------- small pieces

def check_user_id(user_id: Any) -> str:
    """Ids are non-empty str; anything else (a dict like {'$ne': None}) never reaches a query."""
    if not isinstance(user_id, str):
        raise ValueError(f"user_id must be a str, got {type(user_id).__name__}: {user_id!r}")
    if not user_id:
        raise ValueError("user_id must be a non-empty string")
    return user_id


def _check_source(source: Any) -> dict:
    """`{session_id: str|None, seq: int|None}`: where a memory came from."""
    if source is None:
        return {"session_id": None, "seq": None}
    if not isinstance(source, dict) or set(source) - {"session_id", "seq"}:
        raise ValueError(f"source must be a dict with keys session_id and seq, got {source!r}")
    session_id, seq = source.get("session_id"), source.get("seq")
    if session_id is not None and not isinstance(session_id, str):
        raise ValueError(f"source session_id must be a str or None, got {session_id!r}")
    if seq is not None and (not isinstance(seq, int) or isinstance(seq, bool)):
        raise ValueError(f"source seq must be an int or None, got {seq!r}")
    return {"session_id": session_id, "seq": seq}


def _now() -> datetime:
    """UTC now, truncated to milliseconds as BSON stores it."""
    now = datetime.now(timezone.utc)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def _aware(value: datetime | None) -> datetime | None:
    """Datetimes from any client as aware UTC (a naive one is taken to be UTC, as BSON dates are)."""
    if value is None:
        return None
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


def normalise_text(text: str) -> str:
    """The text a content hash is taken of: NFKC, case-folded, single spaces, no trailing punctuation."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(text.split()).rstrip(" .!?;,")


def content_hash(text: str) -> str:
    """sha256 of the normalised text: equal for 'The user lives in Denver.' and 'the user lives in denver'."""
    return hashlib.sha256(normalise_text(text).encode("utf-8", "surrogatepass")).hexdigest()


_FLOAT32 = BinaryVectorDtype.FLOAT32.value  # b"\x27": the dtype byte of a float32 BSON vector


def encode_vector(vector: np.ndarray) -> Binary:
    """A float vector as a BSON binary vector (subtype 9, float32, little-endian), like `Binary.from_vector`."""
    data = np.ascontiguousarray(vector, dtype="<f4").ravel().tobytes()
    return Binary(_FLOAT32 + b"\x00" + data, subtype=9)


def decode_vector(value: Any) -> np.ndarray:
    """A stored embedding (binary vector or a plain list of numbers) as float32 numpy."""
    if isinstance(value, (bytes, Binary)):
        raw = bytes(value)
        if raw[:1] != _FLOAT32:
            raise ValueError("only float32 binary vectors are supported (BinaryVectorDtype.FLOAT32)")
        return np.frombuffer(raw, dtype="<f4", offset=2)
    return np.asarray(value if value is not None else [], dtype=np.float32)


# ---------------------------------------------------------------------------- BM25

_STOPWORDS = frozenset(
    "a an the and or but if then so to of in on at for with about from by as is are was were be been being am "
    "i me my mine you your yours we our us it its this that these those what which who whom whose when where "
    "why how do does did can could should would will shall may might must have has had not no yes there here "
    "than too very just also some any more most much many such into over out up down off again once all both "
    "each few other own same only s t don user assistant users".split()
)


def bm25_tokens(text: str) -> list[str]:
    """Lowercase word/number tokens without stopwords, with a crude plural strip ('flights' → 'flight')."""
    tokens = []
    for token in re.findall(r"[a-z0-9]+", unicodedata.normalize("NFKC", text).lower().replace("'s", " ")):
        if token in _STOPWORDS:
            continue
        if len(token) > 4 and token.endswith("s") and not token.endswith("ss") and not token[-2].isdigit():
            token = token[:-1]
        tokens.append(token)
    return tokens


# ---------------------------------------------------------------------------- results

@dataclass(frozen=True)
class Hit:
    """One retrieved memory. `score` is what it was ranked by (RRF, cosine or BM25, times the recency weight)."""

    id: str
    kind: str
    text: str
    score: float
    created_at: datetime | None
    source: dict | None
    updated_at: datetime | None = None
    similarity: float | None = None   # cosine to the query (vector and hybrid modes)
    lexical: float | None = None      # BM25 score (lexical and hybrid modes)
    seen_count: int = 1

    @property
    def date(self) -> datetime | None:
        """When this memory was last stated (updated_at), else when it was recorded."""
        return self.updated_at or self.created_at

    def to_dict(self) -> dict:
        data = asdict(self)
        for key in ("created_at", "updated_at"):
            data[key] = data[key].isoformat() if data[key] else None
        return data


# ---------------------------------------------------------------------------- the per-user cache

class _UserRows:
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
        self.emb = np.zeros((0, dim), dtype=np.float32)
        self.is_fact = np.zeros(0, dtype=bool)
        self.active = np.zeros(0, dtype=bool)
        self.updated_s = np.zeros(0, dtype=np.float64)
        self.expires_s = np.zeros(0, dtype=np.float64)
        self.doc_len = np.zeros(0, dtype=np.float64)
        self.tf: list[Counter] = []
        self.postings: dict[str, dict[int, int]] = {}
        self.max_updated: datetime | None = None
        self.wrong_dim = 0

    def _grow(self) -> None:
        capacity = max(64, self.capacity * 2)

        def grown(array: np.ndarray, fill: float = 0) -> np.ndarray:
            out = np.full((capacity, *array.shape[1:]), fill, dtype=array.dtype)
            out[:self.n] = array[:self.n]
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
            for column in (self.ids, self.texts, self.hashes, self.kinds, self.sources, self.created, self.updated,
                           self.seen):
                column.append(None)
            self.tf.append(Counter())
        vector = decode_vector(doc.get("embedding"))
        if vector.shape != (self.dim,):
            self.wrong_dim += 1  # embedded by another model: lexical only
            vector = np.zeros(self.dim, dtype=np.float32)
        created, updated = _aware(doc.get("created_at")), _aware(doc.get("updated_at"))
        expires = _aware(doc.get("expires_at"))
        active = bool(doc.get("active", doc.get("superseded_by") is None))
        old_hash, new_hash = self.hashes[row], doc.get("content_hash", "")
        if old_hash is not None and old_hash != new_hash:
            self.by_hash.get(old_hash, set()).discard(row)
        self.by_hash.setdefault(new_hash, set()).add(row)
        self.ids[row], self.texts[row], self.hashes[row] = _id, doc.get("text", ""), new_hash
        self.kinds[row], self.sources[row] = doc.get("kind", "fact"), doc.get("source")
        self.created[row], self.updated[row] = created, updated or created
        self.seen[row] = int(doc.get("seen_count") or 1)
        self.emb[row] = vector
        self.is_fact[row], self.active[row] = self.kinds[row] == "fact", active
        self.updated_s[row] = (updated or created).timestamp() if (updated or created) else 0.0
        self.expires_s[row] = expires.timestamp() if expires else math.inf
        self._index_terms(row, bm25_tokens(self.texts[row]) if active else [])
        if updated and (self.max_updated is None or updated > self.max_updated):
            self.max_updated = updated
        return row

    def _index_terms(self, row: int, tokens: list[str]) -> None:
        for term in self.tf[row]:
            postings = self.postings.get(term)
            if postings is not None:
                postings.pop(row, None)
                if not postings:
                    del self.postings[term]
        counts = Counter(tokens)
        self.tf[row] = counts
        self.doc_len[row] = len(tokens)
        for term, count in counts.items():
            self.postings.setdefault(term, {})[row] = count

    def hit(self, row: int, score: float, similarity: float | None = None, lexical: float | None = None) -> Hit:
        return Hit(str(self.ids[row]), self.kinds[row], self.texts[row], float(score), self.created[row],
                   self.sources[row], self.updated[row], similarity, lexical, self.seen[row])

    def valid(self, kinds: tuple[str, ...], now_s: float) -> np.ndarray:
        """Rows that may be returned: active, of a wanted kind, not expired."""
        n = self.n
        mask = self.active[:n] & (self.expires_s[:n] > now_s)
        if "fact" not in kinds:
            mask &= ~self.is_fact[:n]
        if "episode" not in kinds:
            mask &= self.is_fact[:n]
        return mask

    def bm25(self, query: str, mask: np.ndarray) -> np.ndarray:
        """BM25 score of every row for `query` (0 where no query term occurs); statistics over active rows."""
        scores = np.zeros(self.n, dtype=np.float64)
        terms = bm25_tokens(query)
        live = self.active[:self.n]
        docs = int(live.sum())
        if not terms or not docs:
            return scores
        avg_len = max(float(self.doc_len[:self.n][live].sum()) / docs, 1e-9)
        for term, query_count in Counter(terms).items():
            postings = self.postings.get(term)
            if not postings:
                continue
            rows = np.fromiter(postings.keys(), dtype=np.int64, count=len(postings))
            tf = np.fromiter(postings.values(), dtype=np.float64, count=len(postings))
            idf = math.log(1.0 + (docs - len(rows) + 0.5) / (len(rows) + 0.5))
            norm = tf + BM25_K1 * (1.0 - BM25_B + BM25_B * self.doc_len[rows] / avg_len)
            scores[rows] += query_count * idf * tf * (BM25_K1 + 1.0) / norm
        scores[~mask] = 0.0
        return scores


# ---------------------------------------------------------------------------- server capabilities

_VECTOR_SUPPORT: "weakref.WeakKeyDictionary[Any, bool]" = weakref.WeakKeyDictionary()
_INDEX_READY: "weakref.WeakKeyDictionary[Any, tuple[bool, float]]" = weakref.WeakKeyDictionary()
_INDEXES_MADE: "weakref.WeakKeyDictionary[Any, bool]" = weakref.WeakKeyDictionary()
_CAPS_LOCK = threading.Lock()
_NAMESPACE_NOT_FOUND = 26


def supports_vector_search(store: "Store") -> bool:
    """Whether the server runs Atlas Search stages (`$listSearchIndexes`), probed once per store and cached.

    MongoDB Atlas and mongodb/mongodb-atlas-local do; the local SecantusDB server, mongomock and a plain
    mongod answer with an error, and this returns False. A connection error is raised, not cached.
    """
    with _CAPS_LOCK:
        if store in _VECTOR_SUPPORT:
            return _VECTOR_SUPPORT[store]
    try:
        list(store.memories.aggregate([{"$listSearchIndexes": {}}]))
        answer = True
    except NotImplementedError:  # mongomock
        answer = False
    except OperationFailure as err:
        answer = err.code == _NAMESPACE_NOT_FOUND  # a search-capable server without the collection yet
    with _CAPS_LOCK:
        _VECTOR_SUPPORT[store] = answer
    return answer


def _vector_index_ready(store: "Store", recheck_s: float = 30.0) -> bool:
    """Whether `memory_vector` exists and is queryable (a negative answer is re-checked after `recheck_s`)."""
    if not supports_vector_search(store):
        return False
    with _CAPS_LOCK:
        known = _INDEX_READY.get(store)
    if known and (known[0] or time.monotonic() - known[1] < recheck_s):
        return known[0]
    try:
        found = list(store.memories.list_search_indexes(VECTOR_INDEX_NAME))
    except PyMongoError:
        found = []
    ready = bool(found) and bool(found[0].get("queryable", found[0].get("status") == "READY"))
    with _CAPS_LOCK:
        _INDEX_READY[store] = (ready, time.monotonic())
    return ready


def create_vector_index(store: "Store", *, dim: int = 384, similarity: str = "cosine", wait: bool = True,
                        timeout_s: float = 180.0) -> str:
    """Create (or update) the Atlas Vector Search index on `memories.embedding` with user_id/kind/active filters.

    Idempotent. Needs MongoDB Atlas or mongodb/mongodb-atlas-local (`docker compose up -d`); the local
    SecantusDB server and mongomock rank in numpy instead and raise ConfigError here. With `wait`, blocks
    until the index is queryable. Taught in 05_vector_memory.
    """
    from pymongo.operations import SearchIndexModel

    if not supports_vector_search(store):
        raise ConfigError(f"{store.describe()} has no Atlas Vector Search: point MONGODB_URI at MongoDB Atlas or at "
                          "mongodb/mongodb-atlas-local (`docker compose up -d`). Without it, search ranks in numpy.")
    definition = {"fields": [
        {"type": "vector", "path": "embedding", "numDimensions": int(dim), "similarity": similarity},
        {"type": "filter", "path": "user_id"},
        {"type": "filter", "path": "kind"},
        {"type": "filter", "path": "active"},
    ]}
    collection = store.memories
    existing = list(collection.list_search_indexes(VECTOR_INDEX_NAME))
    if not existing:
        collection.create_search_index(SearchIndexModel(definition=definition, name=VECTOR_INDEX_NAME,
                                                        type="vectorSearch"))
    elif _field_keys(existing[0].get("latestDefinition", {}).get("fields")) != _field_keys(definition["fields"]):
        collection.update_search_index(VECTOR_INDEX_NAME, definition)  # only on a real change: it rebuilds
    deadline = time.monotonic() + timeout_s
    while wait:
        found = list(collection.list_search_indexes(VECTOR_INDEX_NAME))
        if found and found[0].get("queryable") and found[0].get("status") in (None, "READY"):
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"vector index {VECTOR_INDEX_NAME!r} not queryable after {timeout_s:.0f} s "
                               f"(status {found[0].get('status') if found else 'missing'}); try again later")
        time.sleep(1.0)
    with _CAPS_LOCK:
        _INDEX_READY.pop(store, None)
    return VECTOR_INDEX_NAME


def _field_keys(fields: Any) -> set:
    """What matters in a vector index definition (the server adds defaults we do not compare)."""
    return {(f.get("type"), f.get("path"), f.get("numDimensions"), f.get("similarity")) for f in fields or []}


# ---------------------------------------------------------------------------- the index

class MemoryIndex:
    """Per-user memory search over the `memories` collection: add episodes, search, forget. Taught in 05_vector_memory.

    Thread-safe (one lock). `half_life_days` sets the default recency weight (None: off); `backend` is
    "auto" ($vectorSearch when the server has it and the index is ready, else numpy), "numpy" or "atlas".

    The per-user cache is loaded on a user's first search (about 1 s for 10,000 memories on the local
    server) and then refreshed on every call with one indexed query for documents whose `updated_at` is
    at or after the newest one seen (minus 2 s of slack). Writes through this class update it directly.
    Two things it cannot see: hard deletes made elsewhere and writes from another process that backdate
    `updated_at`; call `invalidate(user_id)` after those.
    """

    def __init__(self, store: "Store", embedder: "Embedder | None" = None, *, half_life_days: float | None = None,
                 backend: str = "auto", ttl_seconds: int | None = None, max_users: int = 64):
        if backend not in ("auto", "numpy", "atlas"):
            raise ConfigError(f"backend must be 'auto', 'numpy' or 'atlas', got {backend!r}")
        if embedder is None:
            from .embeddings import get_embedder

            embedder = get_embedder()
        self.store = store
        self.embedder = embedder
        self.half_life_days = half_life_days
        self.backend = backend
        self.ttl_seconds = ttl_seconds
        self.max_users = max_users
        self.stats = Counter()
        self._users: "OrderedDict[str, _UserRows]" = OrderedDict()
        self._lock = threading.RLock()
        self._ensure_indexes()

    def __repr__(self) -> str:
        return f"MemoryIndex({self.store!r}, embedder={self.embedder.name!r}, backend={self.vector_backend!r})"

    # -- setup
    def _ensure_indexes(self) -> None:
        """Lookup indexes this module's queries need (once per store per process; idempotent)."""
        with _CAPS_LOCK:
            if _INDEXES_MADE.get(self.store):
                return
        memories = self.store.memories
        memories.create_index([("user_id", ASCENDING), ("kind", ASCENDING), ("content_hash", ASCENDING)],
                              name="user_kind_hash")
        memories.create_index([("user_id", ASCENDING), ("updated_at", DESCENDING)], name="user_updated")
        with _CAPS_LOCK:
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
            raise ConfigError(f"cannot create the TTL index on memories.expires_at ({err}); drop the conflicting "
                              f"index or call ensure_ttl_index(None)") from None
        self.ttl_seconds = seconds
        return TTL_INDEX_NAME

    @property
    def vector_backend(self) -> str:
        """'atlas' when vector ranking runs in $vectorSearch, else 'numpy' (exact cosine in process)."""
        if self.backend == "numpy":
            return "numpy"
        if self.backend == "atlas":
            return "atlas"
        try:
            return "atlas" if _vector_index_ready(self.store) else "numpy"
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
    def _rows(self, user_id: str) -> _UserRows:
        """The user's cached rows, loaded on first use and refreshed from `updated_at` on every call."""
        rows = self._users.get(user_id)
        if rows is None:
            rows = _UserRows(self.embedder.dim)
            started = time.perf_counter()
            for doc in self.store.memories.find({"user_id": user_id}, _PROJECTION):
                if doc.get("user_id") == user_id:
                    rows.upsert(doc)
            self.stats["full_loads"] += 1
            self.stats["full_load_ms"] += int((time.perf_counter() - started) * 1000)
            self._users[user_id] = rows
            while len(self._users) > self.max_users:
                self._users.popitem(last=False)
        else:
            self._users.move_to_end(user_id)
            since = rows.max_updated - REFRESH_MARGIN if rows.max_updated else datetime(1970, 1, 1, tzinfo=timezone.utc)
            for doc in self.store.memories.find({"user_id": user_id, "updated_at": {"$gte": since}}, _PROJECTION):
                if doc.get("user_id") == user_id:
                    rows.upsert(doc)
            self.stats["refreshes"] += 1
        if rows.wrong_dim and not self.stats["warned_dim"]:
            self.stats["warned_dim"] += 1
            warnings.warn(f"{rows.wrong_dim} memories of user {user_id!r} were embedded with another model than "
                          f"{self.embedder.name} ({self.embedder.dim} dims); they are found by words only. Set "
                          "EMBEDDER back, or delete and re-add them.", RuntimeWarning, stacklevel=3)
        return rows

    def invalidate(self, user_id: str | None = None) -> None:
        """Drop the cache of one user (or all): needed only after deleting memories outside this class."""
        with self._lock:
            if user_id is None:
                self._users.clear()
            else:
                self._users.pop(check_user_id(user_id), None)

    # -- writes (used by helpers.facts too)
    def new_doc(self, user_id: str, kind: str, text: str, vector: np.ndarray, source: dict | None, *,
                now: datetime | None = None) -> dict:
        """A memory document in the schema above (not yet stored)."""
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        now = _aware(now) or _now()
        return {"user_id": check_user_id(user_id), "kind": kind, "text": text, "embedding": encode_vector(vector),
                "embedding_model": self.embedder.name, "content_hash": content_hash(text),
                "source": _check_source(source), "created_at": now, "updated_at": now, "seen_count": 1,
                "superseded_by": None, "valid_to": None, "active": True,
                "expires_at": now + timedelta(seconds=self.ttl_seconds) if self.ttl_seconds else None}

    def insert(self, doc: dict) -> str:
        """Store one memory document and add it to the cache; returns its id."""
        user_id = check_user_id(doc.get("user_id"))
        with self._lock:
            self.store.memories.insert_one(doc)
            if user_id in self._users:
                self._users[user_id].upsert(doc)
        return str(doc["_id"])

    def update(self, user_id: str, ids: Iterable[str | ObjectId], fields: dict, *, inc: dict | None = None,
               only_active: bool = False) -> int:
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
                for doc in self.store.memories.find({"_id": {"$in": object_ids}, "user_id": user_id}, _PROJECTION):
                    self._users[user_id].upsert(doc)
        return matched

    def touch(self, user_id: str, memory_id: str | ObjectId, *, now: datetime | None = None) -> None:
        """The memory was stated again: updated_at = now, seen_count + 1, expiry pushed back."""
        now = _aware(now) or _now()
        fields: dict = {"updated_at": now}
        if self.ttl_seconds:
            fields["expires_at"] = now + timedelta(seconds=self.ttl_seconds)
        self.update(user_id, [memory_id], fields, inc={"seen_count": 1})

    def forget(self, user_id: str, ids: Iterable[str], *, now: datetime | None = None) -> int:
        """Hide memories from search (active=False, valid_to=now); the documents stay for the record."""
        now = _aware(now) or _now()
        return self.update(user_id, ids, {"active": False, "valid_to": now, "updated_at": now})

    def delete_user(self, user_id: str) -> int:
        """Delete every memory of one user (the right to be forgotten); returns how many."""
        user_id = check_user_id(user_id)
        with self._lock:
            deleted = self.store.memories.delete_many({"user_id": user_id}).deleted_count
            self._users.pop(user_id, None)
        return deleted

    def add_episode(self, user_id: str, session_id: str | None, seq: int | None, user_text: str,
                    assistant_text: str, *, now: datetime | None = None) -> str:
        """Store one exchange verbatim ("User: … / Assistant: …") as an `episode` memory; idempotent per source."""
        user_id = check_user_id(user_id)
        source = _check_source({"session_id": session_id, "seq": seq})
        if not isinstance(user_text, str) or not isinstance(assistant_text, str):
            raise ValueError("user_text and assistant_text must be str")
        text = (f"User: {_clip(user_text, EPISODE_USER_CHARS)}\n"
                f"Assistant: {_clip(assistant_text, EPISODE_ASSISTANT_CHARS)}")
        digest = content_hash(text)
        with self._lock:
            if seq is not None:
                for doc in self.store.memories.find({"user_id": user_id, "kind": "episode", "content_hash": digest},
                                                    {"source": 1}):
                    if doc.get("source") == source:
                        return str(doc["_id"])  # the same exchange again (a retried write)
        vector = self.embedder.embed([text])[0]
        return self.insert(self.new_doc(user_id, "episode", text, vector, source, now=now))

    # -- reads
    def find_hash(self, user_id: str, kind: str, digest: str) -> Hit | None:
        """The user's active memory of `kind` with this content hash, if any (newest first)."""
        user_id = check_user_id(user_id)
        with self._lock:
            rows = self._rows(user_id)
            now_s = time.time()
            found = [r for r in rows.by_hash.get(digest, ()) if rows.kinds[r] == kind
                     and rows.active[r] and rows.expires_s[r] > now_s]
            if not found:
                return None
            row = max(found, key=lambda r: rows.updated_s[r])
            return rows.hit(row, 1.0, similarity=1.0)

    def neighbours(self, user_id: str, vector: np.ndarray, *, kinds: tuple[str, ...] = ("fact",),
                   min_similarity: float = 0.0, limit: int = 10, now: datetime | None = None) -> list[Hit]:
        """The user's active memories most similar to `vector` (exact cosine), most similar first."""
        user_id = check_user_id(user_id)
        now_s = (_aware(now) or _now()).timestamp()
        with self._lock:
            rows = self._rows(user_id)
            if not rows.n:
                return []
            sims = rows.emb[:rows.n] @ np.asarray(vector, dtype=np.float32)
            candidates = np.flatnonzero(rows.valid(_check_kinds(kinds), now_s) & (sims >= min_similarity))
            order = candidates[np.argsort(-sims[candidates], kind="stable")][:limit]
            return [rows.hit(int(r), float(sims[r]), similarity=float(sims[r])) for r in order]

    def all(self, user_id: str, *, kinds: tuple[str, ...] = KINDS, now: datetime | None = None) -> list[Hit]:
        """Every active memory of the user, oldest first (what search can return)."""
        user_id = check_user_id(user_id)
        now_s = (_aware(now) or _now()).timestamp()
        with self._lock:
            rows = self._rows(user_id)
            mask = rows.valid(_check_kinds(kinds), now_s)
            order = sorted((r for r in range(rows.n) if mask[r]), key=lambda r: (rows.updated_s[r], str(rows.ids[r])))
            return [rows.hit(r, 0.0) for r in order]

    def search(self, user_id: str, query: str, *, k: int = 5, kinds: tuple[str, ...] = KINDS, mode: str = "hybrid",
               now: datetime | None = None, half_life_days: float | None = _DEFAULT,
               query_vector: np.ndarray | None = None, candidates: int | None = None,
               lexical_weight: float | None = None) -> list[Hit]:
        """The user's `k` best memories for `query` (never another user's; never superseded or expired).

        mode: "vector" (cosine), "lexical" (BM25) or "hybrid" (reciprocal-rank fusion of both, k=60).
        Scores are multiplied by the recency weight 0.5 ** (age_days / half_life_days), age counted from
        `updated_at` (last stated), when a half-life is set here or on the index (None here turns it off);
        ties go to the more recent memory. `query_vector` skips embedding the query.
        """
        user_id = check_user_id(user_id)
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if not isinstance(query, str):
            raise ValueError(f"query must be a str, got {type(query).__name__}")
        kinds = _check_kinds(kinds)
        if not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive int, got {k!r}")
        now_dt = _aware(now) or _now()
        now_s = now_dt.timestamp()
        half_life = self.half_life_days if half_life_days is _DEFAULT else half_life_days
        pool = candidates or max(50, 10 * k)
        if mode != "lexical" and query_vector is None:
            query_vector = embed_query(self.embedder, query)  # Voyage: input_type="query"
        atlas = mode != "lexical" and self.vector_backend == "atlas"
        atlas_ranked = self._atlas_rank(user_id, query_vector, kinds, pool) if atlas else None
        with self._lock:
            rows = self._rows(user_id)
            n = rows.n
            if not n:
                return []
            mask = rows.valid(kinds, now_s)
            if not mask.any():
                return []
            sims = lexical = None
            vector_rank: list[int] = []
            lexical_rank: list[int] = []
            if mode != "lexical":
                if atlas_ranked is not None:
                    sims = np.full(n, -np.inf)
                    for _id, cosine in atlas_ranked:
                        row = rows.row_of.get(_id)
                        if row is not None and mask[row]:
                            sims[row] = cosine
                else:
                    sims = (rows.emb[:n] @ np.asarray(query_vector, dtype=np.float32)).astype(np.float64)
                    sims[~mask] = -np.inf
                vector_rank = _top(sims, pool, rows.updated_s[:n])
            if mode != "vector":
                lexical = rows.bm25(query, mask)
                lexical_rank = _top(np.where(lexical > 0, lexical, -np.inf), pool, rows.updated_s[:n])
            if mode == "vector":
                rows_at, base = np.asarray(vector_rank, dtype=np.int64), sims[vector_rank]
            elif mode == "lexical":
                rows_at, base = np.asarray(lexical_rank, dtype=np.int64), lexical[lexical_rank]
            else:
                fused = np.zeros(n, dtype=np.float64)
                w_lex = LEXICAL_WEIGHT if lexical_weight is None else lexical_weight
                for ranking, w in ((vector_rank, 1.0), (lexical_rank, w_lex)):
                    fused[ranking] += w / (RRF_K + np.arange(1, len(ranking) + 1))
                rows_at = np.union1d(np.asarray(vector_rank, dtype=np.int64), np.asarray(lexical_rank, dtype=np.int64))
                base = fused[rows_at]
            if not len(rows_at):
                return []
            weight = _recency(now_s - rows.updated_s[rows_at], half_life)
            score = np.where(base >= 0, base * weight, base / np.maximum(weight, 1e-12))
            order = np.lexsort((-rows_at, -rows.updated_s[rows_at], -score))[:k]  # ties: newer, then later row
            self.stats["searches"] += 1
            return [rows.hit(int(r), float(score[i]),
                             None if sims is None or not np.isfinite(sims[r]) else float(sims[r]),
                             None if lexical is None else float(lexical[r]))
                    for i, r in ((int(i), int(rows_at[i])) for i in order)]

    def _atlas_rank(self, user_id: str, vector: np.ndarray, kinds: tuple[str, ...],
                    limit: int) -> list[tuple[ObjectId, float]]:
        """($vectorSearch) ids and cosines of the user's closest active memories, pre-filtered by user_id."""
        pipeline = [
            {"$vectorSearch": {
                "index": VECTOR_INDEX_NAME, "path": "embedding",
                "queryVector": [float(x) for x in np.asarray(vector, dtype=np.float32)],
                "numCandidates": min(10_000, max(100, 20 * limit)), "limit": limit,
                "filter": {"$and": [{"user_id": {"$eq": user_id}}, {"kind": {"$in": list(kinds)}},
                                    {"active": {"$eq": True}}]},
            }},
            {"$match": {"user_id": user_id}},  # belt and braces: the pre-filter already guarantees it
            {"$project": {"_id": 1, "score": {"$meta": "vectorSearchScore"}}},
        ]
        self.stats["atlas_searches"] += 1
        # For cosine, Atlas reports (1 + cosine) / 2; map it back so scores compare with the numpy path.
        return [(doc["_id"], 2.0 * float(doc["score"]) - 1.0) for doc in self.store.memories.aggregate(pipeline)]


def _check_kinds(kinds: Any) -> tuple[str, ...]:
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    if not kinds or any(kind not in KINDS for kind in kinds):
        raise ValueError(f"kinds must be a non-empty subset of {KINDS}, got {kinds!r}")
    return kinds


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _top(scores: np.ndarray, n: int, updated_s: np.ndarray) -> list[int]:
    """Rows of the `n` highest finite scores, best first (ties: more recent first)."""
    finite = np.isfinite(scores)
    if not finite.any():
        return []
    candidates = np.flatnonzero(finite)
    if len(candidates) > n:
        part = np.argpartition(-scores[candidates], n - 1)[:n]
        candidates = candidates[part]
    order = np.lexsort((-updated_s[candidates], -scores[candidates]))
    return [int(r) for r in candidates[order]]


def _recency(age_s: np.ndarray, half_life_days: float | None) -> np.ndarray:
    """0.5 ** (age / half-life) per item (ages in seconds, negative counts as 0); 1.0 when no half-life is set."""
    age_s = np.asarray(age_s, dtype=np.float64)
    if not half_life_days:
        return np.ones_like(age_s)
    return 0.5 ** (np.maximum(age_s, 0.0) / (float(half_life_days) * 86_400.0))


# ---------------------------------------------------------------------------- into the prompt

_TAG = re.compile(r"<\s*/?\s*(?:remembered_memories|conversation_summary)\s*>", re.I)


def _line(hit: Hit) -> str:
    """`[2026-11-29] The user lives in Denver.` (episodes flattened to one line)."""
    date = hit.date.strftime("%Y-%m-%d") if hit.date else "????-??-??"
    text = _TAG.sub("[tag removed]", " ".join(hit.text.split()))
    label = " (from a conversation)" if hit.kind == "episode" else ""
    return f"[{date}]{label} {text}"


def format_memories(hits: list[Hit], *, order: str = "date") -> str:
    """The block injected into the system prompt, one dated line per memory, marked as data ("" for no hits).

    order="date" lists oldest first, so newer statements come last and win; "given" keeps the order passed.
    """
    if not hits:
        return ""
    if order == "date":
        hits = sorted(hits, key=lambda h: (h.date or datetime.min.replace(tzinfo=timezone.utc), h.id))
    elif order != "given":
        raise ValueError(f"order must be 'date' or 'given', got {order!r}")
    return prompts.MEMORY_OPEN + "\n".join(_line(h) for h in hits) + prompts.MEMORY_CLOSE


def pack(hits: list[Hit], budget_tokens: int, count: Callable[[str], int] | None = None) -> list[Hit]:
    """The best hits (in the order given) whose `format_memories` block fits `budget_tokens`.

    Greedy: take each hit if it still fits, skip it otherwise (a shorter, lower-ranked one may fit).
    `count` counts tokens (default: the offline model's local BPE); the returned block is verified
    with it, so `count(format_memories(packed)) <= budget_tokens` always holds.
    """
    if count is None:
        from .offline_model import count_text_tokens as count
    if budget_tokens <= 0 or not hits:
        return []
    frame = count(prompts.MEMORY_OPEN + prompts.MEMORY_CLOSE)
    used, chosen = frame, []
    for hit in hits:
        cost = count(_line(hit)) + 1  # + the newline that joins it
        if used + cost <= budget_tokens:
            chosen.append(hit)
            used += cost
    while chosen and count(format_memories(chosen)) > budget_tokens:  # BPE is not exactly additive
        chosen.pop()
    return chosen


def retrieve_block(index: MemoryIndex, user_id: str, query: str, budget_tokens: int, *, k: int = 8,
                   mode: str = "hybrid", count: Callable[[str], int] | None = None,
                   now: datetime | None = None) -> tuple[str, list[Hit]]:
    """One turn's retrieval: search → pack into the budget → the system-prompt block (and the hits used)."""
    hits = pack(index.search(user_id, query, k=k, mode=mode, now=now), budget_tokens, count)
    return format_memories(hits), hits


# ---------------------------------------------------------------------------- benchmark

_PEOPLE = ["Maya", "Jonah", "Priya", "Luis", "Hana", "Omar", "Grace", "Tomas", "Aiko", "Elena", "Kofi", "Zara"]
_PLACES = ["Santa Monica", "Pasadena", "Malibu", "Echo Park", "Denver", "Tokyo", "Lisbon", "Austin", "Seattle",
           "Venice Beach", "Silver Lake", "Griffith Park", "Joshua Tree", "San Diego", "Portland", "Chicago"]
_THINGS = ["tacos", "sushi", "ramen", "jazz", "hiking", "surfing", "pottery", "chess", "cycling", "espresso",
           "board games", "vinyl records", "yoga", "climbing", "photography", "gardening"]
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_FACT_TEMPLATES = [
    "The user's friend {p} loves {t}.",
    "The user visited {l} in {m}.",
    "The user's sister {p} lives in {l}.",
    "The user wants to try {t} in {l}.",
    "The user booked flight {c} to {l} for {m} {d}.",
    "The user's colleague {p} recommended {t}.",
    "The user has a dentist appointment on {m} {d}.",
    "The user paid {n} dollars for {t} lessons.",
]
_EPISODE_TEMPLATES = [
    "User: We went to {l} with {p} and had {t}.\nAssistant: That sounds lovely; {l} is great for {t}.",
    "User: My confirmation code for {l} is {c}.\nAssistant: Noted, the code for {l} is {c}.",
    "User: Remind me that {p} arrives on {m} {d}.\nAssistant: I'll remember that {p} arrives on {m} {d}.",
]
_QUERY_TEMPLATES = [
    "Where does my sister live?", "What did {p} recommend?", "When is my dentist appointment?",
    "Which flight did I book to {l}?", "What should I do in {l}?", "Who loves {t}?", "flight {c}",
    "What's my confirmation code for {l}?", "When does {p} arrive?", "How much did I pay for {t} lessons?",
]


def _fill(template: str, rng: np.random.Generator) -> str:
    pick = lambda seq: seq[int(rng.integers(len(seq)))]  # noqa: E731
    return template.format(p=pick(_PEOPLE), l=pick(_PLACES), t=pick(_THINGS), m=pick(_MONTHS),
                           d=int(rng.integers(1, 29)), n=int(rng.integers(20, 400)),
                           c=f"{pick(['UA', 'DL', 'AA', 'AS', 'B6'])}{int(rng.integers(100, 9999))}")


def _percentiles(samples: list[float]) -> dict:
    data = np.asarray(samples, dtype=np.float64)
    return {"p50": round(float(np.percentile(data, 50)), 3), "p95": round(float(np.percentile(data, 95)), 3),
            "mean": round(float(data.mean()), 3), "max": round(float(data.max()), 3)}


def run_retrieval_benchmark(memories: int = 10_000, queries: int = 200, *, store: "Store | None" = None,
                            embedder: "Embedder | None" = None, settings: "Settings | None" = None,
                            distinct: int = 400, others: int | None = None, k: int = 5, seed: int = 0,
                            keep: bool = False, progress: Callable[[str], None] | None = None) -> dict:
    """Time `search` at `memories` memories for one user (plus other users' memories) in a throwaway database.

    Fills a fresh database (on `store`'s server, default: `open_store(settings)`) and drops it afterwards
    unless `keep`. To keep the fill fast, only `distinct` texts are embedded; the other memories reuse
    those vectors plus small Gaussian noise (renormalised). Each query's time includes embedding it.
    """
    from .embeddings import get_embedder
    from .store import open_store

    say = progress or (lambda message: None)
    rng = np.random.default_rng(seed)
    owned = store is None
    if owned:
        from .config import load_settings

        base = open_store(settings or load_settings())
    else:
        base = store
    bench_store = base.with_db(f"bench_retrieval_{uuid.uuid4().hex[:10]}")
    embedder = embedder or get_embedder()
    others = memories // 10 if others is None else others
    try:
        index = MemoryIndex(bench_store, embedder)
        started = time.perf_counter()
        user = "bench-user"
        owners = [user] * memories + [f"bench-other-{i % 3}" for i in range(others)]
        templates = _FACT_TEMPLATES + _EPISODE_TEMPLATES
        texts = [_fill(templates[int(rng.integers(len(templates)))], rng) for _ in owners]
        distinct = max(1, min(distinct, len(texts)))
        say(f"embedding {distinct} distinct texts ...")
        base_vectors = embedder.embed(texts[:distinct])
        now = _now()
        docs = []
        for i, (owner, text) in enumerate(zip(owners, texts)):
            vector = base_vectors[i % distinct]
            if i >= distinct:
                vector = vector + rng.normal(0.0, 0.01, size=vector.shape).astype(np.float32)
                vector /= np.linalg.norm(vector)
            kind = "episode" if text.startswith("User:") else "fact"
            doc = index.new_doc(owner, kind, text, vector, {"session_id": f"s{i % 97}", "seq": i},
                                now=now - timedelta(seconds=int(rng.integers(0, 365 * 86_400))))
            docs.append(doc)
        say(f"inserting {len(docs):,} memories ...")
        for start in range(0, len(docs), 1000):
            bench_store.memories.insert_many(docs[start:start + 1000], ordered=False)
        mine = {doc["_id"] for doc in docs if doc["user_id"] == user}
        fill_s = time.perf_counter() - started

        load_started = time.perf_counter()
        index.search(user, "warm up", k=k)  # first search loads the user's cache
        cold_ms = (time.perf_counter() - load_started) * 1000
        query_texts = [_fill(_QUERY_TEMPLATES[i % len(_QUERY_TEMPLATES)], rng) for i in range(queries)]
        timings: dict[str, list[float]] = {name: [] for name in ("embed", "hybrid", "vector", "lexical",
                                                                 "hybrid_search_only")}
        violations = 0
        say(f"timing {queries} queries ...")
        for text in query_texts:
            t0 = time.perf_counter()
            vector = embed_query(embedder, text)
            timings["embed"].append((time.perf_counter() - t0) * 1000)
            for mode in ("hybrid", "vector", "lexical"):
                t0 = time.perf_counter()
                hits = index.search(user, text, k=k, mode=mode)
                timings[mode].append((time.perf_counter() - t0) * 1000)
                violations += sum(ObjectId(h.id) not in mine for h in hits)
            t0 = time.perf_counter()
            index.search(user, text, k=k, query_vector=vector)
            timings["hybrid_search_only"].append((time.perf_counter() - t0) * 1000)
        results = {name: _percentiles(values) for name, values in timings.items()}
        return {
            "store": bench_store.describe(), "store_kind": bench_store.kind, "backend": index.vector_backend,
            "embedder": embedder.name, "memories": memories, "other_users_memories": others, "queries": queries,
            "k": k, "distinct_embedded": distinct,
            "note": (f"{distinct} distinct texts were embedded; the other {len(docs) - distinct:,} memories reuse "
                     "those vectors plus Gaussian noise (sigma 0.01 per dimension, renormalised). Query times "
                     "include embedding the query, except hybrid_search_only."),
            "fill_s": round(fill_s, 2), "cold_load_ms": round(cold_ms, 1), "ms": results,
            "target_p95_ms": 20.0, "meets_target": results["hybrid"]["p95"] <= 20.0,
            "isolation_violations": violations,
        }
    finally:
        if not keep:
            bench_store.client.drop_database(bench_store.db.name)
        if owned:
            base.close()
