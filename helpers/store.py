"""Sessions and logs in your MongoDB, a local SecantusDB server, or mongomock. Taught in 04_bounded_memory_mongodb.

`open_store()` resolves the connection: MONGODB_URI if set, else a local SecantusDB
server started on demand (one per data dir, shared by every process of this checkout),
else mongomock with a loud warning. SecantusDB is GPL-2.0, so it is only ever run as a
separate process and spoken to over the wire; it is never imported.

Terminal: `python -m helpers.store status|start|stop`.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from pymongo import ASCENDING, DESCENDING, MongoClient, ReturnDocument
from pymongo.errors import BulkWriteError, DuplicateKeyError, PyMongoError

from helpers.config import Settings, load_settings
from helpers.redact import redact_uri

__all__ = [
    "Store",
    "StoreError",
    "StoreUnavailable",
    "StoreWarning",
    "open_store",
    "mongomock_store",
    "ensure_local_server",
    "stop_local_server",
    "local_server_status",
]

SERVER_BINARY = "secantusd-py"
HOST = "127.0.0.1"
START_TIMEOUT_S = 20.0        # bounded wait for the first ping after starting the server
STOP_TIMEOUT_S = 15.0         # SIGTERM grace period before SIGKILL (a clean stop takes ~3 s)
LOCK_TIMEOUT_S = 60.0         # waiting for another process that is starting/stopping the server
URI_TIMEOUT_MS = 5000         # serverSelectionTimeoutMS for MONGODB_URI unless the URI sets one
SEQ_ATTEMPTS = 50             # append_log retries when a concurrent writer took the same seq
_RESERVED = frozenset({"_id", "user_id", "session_id", "version", "created_at", "updated_at"})
_LOG_FIELDS = frozenset({"seq", "role", "content", "tokens", "status", "reply_to", "error"})

# The launcher runs the daemon as a grandchild and exits at once, so the server is
# re-parented away from the caller (a notebook kernel, pytest) and never becomes its
# zombie. Output goes to the log file only: never to the caller's stdout/stderr pipes.
_LAUNCHER = (
    "import subprocess, sys\n"
    "log = open(sys.argv[1], 'ab')\n"
    "p = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=log, stderr=log,\n"
    "                     start_new_session=True, close_fds=True)\n"
    "print(p.pid)\n"
)


class StoreError(RuntimeError):
    """A store operation failed in a way the caller should see (e.g. seq allocation gave up)."""


class StoreUnavailable(StoreError):
    """No usable database: the message says which setting or command fixes it. Taught in 04."""


class StoreWarning(UserWarning):
    """Raised as a warning when the store falls back to mongomock and nothing will persist."""


# ---------------------------------------------------------------------------
# Local SecantusDB server lifecycle
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Paths:
    root: Path        # <data_dir>/secantus
    storage: Path     # WiredTiger home: one server process at a time
    record: Path      # server.json: pid, host, port, started_at, log
    log: Path
    lock: Path


def _paths(data_dir: str | os.PathLike) -> _Paths:
    root = Path(data_dir).expanduser().resolve() / "secantus"
    return _Paths(root, root / "db", root / "server.json", root / "server.log", root / "server.lock")


def _local_uri(port: int) -> str:
    return f"mongodb://{HOST}:{port}/?directConnection=true"


def _find_server_binary() -> Path | None:
    """The `secantusd-py` console script next to this Python, else on PATH, else None."""
    candidate = Path(sys.executable).parent / SERVER_BINARY
    if candidate.exists():
        return candidate
    found = shutil.which(SERVER_BINARY)
    return Path(found) if found else None


def _pid_running(pid: Any) -> bool:
    """True if `pid` is a live process (zombies count as dead)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc (macOS): trust kill(0)
    fields = stat.rsplit(")", 1)[-1].split()
    return not fields or fields[0] not in ("Z", "X")


