"""Plumbing: make an erasure final on the local server: rewrite its data directory so no byte of a deleted document is left.

Deleting a document leaves its bytes on disk: WiredTiger frees the blocks but does not overwrite them, and its
journal keeps every write until the file is recycled. Measured on SecantusDB 0.7.0b3: 200 deleted log entries
were still in the collection file 200 times after delete, two checkpoints (`fsync`) and a clean stop; the journal
held them until the next start. SecantusDB has no compaction command, so `scrub` rebuilds the files:

1. a fresh storage dir gets our user (helpers.db.auth), while it is still empty;
2. the server stops; the old storage is opened by a private server on another port, beside the fresh one;
3. every document still there is copied, byte for byte (raw BSON), with each collection's indexes;
4. both stop; the fresh dir takes the old one's place (a journal file makes a crash here recoverable, see
   `recover`), the old files are deleted, and the server starts again on the port its clients use.

The local server has been down a few seconds meanwhile: pymongo waits up to 5 s to select a server, and a
bounded turn that finds it gone reconnects once (helpers.db.store.Store.reconnect waits for the lock held here).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument
from pymongo import MongoClient

from helpers.db.auth import bootstrap, ensure_credentials, local_client
from helpers.db.instance import ServerPaths, is_our_server, local_uri, read_record, server_paths, server_pids
from helpers.db.launch import launch, server_lock
from helpers.db.processes import pid_running, port_of, terminate

__all__ = ["SYSTEM_DATABASES", "scrub", "recover", "copy_databases"]

SYSTEM_DATABASES = ("admin", "local", "config")  # the server's own: users are made anew, the rest is not ours
STOP_TIMEOUT_S = 15.0
BATCH = 500
_RAW = CodecOptions(document_class=RawBSONDocument)  # documents copied as the bytes they are, never re-encoded


def _fresh(paths: ServerPaths) -> Path:
    return paths.root / "db.scrub"


def _erased(paths: ServerPaths) -> Path:
    return paths.root / "db.erased"


def _journal(paths: ServerPaths) -> Path:
    return paths.root / "scrub.json"


def recover(paths: ServerPaths) -> str | None:
    """Finish or undo a scrub that was killed part-way (call with the server lock held); what was done, or None."""
    journal, fresh, erased = _journal(paths), _fresh(paths), _erased(paths)
    copied = journal.exists() and json.loads(journal.read_text() or "{}").get("state") == "copied"
    done = None
    if not paths.storage.exists() and erased.exists():
        if copied and fresh.exists():
            os.rename(fresh, paths.storage)
            done = "finished an interrupted scrub"
        else:
            os.rename(erased, paths.storage)
            done = "undid an interrupted scrub"
    if erased.exists():
        shutil.rmtree(erased)
    if fresh.exists():
        shutil.rmtree(fresh)  # a copy that never became the data: nothing in it is needed
    journal.unlink(missing_ok=True)
    return done


def copy_databases(source: MongoClient, target: MongoClient) -> dict[str, int]:
    """Copy every database but the server's own, collection by collection, raw BSON and indexes; {db: documents}."""
    copied: dict[str, int] = {}
    for db_name in source.list_database_names():
        if db_name in SYSTEM_DATABASES:
            continue
        copied[db_name] = 0
        for info in source[db_name].list_collections():
            name = info["name"]
            if name.startswith("system."):
                continue
            src = source[db_name].get_collection(name).with_options(codec_options=_RAW)
            dst = target[db_name].get_collection(name).with_options(codec_options=_RAW)
            target[db_name].create_collection(name, **dict(info.get("options") or {}))
            batch: list = []
            for doc in src.find({}, batch_size=BATCH):
                batch.append(doc)
                if len(batch) == BATCH:
                    dst.insert_many(batch, ordered=True)
                    copied[db_name] += len(batch)
                    batch = []
            if batch:
                dst.insert_many(batch, ordered=True)
                copied[db_name] += len(batch)
            for spec in source[db_name][name].list_indexes():
                spec = dict(spec)
                if spec.get("name") == "_id_":
                    continue
                keys = list(dict(spec.pop("key")).items())
                options = {k: v for k, v in spec.items() if k not in ("v", "ns")}
                target[db_name][name].create_index(keys, **options)
    return copied


def _stop(paths: ServerPaths) -> int | None:
    """Stop the data dir's server; the port it listened on (clients will find the new one there), if known."""
    record = read_record(paths) or {}
    port, pids = record.get("port"), []
    if pid_running(record.get("pid")) and is_our_server(record["pid"], paths.storage):
        pids.append(record["pid"])
    pids += [p for p in server_pids(paths.storage) if p not in pids]
    for pid in pids:
        terminate(pid, STOP_TIMEOUT_S, port_of(pid) or port)
    return port if isinstance(port, int) else None


def scrub(data_dir: str | os.PathLike) -> dict:
    """Rewrite the local server's storage with only the documents still in it, and leave it stopped.

    helpers.db.server.erase_deleted starts it again on the same port. Returns what was copied and how long it
    took. Run after deleting (helpers.memory.forget)."""
    paths = server_paths(data_dir)
    started = time.monotonic()
    with server_lock(paths):
        recover(paths)
        credentials = ensure_credentials(paths.root)
        fresh = _fresh(paths)
        bootstrap(fresh, credentials)  # 1. our user in the fresh, still empty storage (no port open)
        old_port = _stop(paths)  # 2. from here on the data dir has no server its clients can reach
        bootstrap(paths.storage, credentials)  # no user but ours in the old storage either
        old = launch(paths, paths.storage)
        new = launch(paths, fresh)
        try:
            with (
                local_client(local_uri(old[1]), paths.root) as source,
                local_client(local_uri(new[1]), paths.root) as target,
            ):
                copied = copy_databases(source, target)  # 3.
        finally:
            for pid, port in (old, new):
                terminate(pid, STOP_TIMEOUT_S, port)
        _journal(paths).write_text(json.dumps({"state": "copied"}))  # 4.
        os.rename(paths.storage, _erased(paths))
        os.rename(fresh, paths.storage)
        shutil.rmtree(_erased(paths))
        _journal(paths).unlink()
        # the next start takes this port again if it is free, so clients find the server where it was
        paths.record.write_text(json.dumps({"pid": None, "port": old_port, "reuse_port": True}))
    return {"copied": copied, "seconds": round(time.monotonic() - started, 1)}
