"""Atlas `$vectorSearch`: detect it, create its index, rank with it. Plumbing for 05_vector_memory, section 'Extraction → storage → retrieval → injection'.

The local SecantusDB server, mongomock and a plain mongod have no `$vectorSearch`; there
`MemoryIndex` ranks by exact cosine in numpy instead, and nothing here is used.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np
from bson import ObjectId
from pymongo.errors import OperationFailure, PyMongoError
from pymongo.operations import SearchIndexModel

from helpers.config import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from helpers.db.store import Store

__all__ = ["VECTOR_INDEX_NAME", "supports_vector_search", "vector_index_ready", "create_vector_index", "atlas_rank"]

VECTOR_INDEX_NAME = "memory_vector"
_VECTOR_SUPPORT: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()
_INDEX_READY: weakref.WeakKeyDictionary[Any, tuple[bool, float]] = weakref.WeakKeyDictionary()
_CAPS_LOCK = threading.Lock()
_NAMESPACE_NOT_FOUND = 26


def supports_vector_search(store: Store) -> bool:
    """Whether the server runs Atlas Search stages (`$listSearchIndexes`), probed once per store and cached.

    MongoDB Atlas and mongodb/mongodb-atlas-local do; the local SecantusDB server, mongomock and a plain
    mongod answer with an error, and this returns False. A connection error is raised, not cached.
    """
    if store.kind != "uri":  # the local SecantusDB server and mongomock: no Atlas Search, and SecantusDB would read
        return False  # the whole collection before saying so (seconds at 50,000 memories)
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


def vector_index_ready(store: Store, recheck_s: float = 30.0) -> bool:
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


def create_vector_index(
    store: Store, *, dim: int = 384, similarity: str = "cosine", wait: bool = True, timeout_s: float = 180.0
) -> str:
    """Create (or update) the Atlas Vector Search index on `memories.embedding` with user_id/kind/active filters.

    Idempotent. Needs MongoDB Atlas or mongodb/mongodb-atlas-local (`docker compose up -d`); the local
    SecantusDB server and mongomock rank in numpy instead and raise ConfigError here. With `wait`, blocks
    until the index is queryable.
    """
    if not supports_vector_search(store):
        raise ConfigError(
            f"{store.describe()} has no Atlas Vector Search: point MONGODB_URI at MongoDB Atlas or at "
            "mongodb/mongodb-atlas-local (`docker compose up -d`). Without it, search ranks in numpy."
        )
    definition = {
        "fields": [
            {"type": "vector", "path": "embedding", "numDimensions": int(dim), "similarity": similarity},
            {"type": "filter", "path": "user_id"},
            {"type": "filter", "path": "kind"},
            {"type": "filter", "path": "active"},
        ]
    }
    collection = store.memories
    existing = list(collection.list_search_indexes(VECTOR_INDEX_NAME))
    if not existing:
        collection.create_search_index(
            SearchIndexModel(definition=definition, name=VECTOR_INDEX_NAME, type="vectorSearch")
        )
    elif _field_keys(existing[0].get("latestDefinition", {}).get("fields")) != _field_keys(definition["fields"]):
        collection.update_search_index(VECTOR_INDEX_NAME, definition)  # only on a real change: it rebuilds
    deadline = time.monotonic() + timeout_s
    while wait:
        found = list(collection.list_search_indexes(VECTOR_INDEX_NAME))
        if found and found[0].get("queryable") and found[0].get("status") in (None, "READY"):
            break
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"vector index {VECTOR_INDEX_NAME!r} not queryable after {timeout_s:.0f} s "
                f"(status {found[0].get('status') if found else 'missing'}); try again later"
            )
        time.sleep(1.0)
    with _CAPS_LOCK:
        _INDEX_READY.pop(store, None)
    return VECTOR_INDEX_NAME


def _field_keys(fields: Any) -> set:
    """What matters in a vector index definition (the server adds defaults we do not compare)."""
    return {(f.get("type"), f.get("path"), f.get("numDimensions"), f.get("similarity")) for f in fields or []}


def atlas_rank(
    store: Store, user_id: str, vector: np.ndarray, kinds: tuple[str, ...], limit: int
) -> list[tuple[ObjectId, float]]:
    """($vectorSearch) ids and cosines of the user's closest active memories, pre-filtered by user_id."""
    pipeline = [
        {
            "$vectorSearch": {
                "index": VECTOR_INDEX_NAME,
                "path": "embedding",
                "queryVector": [float(x) for x in np.asarray(vector, dtype=np.float32)],
                "numCandidates": min(10_000, max(100, 20 * limit)),
                "limit": limit,
                "filter": {
                    "$and": [{"user_id": {"$eq": user_id}}, {"kind": {"$in": list(kinds)}}, {"active": {"$eq": True}}]
                },
            }
        },
        {"$match": {"user_id": user_id}},  # belt and braces: the pre-filter already guarantees it
        {"$project": {"_id": 1, "score": {"$meta": "vectorSearchScore"}}},
    ]
    # For cosine, Atlas reports (1 + cosine) / 2; map it back so scores compare with the numpy path.
    return [(doc["_id"], 2.0 * float(doc["score"]) - 1.0) for doc in store.memories.aggregate(pipeline)]
