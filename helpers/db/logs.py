"""Plumbing: the append-only log of a session: one document per message, numbered by `seq`, with a status.

`Store` (helpers/db/store.py) takes these as a mixin. `append_log` numbers a message max+1 within its session,
unique and gap-free under concurrent writers (a unique index, a retry on collision); `append_logs` writes many in
one insert; `set_log_status` marks entries pending, ok, unanswered or unsummarised.
"""

from __future__ import annotations

import random
import time
from typing import Any

from pymongo import ASCENDING, DESCENDING
from pymongo.errors import BulkWriteError, DuplicateKeyError

from helpers.db.checks import BSON_MAX_DEPTH, RESERVED, check_fields, check_int, check_storable, now_ms
from helpers.db.server import StoreError

__all__ = ["SessionLogs", "LOG_FIELDS", "SEQ_ATTEMPTS"]

SEQ_ATTEMPTS = 50  # append_log retries when a concurrent writer took the same seq
LOG_FIELDS = frozenset({"seq", "role", "content", "tokens", "status", "reply_to", "error"})


class SessionLogs:
    """The log primitives of `Store`. A mixin: it uses the store's `logs` collection, `_key` and seq cache."""

    def _max_seq(self, key: dict, hint: int | None) -> int:
        """Highest seq in the session (0 if none). With a hint, scan only seq >= hint (same answer, faster)."""
        projection = {"seq": 1, "_id": 0}
        if hint:
            doc = self.logs.find_one({**key, "seq": {"$gte": hint}}, projection, sort=[("seq", DESCENDING)])
            if doc:
                return doc["seq"]
        doc = self.logs.find_one(key, projection, sort=[("seq", DESCENDING)])
        return doc["seq"] if doc else 0

    def append_log(
        self,
        user_id: str,
        session_id: str,
        role: str,
        content: Any,
        *,
        tokens: int | None = None,
        status: str = "ok",
        reply_to: int | None = None,
        extra: dict | None = None,
    ) -> int:
        """Append one message with seq = max+1 (unique, gap-free under concurrent writers); return the seq."""
        key = self._key(user_id, session_id)
        if not isinstance(role, str) or not isinstance(status, str):
            raise ValueError(f"role and status must be str, got {role!r}, {status!r}")
        check_int("tokens", tokens, optional=True)
        check_int("reply_to", reply_to, optional=True)
        more = check_fields("extra", extra, RESERVED | LOG_FIELDS)
        check_storable("content", content, BSON_MAX_DEPTH - 1)  # a field of the log document
        cache_key = (user_id, session_id)
        for attempt in range(SEQ_ATTEMPTS):
            seq = self._max_seq(key, self._last_seq.get(cache_key)) + 1
            doc = {
                "user_id": user_id,
                "session_id": session_id,
                "seq": seq,
                "role": role,
                "content": content,
                "tokens": tokens,
                "status": status,
                "reply_to": reply_to,
                "created_at": now_ms(),
                "error": None,
                **more,
            }
            try:
                self.logs.insert_one(doc)
            except DuplicateKeyError:  # a concurrent writer took this seq: back off (jittered), re-read the max
                time.sleep(random.uniform(0, min(0.05, 0.001 * 2**attempt)))  # so a starved writer gets a turn
                continue
            if len(self._last_seq) > 10_000:
                self._last_seq.clear()
            self._last_seq[cache_key] = seq
            return seq
        raise StoreError(
            f"append_log gave up after {SEQ_ATTEMPTS} seq collisions for "
            f"user {user_id!r} session {session_id!r}; too many concurrent writers?"
        )

    def append_logs(self, user_id: str, session_id: str, entries: list[dict], *, status: str = "ok") -> list[int]:
        """Append many messages ({role, content, tokens?, extra?}) in one ordered insert; return their seqs.

        Same seqs as one `append_log` each (max+1, gap-free): if a concurrent writer takes a seq first, the
        entries not yet written fall back to `append_log` one by one, so none is lost or written twice.
        """
        key = self._key(user_id, session_id)
        docs = []
        for entry in entries:
            role, tokens = entry.get("role"), entry.get("tokens")
            if not isinstance(role, str):
                raise ValueError(f"role must be a str, got {role!r}")
            check_int("tokens", tokens, optional=True)
            more = check_fields("extra", entry.get("extra"), RESERVED | LOG_FIELDS)
            check_storable("content", entry.get("content"), BSON_MAX_DEPTH - 1)
            docs.append(
                {
                    "user_id": user_id,
                    "session_id": session_id,
                    "role": role,
                    "content": entry.get("content"),
                    "tokens": tokens,
                    "status": status,
                    "reply_to": None,
                    "error": None,
                    **more,
                }
            )
        if not docs:
            return []
        first = self._max_seq(key, self._last_seq.get((user_id, session_id))) + 1
        now = now_ms()
        for i, doc in enumerate(docs):
            doc.update(seq=first + i, created_at=now)
        try:
            self.logs.insert_many(docs, ordered=True)
            written = len(docs)
        except BulkWriteError as err:
            written = int(err.details.get("nInserted", 0))
        seqs = [first + i for i in range(written)]
        if written:
            self._last_seq[(user_id, session_id)] = seqs[-1]
        for doc in docs[written:]:  # a concurrent writer got in between: one at a time from here
            extra = {k: v for k, v in doc.items() if k not in RESERVED | LOG_FIELDS}
            seqs.append(
                self.append_log(
                    user_id, session_id, doc["role"], doc["content"], tokens=doc["tokens"], status=status, extra=extra
                )
            )
        return seqs

    def set_log_status(
        self,
        user_id: str,
        session_id: str,
        seqs: list[int],
        status: str,
        *,
        error: str | None = None,
        only_if_status: str | None = None,
    ) -> int:
        """Set status (and error, None clears it) on those seqs, optionally only where status matches; count matched."""
        key = self._key(user_id, session_id)
        seqs = [check_int("seq", s) for s in seqs]
        if not isinstance(status, str):
            raise ValueError(f"status must be a str, got {status!r}")
        if not seqs:
            return 0
        query = {**key, "seq": {"$in": seqs}}
        if only_if_status is not None:
            if not isinstance(only_if_status, str):
                raise ValueError(f"only_if_status must be a str, got {only_if_status!r}")
            query["status"] = only_if_status
        return self.logs.update_many(query, {"$set": {"status": status, "error": error}}).matched_count

    def logs_for(self, user_id: str, session_id: str) -> list[dict]:
        """Every log entry of the session, ordered by seq (without `_id`)."""
        return list(self.logs.find(self._key(user_id, session_id), {"_id": 0}).sort("seq", ASCENDING))

    def count_logs(self, user_id: str, session_id: str) -> int:
        """How many log entries the session has."""
        return self.logs.count_documents(self._key(user_id, session_id))
