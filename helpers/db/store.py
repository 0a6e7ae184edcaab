"""Sessions, logs and memories in your MongoDB, a local SecantusDB server, or mongomock. Plumbing for 04_bounded_memory_mongodb, "Setup".

`open_store()` resolves the connection: MONGODB_URI if set, else the local SecantusDB server
(helpers.db.server starts it on demand, one per data dir), else mongomock with a loud warning.
Terminal: `python -m helpers.db.server status|start|stop` (or `python -m helpers.db.store ...`).
"""

from __future__ import annotations

import re
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pymongo import ASCENDING, MongoClient, ReturnDocument
from pymongo.errors import DuplicateKeyError, PyMongoError

from helpers.config import Settings, load_settings
from helpers.db.auth import AuthProblem, local_client
from helpers.db.checks import RESERVED, check_fields, check_id, check_int, now_ms
from helpers.db.health import disk_problem
from helpers.db.instance import server_paths
from helpers.db.logs import SessionLogs
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


class StoreWarning(UserWarning):
    """Raised as a warning when the store falls back to mongomock and nothing will persist."""


@dataclass(eq=False)
class Store(SessionLogs):
    """A database plus the sessions/logs primitives the memory layer composes. Taught in 04_bounded_memory_mongodb.

    The log primitives (append_log, append_logs, set_log_status, logs_for, count_logs) are helpers/db/logs.py.
    """

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
        other = Store(self.client, self.client[check_id("db_name", db_name)], self.kind, self.uri, self.data_dir)
        other.ensure_indexes()
        return other

    def close(self) -> None:
        """Close the client's connections."""
        self.client.close()

    def disk_problem(self) -> str | None:
        """For the local server: a sentence naming the data directory and its full disk, if it is full; else None."""
        if self.kind != "local" or self.data_dir is None:
            return None
        try:
            return disk_problem(self.data_dir, server_log_path(self.data_dir))
        except OSError:
            return None

    def reconnect(self) -> bool:
        """After a connection failure: restart the local server if it died and point this store at it.

        True when the store now talks to a live local server (retry the operation); False for MONGODB_URI
        and mongomock stores, where there is nothing to restart (pymongo reconnects by itself).
        """
        if self.kind != "local" or self.data_dir is None:
            return False
        uri = ensure_local_server(self.data_dir)
        if uri != self.uri:  # restarted on another port: the old client can never reach it
            old, self.client = self.client, _local_client(uri, self.data_dir)
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
        return {"user_id": check_id("user_id", user_id), "session_id": check_id("session_id", session_id)}

    def load_session(self, user_id: str, session_id: str) -> dict | None:
        """The session document (without `_id`), or None if there is none."""
        return self.sessions.find_one(self._key(user_id, session_id), {"_id": 0})

    def create_session(self, user_id: str, session_id: str, fields: dict | None = None) -> dict:
        """Insert version 0 (window [], summary '' unless `fields` say otherwise); if it exists, return that."""
        key = self._key(user_id, session_id)
        now = now_ms()
        doc = {
            "user_id": user_id,
            "session_id": session_id,
            "version": 0,
            "window": [],
            "summary": "",
            "created_at": now,
            "updated_at": now,
            **check_fields("fields", fields, RESERVED),
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

    def session_created_at(self, user_id: str, session_id: str) -> Any:
        """When the session document was created (None if there is none): a session erased and made again has
        another value, which is how a running memory notices an erasure (helpers.memory.bounded)."""
        doc = self.sessions.find_one(self._key(user_id, session_id), {"created_at": 1, "_id": 0})
        return doc.get("created_at") if doc else None

    def save_session(self, user_id: str, session_id: str, expected_version: int, fields: dict) -> dict | None:
        """Set `fields` and bump version iff it is still `expected_version`; the new doc, or None on conflict."""
        query = {**self._key(user_id, session_id), "version": check_int("expected_version", expected_version)}
        update = {"$set": {**check_fields("fields", fields, RESERVED), "updated_at": now_ms()}, "$inc": {"version": 1}}
        # No {"_id": 0} projection here: mongomock then re-reads by the (now stale) version filter and finds nothing.
        doc = self.sessions.find_one_and_update(query, update, return_document=ReturnDocument.AFTER)
        if doc is not None:
            doc.pop("_id", None)
        return doc

    def delete_session(self, user_id: str, session_id: str) -> bool:
        """Delete the session document (its logs stay: they are append-only); True if one was deleted."""
        return self.sessions.delete_one(self._key(user_id, session_id)).deleted_count == 1


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
        if shown == HIDDEN:  # no mongodb:// scheme: the driver would take the whole value (a password?) for a host
            raise ValueError(
                "it does not start with mongodb:// or mongodb+srv:// (the value is not shown: it may be a secret)"
            )
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


def _local_client(uri: str, data_dir: Path) -> MongoClient:
    """A client for the local server, logged in as its user (helpers.db.auth), with writeConcern j=true: each write
    is in the server's journal on disk before it is acknowledged. Without it a killed server (SIGKILL) loses every
    write since its last checkpoint."""
    try:
        return local_client(
            uri, server_paths(data_dir).root, tz_aware=True, serverSelectionTimeoutMS=URI_TIMEOUT_MS, journal=True
        )
    except AuthProblem as err:
        raise StoreUnavailable(str(err)) from None


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
    client = _local_client(uri, Path(s.data_dir))
    store = Store(client, client[s.db_name], "local", uri, Path(s.data_dir))
    store.ensure_indexes()
    return store


if __name__ == "__main__":
    sys.exit(main())
