"""Sessions, logs and memories in your MongoDB, a local SecantusDB server, or mongomock. Plumbing for 04_bounded_memory_mongodb, "Setup".

`open_store()` resolves the connection: MONGODB_URI if set, else the local SecantusDB server
(helpers.db.server starts it on demand, one per data dir), else mongomock with a loud warning.
Terminal: `python -m helpers.db.server status|start|stop` (or `python -m helpers.db.store ...`).
"""

from __future__ import annotations

import random
import re
import sys
import time
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pymongo import ASCENDING, DESCENDING, MongoClient, ReturnDocument
from pymongo.errors import BulkWriteError, DuplicateKeyError, PyMongoError

from helpers.config import Settings, load_settings
from helpers.db.redact import HIDDEN, redact_uri, scrub_secrets
from helpers.db.server import StoreError, StoreUnavailable, ensure_local_server, main, server_data_path, server_log_path

__all__ = [
    "Store",
    "StoreError",
    "StoreUnavailable",
    "StoreWarning",
    "open_store",
    "mongomock_store",
    "short_reason",
]

URI_TIMEOUT_MS = 5000  # serverSelectionTimeoutMS for MONGODB_URI unless the URI sets one
SEQ_ATTEMPTS = 50  # append_log retries when a concurrent writer took the same seq
_RESERVED = frozenset({"_id", "user_id", "session_id", "version", "created_at", "updated_at"})
_LOG_FIELDS = frozenset({"seq", "role", "content", "tokens", "status", "reply_to", "error"})


class StoreWarning(UserWarning):
    """Raised as a warning when the store falls back to mongomock and nothing will persist."""


# ---------------------------------------------------------------------------
# The Store: connection + sessions + logs
# ---------------------------------------------------------------------------


def _check_id(name: str, value: Any) -> str:
    """Ids are non-empty str; anything else (a dict like {'$ne': None}) never reaches a query."""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a str, got {type(value).__name__}: {value!r}")
    if not value:
        raise ValueError(f"{name} must be a non-empty string")
    return value


def _check_int(name: str, value: Any, optional: bool = False) -> int | None:
    if value is None and optional:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{name} must be an int, got {type(value).__name__}: {value!r}")
    return value


def _check_fields(name: str, fields: Any, reserved: frozenset) -> dict:
    if fields is None:
        return {}
    if not isinstance(fields, dict):
        raise ValueError(f"{name} must be a dict, got {type(fields).__name__}")
    for key in fields:
        if not isinstance(key, str) or not key or key.startswith("$") or "." in key:
            raise ValueError(f"{name} keys must be plain field names (no '$' prefix, no '.'), got {key!r}")
        if key in reserved:
            raise ValueError(f"{name} may not set {key!r}; the store manages {sorted(reserved)}")
    return dict(fields)


def _now() -> datetime:
    """UTC now, truncated to milliseconds as BSON stores it (so returned docs equal re-loaded ones)."""
    now = datetime.now(timezone.utc)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


