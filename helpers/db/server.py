"""Plumbing: the local SecantusDB server (spawn, lock, stop, status), one per data dir, shared by every process.

SecantusDB is GPL-2.0, so it is only ever run as a separate process and spoken to over the wire; it is never
imported. helpers.db.store.open_store starts it on demand. Terminal: `python -m helpers.db.server status|start|stop`
(`python -m helpers.db.store ...` does the same). helpers.db.instance finds the server on disk and among processes.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

from helpers.config import load_settings
from helpers.db.instance import (
    HOST,
    SERVER_BINARY,
    ServerPaths,
    is_our_server,
    live_uri,
    local_uri,
    ping,
    read_record,
    server_paths,
    server_pids,
    write_record,
)
from helpers.db.processes import free_port, pid_running, port_of, port_open, terminate
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


def _find_server_binary() -> Path | None:
    """The `secantusd-py` console script next to this Python, else on PATH, else None."""
    candidate = Path(sys.executable).parent / SERVER_BINARY
    if candidate.exists():
        return candidate
    found = shutil.which(SERVER_BINARY)
    return Path(found) if found else None


@contextlib.contextmanager
def _locked(paths: ServerPaths, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
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


def _log_tail(paths: ServerPaths, lines: int = 15) -> str:
    """The last lines the server wrote since our most recent start header."""
    try:
        text = paths.log.read_text(errors="replace")
    except OSError:
        return "(no log written)"
    text = text.rsplit("--- helpers.db.server:", 1)[-1]
    tail = text.strip().splitlines()[1:][-lines:]
    return "\n".join("    " + line for line in tail) or "    (log is empty)"


def _spawn(binary: Path, port: int, paths: ServerPaths) -> int:
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
        if ping(local_uri(port)):
            return None
    return f"no answer to ping within {START_TIMEOUT_S:.0f} s"


def _start(paths: ServerPaths) -> str:
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
            write_record(paths, pid, port)
            return local_uri(port)
        if pid_running(pid):
            terminate(pid, timeout=5.0, port=port)
        tail = _log_tail(paths)
        if "Address already in use" in tail and time.monotonic() < deadline:
            continue  # another program grabbed the port between our probe and the bind
        hint = ""
        if "resource busy" in tail.lower():
            holders = [p for p in server_pids(paths.storage) if p != pid]
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
    paths = server_paths(data_dir)
    uri = live_uri(paths)
    if uri:
        return uri
    with _locked(paths):
        uri = live_uri(paths)  # someone may have started it while we waited for the lock
        if uri:
            return uri
        record = read_record(paths)
        if record:  # stale: dead pid, or alive but not answering
            pid = record.get("pid")
            if pid_running(pid) and is_our_server(pid, paths.storage):
                terminate(pid, STOP_TIMEOUT_S, port_of(pid))
            paths.record.unlink(missing_ok=True)
        for pid in server_pids(paths.storage):  # running without a record (record deleted): adopt it
            port = port_of(pid)
            if port and ping(local_uri(port)):
                write_record(paths, pid, port)
                return local_uri(port)
        return _start(paths)


def stop_local_server(data_dir: str | os.PathLike, timeout: float = STOP_TIMEOUT_S) -> bool:
    """Stop the local server for `data_dir` (SIGTERM, then SIGKILL); True if one was running."""
    paths = server_paths(data_dir)
    if not paths.root.exists():
        return False
    with _locked(paths):
        record = read_record(paths) or {}
        pids = []
        pid = record.get("pid")
        if pid_running(pid) and is_our_server(pid, paths.storage):
            pids.append(pid)
        pids += [p for p in server_pids(paths.storage) if p not in pids]
        for pid in pids:
            terminate(pid, timeout, port_of(pid) or record.get("port"))
        paths.record.unlink(missing_ok=True)
        return bool(pids)


def local_server_status(data_dir: str | os.PathLike) -> dict:
    """Is the local server for `data_dir` running? pid, port, uri, data path, log path."""
    paths = server_paths(data_dir)
    record = read_record(paths) or {}
    port = record.get("port") if isinstance(record.get("port"), int) else None
    alive = pid_running(record.get("pid")) and is_our_server(record["pid"], paths.storage)
    running = bool(alive and port and port_open(port) and ping(local_uri(port), 1000))
    return {
        "running": running,
        "pid": record.get("pid") if alive else None,
        "host": HOST if port else None,
        "port": port,
        "uri": local_uri(port) if port else None,
        "started_at": record.get("started_at"),
        "stale_record": bool(record) and not running,
        "data_path": str(paths.storage),
        "log": str(paths.log),
        "record": str(paths.record),
    }


def server_log_path(data_dir: str | os.PathLike) -> Path:
    """The local server's log file for `data_dir` (named in error messages)."""
    return server_paths(data_dir).log


def server_data_path(data_dir: str | os.PathLike) -> Path:
    """The directory the local server keeps its data in, for `data_dir`."""
    return server_paths(data_dir).storage


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
