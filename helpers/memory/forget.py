"""Forget a user everywhere: memories, facts, logs, sessions and the index's cache. Taught in further/04_memory_in_production, section 'Forget me'.

`forget_user(store, user_id)` is the one call behind "delete everything you know about me" and the terminal
chat's `--forget-user`. It deletes the user's documents from *every* collection of the store's database (not a
hard-coded list, so a collection added later cannot keep a copy), after dropping the user from the in-process
caches of the given indexes, and removes the user's search index file on this machine. A process holding the user
drops them at its next request (their revision document is gone: helpers.retrieval.changes). Facts are `memories`
documents of kind "fact", so they go with the memories; the memory tool's files and their audit trail
(`memory_files`, `memory_audit`: helpers/memory_tool) go the same way.
Other users' documents are never touched: every delete is filtered by `user_id`.

Deleting is not yet erasing: a database keeps copies of what it deleted (its journal and data files, a replica
set's oplog, backups). `--forget-user` therefore also rewrites the local server's files (helpers.db.scrub), and on
MONGODB_URI says what the operator must do; a running chat of the user notices its session is gone and starts
afresh rather than write the user back (`BoundedMemory.forgotten`), and long-term memory (helpers.memory.long_term,
which takes `ErasureGuard`) writes an exchange's memories only while the session it came from exists, undoing a
write the erasure overtook.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from helpers.retrieval.schema import check_user_id
from helpers.retrieval.snapshot import remove_user_files

__all__ = ["forget_user", "documents_of", "ErasureGuard"]


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
    # Sessions first: a chat of this user running elsewhere sees its session gone at its next step and starts
    # afresh instead of writing the user back (helpers.memory.bounded); a second pass takes what it wrote meanwhile.
    names = sorted(store.db.list_collection_names(), key=lambda name: (name != "sessions", name))
    deleted = dict.fromkeys(names, 0)
    for _ in range(2):
        for name in names:
            deleted[name] += store.db[name].delete_many({"user_id": user_id}).deleted_count
    remove_user_files(store, user_id)  # the search index file on this machine (helpers.retrieval.snapshot)
    return {"user_id": user_id, "deleted": deleted, "total": sum(deleted.values())}


class ErasureGuard:
    """LongTermMemory's guard against writing an erased user back (it sets `memory`, `index`, `facts`, `_retry`)."""

    def _written_while_alive(self, life: Any, seqs: list, write: Callable[[], Any]) -> bool:
        """Run `write` (this session's memories for log entries `seqs`) only while the session of `life` exists,
        and undo it if the user was erased meanwhile. False when nothing was (or stays) written."""
        memory = self.memory
        if not memory.alive(life):
            memory.stats["memory_erased"] = memory.stats.get("memory_erased", 0) + 1
            return False
        write()
        if memory.alive(life):
            return True
        seqs = [s for s in seqs if s is not None]
        written = {"user_id": memory.user_id, "source.session_id": memory.session_id, "source.seq": {"$in": seqs}}
        index = self.index if self.index is not None else getattr(self.facts, "index", None)
        if index is not None:  # announced in the user's change log: every process drops them at its next request
            index.delete(memory.user_id, [doc["_id"] for doc in memory.store.memories.find(written, {"_id": 1})])
        else:
            memory.store.memories.delete_many(written)
        self.forgotten()
        memory.stats["memory_erased"] = memory.stats.get("memory_erased", 0) + 1
        return False

    def forgotten(self) -> None:
        """The session was erased while this process ran: drop the retries, the last ranking and the index's cache
        of the user, so nothing erased is retrieved or written back."""
        self._retry.clear()
        self.ranked = []
        for index in {id(i): i for i in (self.index, getattr(self.facts, "index", None)) if i is not None}.values():
            index.invalidate(self.memory.user_id)
