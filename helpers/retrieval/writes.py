"""Writing memories through a `MemoryIndex`: the document, insert, update, touch, forget, delete; episodes and turns. Taught in 05_vector_memory, section 'Extraction → storage → retrieval → injection'.

`MemoryIndex` (helpers/retrieval/index.py) takes these as a mixin; helpers.memory.facts stores its facts through
them. Every write goes to the `memories` collection and, when the user's rows are cached, into the cache too, so a
search right after sees it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

import numpy as np
from bson import ObjectId

from helpers.db.crash import crash_point
from helpers.retrieval.cache import PROJECTION
from helpers.retrieval.schema import (
    KINDS,
    TurnUnit,
    as_utc,
    check_source,
    check_user_id,
    content_hash,
    encode_vector,
    episode_text,
    turn_text,
    utc_now,
)

__all__ = ["MemoryWrites"]


class MemoryWrites:
    """The writes of `MemoryIndex`. A mixin: it uses the store, embedder, TTL, lock and per-user cache the index sets up."""

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
        return self.insert_batch(check_user_id(doc.get("user_id")), [doc])[0]

    def insert_batch(self, user_id: str, docs: list[dict]) -> list[str]:
        """Store memory documents of one user in one ordered insert, announced in the change log first
        (helpers.retrieval.changes), and add them to the cache; returns their ids."""
        user_id = check_user_id(user_id)
        if any(doc.get("user_id") != user_id for doc in docs):
            raise ValueError(f"insert_batch stores one user's memories: every document needs user_id={user_id!r}")
        if not docs:
            return []
        for doc in docs:
            doc.setdefault("_id", ObjectId())
        with self._lock:
            epoch, first, last = self.cache.announce(user_id, [doc["_id"] for doc in docs], "put")
            for doc in docs:
                doc["rev"] = last
            crash_point("index:announced")
            self.store.memories.insert_many(docs, ordered=True)
            rows = self.cache.peek(user_id)
            if rows is not None:
                for doc in docs:
                    rows.upsert(doc)
            self.cache.wrote(user_id, epoch, first, last)
        return [str(doc["_id"]) for doc in docs]

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
            epoch, first, last = self.cache.announce(user_id, object_ids, "put")
            update["$set"]["rev"] = last
            matched = self.store.memories.update_many(query, update).matched_count
            rows = self.cache.peek(user_id)
            if rows is not None:
                for doc in self.store.memories.find({"_id": {"$in": object_ids}, "user_id": user_id}, PROJECTION):
                    rows.upsert(doc)
            self.cache.wrote(user_id, epoch, first, last)
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

    def delete(self, user_id: str, ids: Iterable[str | ObjectId]) -> int:
        """Delete some of the user's memories for good (announced first: every process drops them at its next
        read); returns how many were deleted."""
        user_id = check_user_id(user_id)
        object_ids = [ObjectId(i) for i in ids]
        if not object_ids:
            return 0
        with self._lock:
            epoch, first, last = self.cache.announce(user_id, object_ids, "del")
            deleted = self.store.memories.delete_many({"_id": {"$in": object_ids}, "user_id": user_id}).deleted_count
            rows = self.cache.peek(user_id)
            if rows is not None:
                for _id in object_ids:
                    row = rows.row_of(_id)
                    if row is not None and row not in rows.erased:
                        rows.erase(row)
            self.cache.wrote(user_id, epoch, first, last)
        return deleted

    def delete_user(self, user_id: str) -> int:
        """Delete every memory of one user (the right to be forgotten), then their revision document and index
        file: every process drops what it holds of them at its next read. Returns how many memories."""
        user_id = check_user_id(user_id)
        with self._lock:
            deleted = self.store.memories.delete_many({"user_id": user_id}).deleted_count
            self.cache.erase(user_id)
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
        return self.insert_batch(user_id, docs)
