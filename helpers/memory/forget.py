"""Forget a user everywhere: memories, facts, logs, sessions and the index's cache. Taught in further/04_memory_in_production, section 'Forget me'.

`forget_user(store, user_id)` is the one call behind "delete everything you know about me" and the terminal
chat's `--forget-user`. It deletes the user's documents from *every* collection of the store's database (not a
hard-coded list, so a collection added later cannot keep a copy), after dropping the user from the in-process
caches of the given indexes. Facts are `memories` documents of kind "fact", so they go with the memories; the
memory tool's files and their audit trail (`memory_files`, `memory_audit`: helpers/memory_tool) go the same way.
Other users' documents are never touched: every delete is filtered by `user_id`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from helpers.retrieval.schema import check_user_id

__all__ = ["forget_user", "documents_of"]


def documents_of(store: Any, user_id: str) -> dict[str, int]:
    """How many documents of `user_id` each collection of the store's database holds (every collection)."""
    user_id = check_user_id(user_id)
    return {
        name: store.db[name].count_documents({"user_id": user_id}) for name in sorted(store.db.list_collection_names())
    }


def forget_user(store: Any, user_id: str, *, indexes: Iterable[Any] = (), memories: Iterable[Any] = ()) -> dict:
    """Erase `user_id` everywhere; returns {collection: documents deleted} and the total.

    `memories`: live memory objects (e.g. a VectorMemory) whose background fact work must finish first, so that
    no queued extraction writes the user back after the delete. `indexes`: MemoryIndex objects whose per-user
    cache (vectors and BM25 postings held in this process) must be dropped too; a memory's own index is included.
    """
    user_id = check_user_id(user_id)
    indexes = list(indexes)
    for memory in memories:
        long_term = getattr(memory, "long_term", memory)
        worker = getattr(long_term, "worker", None)
        if worker is not None:
            worker.drain()
        facts = getattr(long_term, "facts", None)
        indexes += [i for i in (getattr(long_term, "index", None), getattr(facts, "index", None)) if i is not None]
    for index in {id(i): i for i in indexes}.values():
        index.delete_user(user_id)  # memories collection + this process's cache of them
    deleted = {
        name: store.db[name].delete_many({"user_id": user_id}).deleted_count
        for name in sorted(store.db.list_collection_names())
    }
    return {"user_id": user_id, "deleted": deleted, "total": sum(deleted.values())}
