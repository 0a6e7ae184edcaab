"""Plumbing: the local SecantusDB server (spawn, lock, stop, status), one per data dir, shared by every process.

SecantusDB is GPL-2.0, so it is only ever run as a separate process and spoken to over the wire; it is never
imported. helpers.db.store.open_store starts it on demand. Terminal: `python -m helpers.db.server status|start|stop`
(`python -m helpers.db.store ...` does the same).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from pymongo import MongoClient
from pymongo.errors import PyMongoError

from helpers.config import load_settings
from helpers.db.processes import cmdline, free_port, pid_running, port_of, port_open, terminate
from helpers.db.redact import redact_uri

__all__ = [
    "StoreError",
    "StoreUnavailable",
    "SERVER_BINARY",
    "ensure_local_server",
    "stop_local_server",
    "local_server_status",
    "server_log_path",
    "server_data_path",
    "main",
]

SERVER_BINARY = "secantusd-py"
HOST = "127.0.0.1"
START_TIMEOUT_S = 20.0  # bounded wait for the first ping after starting the server
STOP_TIMEOUT_S = 15.0  # SIGTERM grace period before SIGKILL (a clean stop takes ~3 s)
LOCK_TIMEOUT_S = 60.0  # waiting for another process that is starting/stopping the server

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


@dataclass(frozen=True)
class _Paths:
    root: Path  # <data_dir>/secantus
    storage: Path  # WiredTiger home: one server process at a time
    record: Path  # server.json: pid, host, port, started_at, log
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


def _is_our_server(pid: int, storage: Path) -> bool:
    """Guard against pid reuse: on Linux the process must be secantusd on this storage dir."""
    args = cmdline(pid)
    if args is None:
        return pid_running(pid)
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
            if _is_our_server(pid, storage) and pid_running(pid):
                pids.append(pid)
    return pids


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
    if not isinstance(port, int) or not pid_running(pid) or not _is_our_server(pid, paths.storage):
        return None
    return _local_uri(port) if port_open(port) and _ping(_local_uri(port)) else None


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
                        "stopping the local SecantusDB server; retry, or run `python -m helpers.db.server status`."
                    ) from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _log_tail(paths: _Paths, lines: int = 15) -> str:
    """The last lines the server wrote since our most recent start header."""
    try:
        text = paths.log.read_text(errors="replace")
    except OSError:
        return "(no log written)"
    text = text.rsplit("--- helpers.db.server:", 1)[-1]
    tail = text.strip().splitlines()[1:][-lines:]
    return "\n".join("    " + line for line in tail) or "    (log is empty)"


def _spawn(binary: Path, port: int, paths: _Paths) -> int:
    """Start the daemon fully detached (own session, no inherited pipes); return its pid."""
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    with open(paths.log, "a") as log:
        log.write(
            f"\n--- helpers.db.server: {stamp} starting {binary} on {HOST}:{port} (storage {paths.storage}) ---\n"
        )
    cmd = [
        str(binary),
        "--host",
        HOST,
        "--port",
        str(port),
        "--storage-path",
        str(paths.storage),
        "--log-level",
        "WARNING",
    ]
    done = subprocess.run(
        [sys.executable, "-I", "-c", _LAUNCHER, str(paths.log), *cmd],
        cwd=paths.root,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    if done.returncode != 0 or not done.stdout.strip().isdigit():
        raise StoreUnavailable(f"Could not launch {binary}: {done.stderr.strip()[-500:] or 'no output'}")
    return int(done.stdout.strip())


def _wait_ready(pid: int, port: int, deadline: float) -> str | None:
    """None once the server answers a ping; otherwise why it did not."""
    while time.monotonic() < deadline:
        if not pid_running(pid):
            return "the server process exited"
        if not port_open(port):
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
        port = free_port()
        pid = _spawn(binary, port, paths)
        problem = _wait_ready(pid, port, deadline)
        if problem is None:
            _write_record(paths, pid, port)
            return _local_uri(port)
        if pid_running(pid):
            terminate(pid, timeout=5.0, port=port)
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
            f"`python -m helpers.db.server start`, read the log {paths.log}, or set MONGODB_URI to use another "
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
            if pid_running(pid) and _is_our_server(pid, paths.storage):
                terminate(pid, STOP_TIMEOUT_S, port_of(pid))
            paths.record.unlink(missing_ok=True)
        for pid in _server_pids(paths.storage):  # running without a record (record deleted): adopt it
            port = port_of(pid)
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
        if pid_running(pid) and _is_our_server(pid, paths.storage):
            pids.append(pid)
        pids += [p for p in _server_pids(paths.storage) if p not in pids]
        for pid in pids:
            terminate(pid, timeout, port_of(pid) or record.get("port"))
        paths.record.unlink(missing_ok=True)
        return bool(pids)


def local_server_status(data_dir: str | os.PathLike) -> dict:
    """Is the local server for `data_dir` running? pid, port, uri, data path, log path."""
    paths = _paths(data_dir)
    record = _read_record(paths) or {}
    port = record.get("port") if isinstance(record.get("port"), int) else None
    alive = pid_running(record.get("pid")) and _is_our_server(record["pid"], paths.storage)
    running = bool(alive and port and port_open(port) and _ping(_local_uri(port), 1000))
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


def server_log_path(data_dir: str | os.PathLike) -> Path:
    """The local server's log file for `data_dir` (named in error messages)."""
    return _paths(data_dir).log


def server_data_path(data_dir: str | os.PathLike) -> Path:
    """The directory the local server keeps its data in, for `data_dir`."""
    return _paths(data_dir).storage


# ---------------------------------------------------------------------------
# Terminal: python -m helpers.db.server status|start|stop
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
    parser = argparse.ArgumentParser(
        prog="python -m helpers.db.server",
        description="Manage the local SecantusDB server for this checkout's data dir (GTE_DATA_DIR, default .data).",
    )
    parser.add_argument("command", choices=["status", "start", "stop"])
    args = parser.parse_args(argv)
    settings = load_settings()
    if settings.mongodb_uri:
        print(
            f"note: MONGODB_URI is set ({redact_uri(settings.mongodb_uri)}), so the helpers use that "
            "server, not the local one."
        )
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