def _cmdline(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _is_our_server(pid: int, storage: Path) -> bool:
    """Guard against pid reuse: on Linux the process must be secantusd on this storage dir."""
    args = _cmdline(pid)
    if args is None:
        return _pid_running(pid)
    return any(SERVER_BINARY in a for a in args) and str(storage) in args


def _server_pids(storage: Path) -> list[int]:
    """Live secantusd processes serving `storage`, found via /proc (Linux only; else [])."""
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    pids = []
    for entry in proc.iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            pid = int(entry.name)
            if _is_our_server(pid, storage) and _pid_running(pid):
                pids.append(pid)
    return pids


def _port_of(pid: int) -> int | None:
    args = _cmdline(pid) or []
    for flag, value in zip(args, args[1:]):
        if flag == "--port" and value.isdigit():
            return int(value)
    return None


def _port_open(port: int) -> bool:
    """A cheap TCP probe, so a dead port fails at once instead of after a driver timeout."""
    try:
        with socket.create_connection((HOST, port), timeout=0.5):
            return True
    except OSError:
        return False


def _ping(uri: str, timeout_ms: int = 2000) -> bool:
    client: MongoClient = MongoClient(uri, serverSelectionTimeoutMS=timeout_ms, connectTimeoutMS=timeout_ms)
    try:
        client.admin.command("ping")
        return True
    except PyMongoError:
        return False
    finally:
        client.close()


def _read_record(paths: _Paths) -> dict | None:
    try:
        record = json.loads(paths.record.read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _write_record(paths: _Paths, pid: int, port: int) -> dict:
    record = {
        "pid": pid,
        "host": HOST,
        "port": port,
        "uri": _local_uri(port),
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "storage_path": str(paths.storage),
        "log": str(paths.log),
    }
    tmp = paths.record.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    os.replace(tmp, paths.record)
    return record


def _live_uri(paths: _Paths) -> str | None:
    """The recorded server's URI if its process is alive and it answers a ping, else None."""
    record = _read_record(paths)
    pid, port = (record or {}).get("pid"), (record or {}).get("port")
    if not isinstance(port, int) or not _pid_running(pid) or not _is_our_server(pid, paths.storage):
        return None
    return _local_uri(port) if _port_open(port) and _ping(_local_uri(port)) else None


@contextlib.contextmanager
def _locked(paths: _Paths, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold an exclusive flock on <data_dir>/secantus/server.lock (serialises start/stop across processes)."""
    import fcntl  # POSIX only; imported here so MONGODB_URI users on Windows can still import this module

    paths.root.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout
    with open(paths.lock, "a+") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise StoreUnavailable(
                        f"Waited {timeout:.0f} s for {paths.lock}, held by another process that is starting or "
                        "stopping the local SecantusDB server; retry, or run `python -m helpers.store status`."
                    ) from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _signal_main_thread(pid: int, sig: int) -> bool:
    """Send `sig` to the process's main thread (Linux tgkill); False if that is not possible here."""
    # Python runs signal handlers only in the main thread. A process-directed SIGTERM that the kernel hands
    # to another thread leaves secantusd's main thread parked in Event.wait() for good (seen in ~5-25% of
    # stops), so on Linux we aim the signal at the main thread, whose thread id is the pid.
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    tgkill = getattr(ctypes.CDLL(None, use_errno=True), "tgkill", None)
    if tgkill is None:
        return False
    if tgkill(pid, pid, sig) == 0:
        return True
    if ctypes.get_errno() == errno.ESRCH:
        raise ProcessLookupError(errno.ESRCH, f"no process {pid}")
    return False  # e.g. EPERM: let os.kill raise the usual error


def _terminate(pid: int, timeout: float = STOP_TIMEOUT_S, port: int | None = None) -> None:
    """SIGTERM, wait up to `timeout`, then SIGKILL and wait a little more."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        try:
            aimed = sig == signal.SIGTERM and _signal_main_thread(pid, sig)
            if not aimed:
                os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        resend_at = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            if not _pid_running(pid):
                return
            if sig == signal.SIGTERM and not aimed and time.monotonic() > resend_at:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)  # no tgkill: the first signal may have landed on the wrong thread
                resend_at += 5.0
            if port and sig == signal.SIGTERM:
                # On SIGTERM the server joins its accept thread for up to 2 s; a connection wakes the blocked
                # accept() so it sees the stop flag at once (a clean stop then takes ~0.1 s instead of ~2 s).
                with contextlib.suppress(OSError):
                    socket.create_connection((HOST, port), timeout=0.1).close()
            time.sleep(0.05)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def _log_tail(paths: _Paths, lines: int = 15) -> str:
    """The last lines the server wrote since our most recent start header."""
    try:
        text = paths.log.read_text(errors="replace")
    except OSError:
        return "(no log written)"
    text = text.rsplit("--- helpers.store:", 1)[-1]
    tail = text.strip().splitlines()[1:][-lines:]
    return "\n".join("    " + line for line in tail) or "    (log is empty)"


def _spawn(binary: Path, port: int, paths: _Paths) -> int:
    """Start the daemon fully detached (own session, no inherited pipes); return its pid."""
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    with open(paths.log, "a") as log:
        log.write(f"\n--- helpers.store: {stamp} starting {binary} on {HOST}:{port} (storage {paths.storage}) ---\n")
    cmd = [str(binary), "--host", HOST, "--port", str(port), "--storage-path", str(paths.storage),
           "--log-level", "WARNING"]
    done = subprocess.run([sys.executable, "-I", "-c", _LAUNCHER, str(paths.log), *cmd], cwd=paths.root,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    if done.returncode != 0 or not done.stdout.strip().isdigit():
        raise StoreUnavailable(f"Could not launch {binary}: {done.stderr.strip()[-500:] or 'no output'}")
    return int(done.stdout.strip())


def _wait_ready(pid: int, port: int, deadline: float) -> str | None:
    """None once the server answers a ping; otherwise why it did not."""
    while time.monotonic() < deadline:
        if not _pid_running(pid):
            return "the server process exited"
        if not _port_open(port):
            time.sleep(0.05)
            continue
        if _ping(_local_uri(port)):
            return None
    return f"no answer to ping within {START_TIMEOUT_S:.0f} s"


def _start(paths: _Paths) -> str:
    binary = _find_server_binary()
    if binary is None:
        raise StoreUnavailable(
            f"SecantusDB's `{SERVER_BINARY}` was not found next to {sys.executable} or on PATH; install the "
            "pinned requirements (`pip install -r requirements.txt`), or set MONGODB_URI to use another server."
        )
    paths.storage.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + START_TIMEOUT_S
    for _attempt in range(3):
        port = _free_port()
        pid = _spawn(binary, port, paths)
        problem = _wait_ready(pid, port, deadline)
        if problem is None:
            _write_record(paths, pid, port)
            return _local_uri(port)
        if _pid_running(pid):
            _terminate(pid, timeout=5.0, port=port)
        tail = _log_tail(paths)
        if "Address already in use" in tail and time.monotonic() < deadline:
            continue  # another program grabbed the port between our probe and the bind
        hint = ""
        if "resource busy" in tail.lower():
            holders = [p for p in _server_pids(paths.storage) if p != pid]
            who = f"process {holders}" if holders else "another process"
            hint = f" {who} already holds this data dir (see `pgrep -af secantusd`); stop it first."
        raise StoreUnavailable(
            f"The local SecantusDB server did not start ({problem}).{hint} Retry with "
            f"`python -m helpers.store start`, read the log {paths.log}, or set MONGODB_URI to use another "
            f"server. Last lines of the log:\n{tail}"
        )
    raise StoreUnavailable(f"No free port for the local SecantusDB server; see {paths.log}.")


def ensure_local_server(data_dir: str | os.PathLike) -> str:
    """Reuse the live local server for `data_dir`, or start one; return its URI. Taught in 04."""
    paths = _paths(data_dir)
    uri = _live_uri(paths)
    if uri:
        return uri
    with _locked(paths):
        uri = _live_uri(paths)  # someone may have started it while we waited for the lock
        if uri:
            return uri
        record = _read_record(paths)
        if record:  # stale: dead pid, or alive but not answering
            pid = record.get("pid")
            if _pid_running(pid) and _is_our_server(pid, paths.storage):
                _terminate(pid, port=_port_of(pid))
            paths.record.unlink(missing_ok=True)
        for pid in _server_pids(paths.storage):  # running without a record (record deleted): adopt it
            port = _port_of(pid)
            if port and _ping(_local_uri(port)):
                _write_record(paths, pid, port)
                return _local_uri(port)
        return _start(paths)


def stop_local_server(data_dir: str | os.PathLike, timeout: float = STOP_TIMEOUT_S) -> bool:
    """Stop the local server for `data_dir` (SIGTERM, then SIGKILL); True if one was running."""
    paths = _paths(data_dir)
    if not paths.root.exists():
        return False
    with _locked(paths):
        record = _read_record(paths) or {}
        pids = []
        pid = record.get("pid")
        if _pid_running(pid) and _is_our_server(pid, paths.storage):
            pids.append(pid)
        pids += [p for p in _server_pids(paths.storage) if p not in pids]
        for pid in pids:
            _terminate(pid, timeout, _port_of(pid) or record.get("port"))
        paths.record.unlink(missing_ok=True)
        return bool(pids)


def local_server_status(data_dir: str | os.PathLike) -> dict:
    """Is the local server for `data_dir` running? pid, port, uri, data path, log path."""
    paths = _paths(data_dir)
    record = _read_record(paths) or {}
    port = record.get("port") if isinstance(record.get("port"), int) else None
    alive = _pid_running(record.get("pid")) and _is_our_server(record["pid"], paths.storage)
    running = bool(alive and port and _port_open(port) and _ping(_local_uri(port), 1000))
    return {
        "running": running,
        "pid": record.get("pid") if alive else None,
        "host": HOST if port else None,
        "port": port,
        "uri": _local_uri(port) if port else None,
        "started_at": record.get("started_at"),
        "stale_record": bool(record) and not running,
        "data_path": str(paths.storage),
        "log": str(paths.log),
        "record": str(paths.record),
    }


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
    kind: str = "mongomock"            # "uri" | "local" | "mongomock"
    uri: str | None = None             # redacted, for display only
    data_dir: Path | None = None       # local server data dir (kind == "local")
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
            where = _paths(self.data_dir).storage if self.data_dir else "?"
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
        """Long-term per-user memories (written by helpers.vector / helpers.facts)."""
        return self.db["memories"]

    def ensure_indexes(self) -> None:
        """Create the unique/lookup indexes (idempotent); open_store calls it."""
        self.sessions.create_index([("user_id", ASCENDING), ("session_id", ASCENDING)], unique=True,
                                   name="user_session")
        self.logs.create_index([("user_id", ASCENDING), ("session_id", ASCENDING), ("seq", ASCENDING)],
                               unique=True, name="user_session_seq")
        self.memories.create_index([("user_id", ASCENDING), ("created_at", ASCENDING)], name="user_created")

    def with_db(self, db_name: str) -> "Store":
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

    def __enter__(self) -> "Store":
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
        doc = {"user_id": user_id, "session_id": session_id, "version": 0, "window": [], "summary": "",
               "created_at": now, "updated_at": now, **_check_fields("fields", fields, _RESERVED)}
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
        query = {**self._key(user_id, session_id),
                 "version": _check_int("expected_version", expected_version)}
        update = {"$set": {**_check_fields("fields", fields, _RESERVED), "updated_at": _now()},
                  "$inc": {"version": 1}}
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

    def append_log(self, user_id: str, session_id: str, role: str, content: Any, *, tokens: int | None = None,
                   status: str = "ok", reply_to: int | None = None, extra: dict | None = None) -> int:
        """Append one message with seq = max+1 (unique, gap-free under concurrent writers); return the seq."""
        key = self._key(user_id, session_id)
        if not isinstance(role, str) or not isinstance(status, str):
            raise ValueError(f"role and status must be str, got {role!r}, {status!r}")
        _check_int("tokens", tokens, optional=True)
        _check_int("reply_to", reply_to, optional=True)
        more = _check_fields("extra", extra, _RESERVED | _LOG_FIELDS)
        cache_key = (user_id, session_id)
        for _ in range(SEQ_ATTEMPTS):
            seq = self._max_seq(key, self._last_seq.get(cache_key)) + 1
            doc = {"user_id": user_id, "session_id": session_id, "seq": seq, "role": role, "content": content,
                   "tokens": tokens, "status": status, "reply_to": reply_to, "created_at": _now(),
                   "error": None, **more}
            try:
                self.logs.insert_one(doc)
            except DuplicateKeyError:
                continue  # a concurrent writer took this seq: re-read the max and try the next one
            if len(self._last_seq) > 10_000:
                self._last_seq.clear()
            self._last_seq[cache_key] = seq
            return seq
        raise StoreError(f"append_log gave up after {SEQ_ATTEMPTS} seq collisions for "
                         f"user {user_id!r} session {session_id!r}; too many concurrent writers?")

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
            docs.append({"user_id": user_id, "session_id": session_id, "role": role, "content": entry.get("content"),
                         "tokens": tokens, "status": status, "reply_to": None, "error": None, **more})
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
            seqs.append(self.append_log(user_id, session_id, doc["role"], doc["content"], tokens=doc["tokens"],
                                        status=status, extra=extra))
        return seqs

    def set_log_status(self, user_id: str, session_id: str, seqs: list[int], status: str, *,
                       error: str | None = None, only_if_status: str | None = None) -> int:
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


# ---------------------------------------------------------------------------
# Connection resolution
# ---------------------------------------------------------------------------


def mongomock_store(db_name: str = "test") -> Store:
    """An in-memory mongomock Store for fast unit tests (no warning, nothing persists)."""
    import mongomock

    client = mongomock.MongoClient(tz_aware=True)
    store = Store(client, client[db_name], "mongomock", None, None)
    store.ensure_indexes()
    return store


def _short_reason(exc: BaseException) -> str:
    """The first, human part of a pymongo error (drop the topology dump)."""
    text = str(exc).split(", Timeout:")[0].split("Topology Description:")[0]
    return text.strip().rstrip(",")[:300]


def _open_uri(uri: str, db_name: str) -> Store:
    shown = redact_uri(uri)
    options: dict[str, Any] = {"tz_aware": True, "appname": "goldfish-to-elephant"}
    if "serverselectiontimeoutms" not in uri.lower():
        options["serverSelectionTimeoutMS"] = URI_TIMEOUT_MS
    try:
        client: MongoClient = MongoClient(uri, **options)
    except (PyMongoError, ValueError, TypeError) as exc:  # pymongo raises ValueError for some malformed URIs
        raise StoreUnavailable(f"MONGODB_URI is not a usable connection string ({shown}): {_short_reason(exc)}. "
                               "Fix it in .env or the environment, or unset MONGODB_URI to use the local "
                               "SecantusDB server.") from None
    try:
        client.admin.command("ping")
    except PyMongoError as exc:
        client.close()
        raise StoreUnavailable(
            f"Cannot reach the MongoDB server in MONGODB_URI ({shown}): {_short_reason(exc)}. Start it "
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
            if "helpers.store start" in str(exc):
                raise
            raise StoreUnavailable(f"{exc} Then check with `python -m helpers.store start` (log: "
                                   f"{_paths(s.data_dir).log}).") from None
        reason = str(exc).splitlines()[0]
        message = (f"No persistent store: {reason} Falling back to mongomock, an IN-MEMORY stand-in: nothing "
                   "will persist after this process ends. Fix: `python -m helpers.store start` (log: "
                   f"{_paths(s.data_dir).log}), or set MONGODB_URI.")
        print(f"WARNING: {message}", file=sys.stderr)
        warnings.warn(message, StoreWarning, stacklevel=2)
        return mongomock_store(s.db_name)
    client = _local_client(uri)
    store = Store(client, client[s.db_name], "local", uri, Path(s.data_dir))
    store.ensure_indexes()
    return store


# ---------------------------------------------------------------------------
# Terminal: python -m helpers.store status|start|stop
# ---------------------------------------------------------------------------


def _print_status(status: dict) -> None:
    if status["running"]:
        print(f"local SecantusDB server: running (pid {status['pid']}) at {status['uri']}")
        print(f"  started: {status['started_at']}")
    else:
        stale = " (stale record will be replaced on next start)" if status["stale_record"] else ""
        print(f"local SecantusDB server: not running{stale}")
    print(f"  data: {status['data_path']}")
    print(f"  log:  {status['log']}")


def main(argv: list[str] | None = None) -> int:
    """CLI entry: status (exit 1 if not running), start, stop for the local server in GTE_DATA_DIR."""
    parser = argparse.ArgumentParser(prog="python -m helpers.store",
                                     description="Manage the local SecantusDB server for this checkout's data dir "
                                                 "(GTE_DATA_DIR, default .data).")
    parser.add_argument("command", choices=["status", "start", "stop"])
    args = parser.parse_args(argv)
    settings = load_settings()
    if settings.mongodb_uri:
        print(f"note: MONGODB_URI is set ({redact_uri(settings.mongodb_uri)}), so the helpers use that "
              "server, not the local one.")
    try:
        if args.command == "status":
            status = local_server_status(settings.data_dir)
            _print_status(status)
            return 0 if status["running"] else 1
        if args.command == "start":
            was_running = local_server_status(settings.data_dir)["running"]
            ensure_local_server(settings.data_dir)
            status = local_server_status(settings.data_dir)
            print("already running" if was_running else "started")
            _print_status(status)
            return 0 if status["running"] else 1
        before = local_server_status(settings.data_dir)
        if stop_local_server(settings.data_dir):
            pid = f" (pid {before['pid']})" if before["pid"] else ""
            print(f"stopped the local SecantusDB server{pid}; data kept in {before['data_path']}")
        else:
            print("local SecantusDB server: not running; nothing to stop")
        return 0
    except StoreUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