@dataclass(eq=False)
class Store:
    """A database plus the sessions/logs primitives the memory layer composes. Taught in 04_bounded_memory_mongodb."""

    client: Any = field(repr=False)
    db: Any = field(repr=False)
    kind: str = "mongomock"  # "uri" | "local" | "mongomock"
    uri: str | None = None  # redacted, for display only
    data_dir: Path | None = None  # local server data dir (kind == "local")
    _last_seq: dict = field(default_factory=dict, init=False, repr=False)

    def __repr__(self) -> str:
        return f"Store(kind={self.kind!r}, db={self.db.name!r}, uri={self.uri!r})"

    # -- description and collections ------------------------------------------------

    @property
    def persistent(self) -> bool:
        """False for mongomock: everything vanishes with the process."""
        return self.kind != "mongomock"

    def describe(self) -> str:
        """One line naming the store, for the top of every notebook."""
        if self.kind == "uri":
            return f"store: MongoDB at {self.uri} (database {self.db.name!r})"
        if self.kind == "local":
            address = re.sub(r"^mongodb://|/.*$", "", self.uri or "")
            where = server_data_path(self.data_dir) if self.data_dir else "?"
            return f"store: local SecantusDB server at {address} (database {self.db.name!r}, data in {where})"
        return "store: mongomock (in memory — nothing persists)"

    @property
    def sessions(self):
        """One document per (user_id, session_id): window, summary, version."""
        return self.db["sessions"]

    @property
    def logs(self):
        """Append-only, one document per message, numbered by seq within a session."""
        return self.db["logs"]

    @property
    def memories(self):
        """Long-term per-user memories (written by helpers.retrieval / helpers.memory.facts)."""
        return self.db["memories"]

    def ensure_indexes(self) -> None:
        """Create the unique/lookup indexes (idempotent); open_store calls it."""
        self.sessions.create_index(
            [("user_id", ASCENDING), ("session_id", ASCENDING)], unique=True, name="user_session"
        )
        self.logs.create_index(
            [("user_id", ASCENDING), ("session_id", ASCENDING), ("seq", ASCENDING)],
            unique=True,
            name="user_session_seq",
        )
        self.memories.create_index([("user_id", ASCENDING), ("created_at", ASCENDING)], name="user_created")

    def with_db(self, db_name: str) -> Store:
        """The same server and client, another database (indexes ensured); closing either closes both."""
        other = Store(self.client, self.client[_check_id("db_name", db_name)], self.kind, self.uri, self.data_dir)
        other.ensure_indexes()
        return other

    def close(self) -> None:
        """Close the client's connections."""
        self.client.close()

    def reconnect(self) -> bool:
        """After a connection failure: restart the local server if it died and point this store at it.

        True when the store now talks to a live local server (retry the operation); False for MONGODB_URI
        and mongomock stores, where there is nothing to restart (pymongo reconnects by itself).
        """
        if self.kind != "local" or self.data_dir is None:
            return False
        uri = ensure_local_server(self.data_dir)
        if uri != self.uri:  # restarted on another port: the old client can never reach it
            old, self.client = self.client, _local_client(uri)
            self.db, self.uri = self.client[self.db.name], uri
            self._last_seq.clear()
            old.close()
        return True

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sessions ---------------------------------------------------------------------

    @staticmethod
    def _key(user_id: str, session_id: str) -> dict:
        """The isolation filter every query starts from: both ids, literal equality."""
        # The ids are checked to be str, so plain equality is already literal: only a dict could be an
        # operator. Plain form, not {"$eq": ...}, because SecantusDB's planner uses the index only for it.
        return {"user_id": _check_id("user_id", user_id), "session_id": _check_id("session_id", session_id)}

    def load_session(self, user_id: str, session_id: str) -> dict | None:
        """The session document (without `_id`), or None if there is none."""
        return self.sessions.find_one(self._key(user_id, session_id), {"_id": 0})

    def create_session(self, user_id: str, session_id: str, fields: dict | None = None) -> dict:
        """Insert version 0 (window [], summary '' unless `fields` say otherwise); if it exists, return that."""
        key = self._key(user_id, session_id)
        now = _now()
        doc = {
            "user_id": user_id,
            "session_id": session_id,
            "version": 0,
            "window": [],
            "summary": "",
            "created_at": now,
            "updated_at": now,
            **_check_fields("fields", fields, _RESERVED),
        }
        try:
            self.sessions.insert_one(doc)
        except DuplicateKeyError:  # another writer created it first: theirs wins
            existing = self.sessions.find_one(key, {"_id": 0})
            if existing is None:
                raise
            return existing
        doc.pop("_id", None)
        return doc

    def save_session(self, user_id: str, session_id: str, expected_version: int, fields: dict) -> dict | None:
        """Set `fields` and bump version iff it is still `expected_version`; the new doc, or None on conflict."""
        query = {**self._key(user_id, session_id), "version": _check_int("expected_version", expected_version)}
        update = {"$set": {**_check_fields("fields", fields, _RESERVED), "updated_at": _now()}, "$inc": {"version": 1}}
        # No {"_id": 0} projection here: mongomock then re-reads by the (now stale) version filter and finds nothing.
        doc = self.sessions.find_one_and_update(query, update, return_document=ReturnDocument.AFTER)
        if doc is not None:
            doc.pop("_id", None)
        return doc

    def delete_session(self, user_id: str, session_id: str) -> bool:
        """Delete the session document (its logs stay: they are append-only); True if one was deleted."""
        return self.sessions.delete_one(self._key(user_id, session_id)).deleted_count == 1

    # -- logs -------------------------------------------------------------------------

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
        _check_int("tokens", tokens, optional=True)
        _check_int("reply_to", reply_to, optional=True)
        more = _check_fields("extra", extra, _RESERVED | _LOG_FIELDS)
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
                "created_at": _now(),
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
            _check_int("tokens", tokens, optional=True)
            more = _check_fields("extra", entry.get("extra"), _RESERVED | _LOG_FIELDS)
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
        now = _now()
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
            extra = {k: v for k, v in doc.items() if k not in _RESERVED | _LOG_FIELDS}
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
        seqs = [_check_int("seq", s) for s in seqs]
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


