"""Tools: `python -m helpers.chat --forget-user USER`: erase a user so that no copy is left, or say which copies remain.

On the local server (all of this checkout's data): the user is forgotten in every database on it
(helpers.memory.forget), then its files are rewritten without a byte of the deleted documents
(helpers.db.server.erase_deleted); it runs without an oplog, so no replay log keeps them either. On MONGODB_URI
only the configured database is touched, and the command says plainly what it cannot reach: the oplog, backups,
other databases. The result is printed as JSON; the exit code is 0 only when nothing of the user is left.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from helpers.config import Settings
from helpers.db import store as db_store
from helpers.db.scrub import SYSTEM_DATABASES
from helpers.db.server import erase_deleted
from helpers.db.store import Store, StoreError
from helpers.memory.forget import documents_of, forget_user
from helpers.tools.cli_checks import terminal_safe

__all__ = ["OPERATOR_NOTE", "forget_command", "forget_everywhere"]

OPERATOR_NOTE = (
    "Deleted from database {db} of the server in MONGODB_URI. The server itself may still hold copies this "
    "command cannot reach: its oplog (a replica set, Atlas included, keeps every write, this user's too, for its "
    "oplog window: hours to days; check it with `rs.printReplicationInfo()`, shrink it with `replSetResizeOplog` or "
    "let it pass), its backups and snapshots (Atlas Cloud Backup, mongodump files: delete or let expire those taken "
    "while the user existed, or record the erasure to redo after any restore), and other databases or clusters the "
    "data was copied to (run --forget-user again with GTE_DB_NAME set to each other database of this app). Those "
    "are the operator's to erase."
)


def _databases(store: Store) -> list[str]:
    """The store's database first, then (local server only: all of it is this checkout's) every other one on it."""
    names = [store.db.name]
    if store.kind == "local":
        names += sorted(n for n in store.client.list_database_names() if n not in SYSTEM_DATABASES and n != names[0])
    return names


def forget_everywhere(store: Store, user_id: str) -> dict[str, Any]:
    """Forget `user_id` in the store's database and, on the local server, in every other database on it."""
    result = forget_user(store, user_id)
    left = sum(documents_of(store, user_id).values())
    others = {}
    for name in _databases(store)[1:]:
        other = Store(store.client, store.client[name], store.kind, store.uri, store.data_dir)  # no indexes made
        others[name] = forget_user(other, user_id)["total"]
        left += sum(documents_of(other, user_id).values())
    result["total"] += sum(others.values())
    if others:
        result["other_databases"] = others
    result["left"] = left
    return result


def forget_command(settings: Settings, user_id: str, one_line) -> int:
    """--forget-user: print what was erased as JSON (and, on MONGODB_URI, what is left to the operator)."""
    try:
        # never "forget" in an in-memory stand-in and report success; looked up at call time (db_store.open_store),
        # as the chat's stages do, so a test that gives the chat its store gives --forget-user the same one
        store = db_store.open_store(settings, fallback=False)
    except StoreError as err:
        print(f"error: {one_line(err)}", file=sys.stderr)
        return 2
    try:
        result = forget_everywhere(store, user_id)
        if store.kind == "local" and result["left"] == 0:
            store.close()  # the rewrite restarts the server
            done = erase_deleted(settings.data_dir)
            result["files"] = (
                f"rewritten without the deleted documents ({sum(done['copied'].values())} documents kept, "
                f"{done['seconds']} s); no oplog is kept"
            )
        elif store.kind == "uri":
            result["note"] = OPERATOR_NOTE.format(db=store.db.name)
            print(f"note: {result['note']}", file=sys.stderr)
    except Exception as err:  # noqa: BLE001 - the database failed mid-way: say so; rerunning finishes the job
        print(f"error: {one_line(err)} (run --forget-user again to finish)", file=sys.stderr)
        return 1
    finally:
        store.close()
    print(terminal_safe(json.dumps(result, indent=2, ensure_ascii=False)))
    return 0 if result["left"] == 0 else 1
