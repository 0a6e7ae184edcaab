"""Plumbing: start one SecantusDB process on a storage dir and wait for its ping; the lock that serialises starts.

helpers.db.server (start, stop, status) and helpers.db.scrub (rewrite the data dir after an erasure) start the
daemon through `launch`, holding `server_lock`, so two processes never start two servers on one data dir.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

from helpers.db.health import disk_problem
from helpers.db.instance import HOST, SERVER_BINARY, ServerPaths, local_uri, ping, server_pids
from helpers.db.private import private_dir, private_file
from helpers.db.processes import free_port, pid_running, port_open, terminate

__all__ = ["StoreError", "StoreUnavailable", "START_TIMEOUT_S", "LOCK_TIMEOUT_S", "server_lock", "launch", "log_tail"]

START_TIMEOUT_S = 20.0  # bounded wait for the first ping after starting the server
LOCK_TIMEOUT_S = 60.0  # waiting for another process that is starting/stopping the server

# The launcher runs the daemon as a grandchild and exits at once, so the server is
# re-parented away from the caller (a notebook kernel, pytest) and never becomes its
# zombie. Output goes to the log file only: never to the caller's stdout/stderr pipes. umask 077: every file the
# server writes is its owner's only.
_LAUNCHER = (
    "import os, subprocess, sys\n"
    "os.umask(0o077)\n"
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
def server_lock(paths: ServerPaths, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold an exclusive flock on <data_dir>/secantus/server.lock (serialises start/stop across processes)."""
    import fcntl  # POSIX only; imported here so MONGODB_URI users on Windows can still import this module

    deadline = time.monotonic() + timeout
    try:
        private_dir(paths.root)  # the data dir and its server folder: owner-only (helpers.db.private)
        handle = os.fdopen(private_file(paths.lock, os.O_RDWR | os.O_CREAT), "a+")
    except OSError as err:  # the data dir cannot be made or written: say which, not a traceback
        raise StoreUnavailable(
            f"The data directory {paths.root.parent} cannot be used ({err.strerror or err}); point GTE_DATA_DIR "
            "at a directory you can write, or set MONGODB_URI to use another server."
        ) from None
    with handle:
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


def log_tail(paths: ServerPaths, lines: int = 15) -> str:
    """The last lines the server wrote since our most recent start header."""
    try:
        text = paths.log.read_text(errors="replace")
    except OSError:
        return "(no log written)"
    text = text.rsplit("--- helpers.db.server:", 1)[-1]
    tail = text.strip().splitlines()[1:][-lines:]
    return "\n".join("    " + line for line in tail) or "    (log is empty)"


def _spawn(binary: Path, port: int, paths: ServerPaths, storage: Path) -> int:
    """Start the daemon fully detached (own session, no inherited pipes); return its pid.

    `--standalone`: no replica-set oplog (`local.oplog.rs`), which would keep a copy of every write, erased ones
    included, for an hour; nothing here uses change streams. `--auth`, always: only our user gets in (helpers.db.auth.bootstrap made it before this start)."""
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    with os.fdopen(private_file(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND), "a") as log:
        log.write(f"\n--- helpers.db.server: {stamp} starting {binary} on {HOST}:{port} (storage {storage}) ---\n")
    cmd = [str(binary), "--host", HOST, "--port", str(port), "--storage-path", str(storage), "--standalone", "--auth"]
    cmd += ["--log-level", "WARNING"]
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


def launch(paths: ServerPaths, storage: Path | None = None, *, port: int | None = None) -> tuple:
    """Start a server with --auth on `storage` (default: the data dir's), wait for its ping; (pid, port). Hold server_lock.

    `port` is tried first when given (the port clients already use); if it is taken, a free one is used."""
    binary = _find_server_binary()
    if binary is None:
        raise StoreUnavailable(
            f"SecantusDB's `{SERVER_BINARY}` was not found next to {sys.executable} or on PATH; install the "
            "pinned requirements (`pip install -r requirements.txt`), or set MONGODB_URI to use another server."
        )
    storage = storage or paths.storage
    private_dir(storage)
    deadline = time.monotonic() + START_TIMEOUT_S
    for attempt in range(3):
        port = port if attempt == 0 and port and port >= 1024 and not port_open(port) else free_port()
        pid = _spawn(binary, port, paths, storage)
        problem = _wait_ready(pid, port, deadline)
        if problem is None:
            return pid, port
        if pid_running(pid):
            terminate(pid, timeout=5.0, port=port)
        tail = log_tail(paths)
        if "Address already in use" in tail and time.monotonic() < deadline:
            continue  # another program grabbed the port between our probe and the bind
        hint = ""
        if "resource busy" in tail.lower():
            holders = [p for p in server_pids(storage) if p != pid]
            who = f"process {holders}" if holders else "another process"
            hint = f" {who} already holds this data dir (see `pgrep -af secantusd`); stop it first."
        disk = disk_problem(paths.root.parent, paths.log)
        raise StoreUnavailable(
            f"The local SecantusDB server did not start ({problem}).{hint}"
            + (f" Likely cause: {disk}." if disk else "")
            + f" Retry with `python -m helpers.db.server start`, read the log {paths.log}, or set MONGODB_URI to "
            f"use another server. Last lines of the log:\n{tail}"
        )
    raise StoreUnavailable(f"No free port for the local SecantusDB server; see {paths.log}.")