# -- connection resolution --------------------------------------------------


def mongomock_store(db_name: str = "test") -> Store:
    """An in-memory mongomock Store for fast unit tests (no warning, nothing persists)."""
    import mongomock  # only tests and the fallback need it: importing helpers.db.store stays ~0.15 s cheaper

    client = mongomock.MongoClient(tz_aware=True)
    store = Store(client, client[db_name], "mongomock", None, None)
    store.ensure_indexes()
    return store


def short_reason(exc: BaseException) -> str:
    """The first, human part of a pymongo error (drop the topology dump)."""
    text = str(exc).split(", Timeout:")[0].split("Topology Description:")[0]
    return text.strip().rstrip(",")[:300]


def _open_uri(uri: str, db_name: str) -> Store:
    shown = redact_uri(uri)
    options: dict[str, Any] = {"tz_aware": True, "appname": "goldfish-to-elephant"}
    if "serverselectiontimeoutms" not in uri.lower():
        options["serverSelectionTimeoutMS"] = URI_TIMEOUT_MS
    try:  # a URI whose credentials the driver cannot split never reaches it (it would look part of them up in DNS)
        if shown.endswith("://" + HIDDEN):
            raise ValueError("its user or password has an unescaped '@', ':', '/', '?' or '%': percent-encode it")
        client: MongoClient = MongoClient(uri, **options)
    except (PyMongoError, ValueError, TypeError) as exc:  # pymongo raises ValueError for some malformed URIs
        raise StoreUnavailable(
            f"MONGODB_URI is not a usable connection string ({shown}): {scrub_secrets(short_reason(exc), uri)}. "
            "Fix it in .env or the environment, or unset MONGODB_URI to use the local "
            "SecantusDB server."
        ) from None
    try:
        client.admin.command("ping")
    except PyMongoError as exc:
        client.close()
        raise StoreUnavailable(
            f"Cannot reach the MongoDB server in MONGODB_URI ({shown}): {scrub_secrets(short_reason(exc), uri)}. Start it "
            "(`docker compose up -d` runs the bundled one), fix MONGODB_URI in .env or the environment, or unset "
            "MONGODB_URI to use the local SecantusDB server instead."
        ) from None
    store = Store(client, client[db_name], "uri", shown, None)
    store.ensure_indexes()
    return store


def _local_client(uri: str) -> MongoClient:
    """A client for the local server with writeConcern j=true: each write is in the server's journal on disk before
    it is acknowledged. Without it a killed server (SIGKILL) loses every write since its last checkpoint."""
    return MongoClient(uri, tz_aware=True, serverSelectionTimeoutMS=URI_TIMEOUT_MS, journal=True)


def open_store(settings: Settings | None = None, *, fallback: bool = True) -> Store:
    """MONGODB_URI's server, else the local SecantusDB server, else (loudly) mongomock. Taught in 04."""
    s = settings or load_settings()
    if s.mongodb_uri:
        return _open_uri(s.mongodb_uri, s.db_name)
    try:
        uri = ensure_local_server(s.data_dir)
    except StoreUnavailable as exc:
        if not fallback:
            if "helpers.db.server start" in str(exc):
                raise
            raise StoreUnavailable(
                f"{exc} Then check with `python -m helpers.db.server start` (log: {server_log_path(s.data_dir)})."
            ) from None
        reason = str(exc).splitlines()[0]
        message = (
            f"No persistent store: {reason} Falling back to mongomock, an IN-MEMORY stand-in: nothing "
            "will persist after this process ends. Fix: `python -m helpers.db.server start` (log: "
            f"{server_log_path(s.data_dir)}), or set MONGODB_URI."
        )
        print(f"WARNING: {message}", file=sys.stderr)
        warnings.warn(message, StoreWarning, stacklevel=2)
        return mongomock_store(s.db_name)
    client = _local_client(uri)
    store = Store(client, client[s.db_name], "local", uri, Path(s.data_dir))
    store.ensure_indexes()
    return store


if __name__ == "__main__":
    sys.exit(main())
