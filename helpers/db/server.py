"""Plumbing: the local SecantusDB server (start, adopt, stop, status), one per data dir, shared by every process.

SecantusDB is GPL-2.0, so it is only ever run as a separate process and spoken to over the wire; it is never
imported. helpers.db.store.open_store starts it on demand. Terminal: `python -m helpers.db.server status|start|stop`
(`python -m helpers.db.store ...` does the same). helpers.db.instance finds the server on disk and among processes;
helpers.db.launch starts one process; helpers.db.auth gives it its one user (it runs with --auth); `status` says
when it answers ping but every command fails (a panicked storage engine, e.g. on a full disk: helpers.db.health).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from helpers.config import load_settings
from helpers.db.auth import (
    AuthProblem,
    authenticated_problem,
    bootstrap,
    ensure_credentials,
    keep_only_ours,
    local_client,
    mark_provisioned,
    read_credentials,
)
from helpers.db.health import disk_problem
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
from helpers.db.launch import StoreError, StoreUnavailable, launch, server_lock
from helpers.db.private import tighten
from helpers.db.processes import cmdline, pid_running, port_of, port_open, terminate
from helpers.db.redact import redact_uri
from helpers.db.scrub import recover, scrub

__all__ = [
    "StoreError",
    "StoreUnavailable",
    "SERVER_BINARY",
    "ensure_local_server",
    "stop_local_server",
    "local_server_status",
    "server_log_path",
    "server_data_path",
    "erase_deleted",
    "main",
]

STOP_TIMEOUT_S = 15.0  # SIGTERM grace period before SIGKILL (a clean stop takes ~3 s)


def _start(paths: ServerPaths, port: int | None = None) -> str:
    """Give the storage its one user with no port open (helpers.db.auth.bootstrap), start the server with --auth."""
    try:
        credentials = ensure_credentials(paths.root)
        dropped = bootstrap(paths.storage, credentials)
        mark_provisioned(paths.root, paths.storage)
        pid, port = launch(paths, port=port)
        problem = authenticated_problem(local_uri(port), credentials)
        if problem is not None:
            terminate(pid, STOP_TIMEOUT_S, port)
            disk = disk_problem(paths.root.parent, paths.log)
            raise StoreUnavailable(
                f"The local SecantusDB server started but does not work ({problem}): "
                + (disk if disk else f"read the log {paths.log}")
                + "."
            )
        with local_client(local_uri(port), paths.root, serverSelectionTimeoutMS=5000) as client:
            dropped += keep_only_ours(client, credentials)
    except AuthProblem as err:
        raise StoreUnavailable(str(err)) from None
    if dropped:
        with open(paths.log, "a") as log:
            log.write(f"helpers.db.server: dropped users the helpers did not create: {', '.join(dropped)}\n")
    write_record(paths, pid, port)
    return local_uri(port)


def _problem(paths: ServerPaths, uri: str) -> str | None:
    """None if the server was started with --auth and our user can log in and run a command; else what is wrong."""
    record = read_record(paths) or {}
    args = cmdline(record["pid"]) if isinstance(record.get("pid"), int) else None
    if args is not None and "--auth" not in args:
        return "started without --auth by an older version of the helpers"
    try:
        credentials = read_credentials(paths.root)
    except AuthProblem as err:
        return str(err)
    if credentials is None:
        return f"no credentials in {paths.root}"
    return authenticated_problem(uri, credentials)


def ensure_local_server(data_dir: str | os.PathLike) -> str:
    """Reuse the live local server for `data_dir`, or start one; return its URI. Taught in 04."""
    paths = server_paths(data_dir)
    uri = live_uri(paths)
    if uri and _problem(paths, uri) is None:
        return uri
    with server_lock(paths):
        uri = live_uri(paths)  # someone may have started it while we waited for the lock
        if uri and _problem(paths, uri) is None:
            return uri
        tighten(paths.root.parent)  # an existing data dir (older helpers, a copy) is owner-only again
        recover(paths)  # a scrub killed part-way (helpers.db.scrub) is finished or undone before any start
        record = read_record(paths) or {}
        port = record.get("port") if record.get("reuse_port") and isinstance(record.get("port"), int) else None
        if record:  # stale: dead, not answering, panicked (ping works, commands fail), or open without --auth
            pid = record.get("pid")
            if pid_running(pid) and is_our_server(pid, paths.storage):
                terminate(pid, STOP_TIMEOUT_S, port_of(pid))
            paths.record.unlink(missing_ok=True)
        for pid in server_pids(paths.storage):  # running without a record (record deleted): adopt it if it works
            found = port_of(pid)
            if found and ping(local_uri(found)):
                write_record(paths, pid, found)
                if _problem(paths, local_uri(found)) is None:
                    return local_uri(found)
            terminate(pid, STOP_TIMEOUT_S, found)
            paths.record.unlink(missing_ok=True)
        return _start(paths, port)


def erase_deleted(data_dir: str | os.PathLike) -> dict:
    """After deleting documents (helpers.memory.forget): rewrite the local server's files without a byte of them
    (helpers.db.scrub), then start it again where its clients look for it. Returns what scrub reports."""
    done = scrub(data_dir)
    ensure_local_server(data_dir)
    return done


def stop_local_server(data_dir: str | os.PathLike, timeout: float = STOP_TIMEOUT_S) -> bool:
    """Stop the local server for `data_dir` (SIGTERM, then SIGKILL); True if one was running."""
    paths = server_paths(data_dir)
    if not paths.root.exists():
        return False
    with server_lock(paths):
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
    problem = _problem(paths, local_uri(port)) if running else None
    if problem and problem.startswith("commands fail"):  # answers ping, every command fails: a panicked engine
        disk = disk_problem(paths.root.parent, paths.log)
        problem = f"it answers ping but every command fails ({problem[15:]}): " + (
            disk or f"its storage engine stopped; read the log {paths.log}, then stop and start it"
        )
    return {
        "running": running,
        "healthy": running and problem is None,
        "problem": problem,
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
    if status["running"] and status["problem"]:
        print(f"local SecantusDB server: running (pid {status['pid']}) at {status['uri']} but NOT WORKING:")
        print(f"  {status['problem']}")
    elif status["running"]:
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
            return 0 if status["healthy"] else 1
        if args.command == "start":
            was_running = local_server_status(settings.data_dir)["running"]
            ensure_local_server(settings.data_dir)
            status = local_server_status(settings.data_dir)
            print("already running" if was_running else "started")
            _print_status(status)
            return 0 if status["healthy"] else 1
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
