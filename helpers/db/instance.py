"""Plumbing: one local SecantusDB server as found on disk and among processes: its files, its record, is it ours and alive.

Each data dir holds one server: `<data_dir>/secantus/` keeps its storage, its record (server.json: pid, port, uri),
its lock and its log. A recorded pid counts only while it is a live `secantusd-py` on this storage that answers a
ping (pids get reused). helpers.db.server starts, adopts and stops the server with these.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from pymongo import MongoClient
from pymongo.errors import PyMongoError

from helpers.db.private import private_file
from helpers.db.processes import cmdline, pid_running, port_open

__all__ = [
    "SERVER_BINARY",
    "HOST",
    "ServerPaths",
    "server_paths",
    "local_uri",
    "is_our_server",
    "server_pids",
    "ping",
    "read_record",
    "write_record",
    "live_uri",
]

SERVER_BINARY = "secantusd-py"
HOST = "127.0.0.1"


@dataclass(frozen=True)
class ServerPaths:
    root: Path  # <data_dir>/secantus
    storage: Path  # WiredTiger home: one server process at a time
    record: Path  # server.json: pid, host, port, started_at, log
    log: Path
    lock: Path


def server_paths(data_dir: str | os.PathLike) -> ServerPaths:
    root = Path(data_dir).expanduser().resolve() / "secantus"
    return ServerPaths(root, root / "db", root / "server.json", root / "server.log", root / "server.lock")


def local_uri(port: int) -> str:
    return f"mongodb://{HOST}:{port}/?directConnection=true"


def is_our_server(pid: int, storage: Path) -> bool:
    """Guard against pid reuse: on Linux the process must be secantusd on this storage dir."""
    args = cmdline(pid)
    if args is None:
        return pid_running(pid)
    return any(SERVER_BINARY in a for a in args) and str(storage) in args


def server_pids(storage: Path) -> list[int]:
    """Live secantusd processes serving `storage`, found via /proc (Linux only; else [])."""
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    pids = []
    for entry in proc.iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            pid = int(entry.name)
            if is_our_server(pid, storage) and pid_running(pid):
                pids.append(pid)
    return pids


def ping(uri: str, timeout_ms: int = 2000) -> bool:
    client: MongoClient = MongoClient(uri, serverSelectionTimeoutMS=timeout_ms, connectTimeoutMS=timeout_ms)
    try:
        client.admin.command("ping")
        return True
    except PyMongoError:
        return False
    finally:
        client.close()


def read_record(paths: ServerPaths) -> dict | None:
    try:
        record = json.loads(paths.record.read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def write_record(paths: ServerPaths, pid: int, port: int) -> dict:
    record = {
        "pid": pid,
        "host": HOST,
        "port": port,
        "uri": local_uri(port),
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "storage_path": str(paths.storage),
        "log": str(paths.log),
    }
    tmp = paths.record.with_suffix(f".tmp{os.getpid()}")
    with os.fdopen(private_file(tmp), "w") as out:
        out.write(json.dumps(record, indent=2) + "\n")
    os.replace(tmp, paths.record)
    return record


def live_uri(paths: ServerPaths) -> str | None:
    """The recorded server's URI if its process is alive and it answers a ping, else None."""
    record = read_record(paths)
    pid, port = (record or {}).get("pid"), (record or {}).get("port")
    if not isinstance(port, int) or not pid_running(pid) or not is_our_server(pid, paths.storage):
        return None
    return local_uri(port) if port_open(port) and ping(local_uri(port)) else None
