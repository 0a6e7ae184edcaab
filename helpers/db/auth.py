"""Plumbing: the local server asks who you are: one user per data dir, its password generated once and kept owner-only.

The local SecantusDB server runs with `--auth` (SCRAM-SHA-256), so a process that cannot read
`<data_dir>/secantus/credentials.json` (mode 0600, in a folder of mode 0700 that also holds the data files) can
neither read nor write anything on it: on a shared workshop machine or JupyterHub, one learner's memories are not
every local user's. The helpers pass the credentials to pymongo themselves (`client_options`, `local_client`);
the connection string stays free of them, so nothing prints the password.

Before every start, `bootstrap` gives the storage its users while no port is open: a short child process runs the
server's own code on the storage files (no socket at all), drops every user in every database that is not ours
and makes ours with the stored password; only then does the server start, with `--auth`. So the server never
listens without authentication, not for a millisecond, and no user another process slipped into the files
survives a start. (SecantusDB is still never imported here: the child is a separate Python process, like the
daemon itself.)
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pymongo import MongoClient
from pymongo.errors import OperationFailure, PyMongoError

__all__ = [
    "USER",
    "CREDENTIALS_FILE",
    "AuthProblem",
    "credentials_path",
    "ensure_credentials",
    "read_credentials",
    "mark_provisioned",
    "client_options",
    "local_client",
    "bootstrap",
    "keep_only_ours",
    "authenticated_problem",
]

USER = "gte"
CREDENTIALS_FILE = "credentials.json"
MECHANISM = "SCRAM-SHA-256"
_ROLES = [{"role": "root", "db": "admin"}]


class AuthProblem(RuntimeError):
    """The credentials file cannot be made, read or used; the message names the file."""


def credentials_path(root: Path) -> Path:
    """`<data_dir>/secantus/credentials.json` for the server folder `root`."""
    return Path(root) / CREDENTIALS_FILE


def _owner_only(root: Path) -> None:
    """The server folder (data files, log, credentials) readable by its owner only: 0700 (if we own it)."""
    root.mkdir(parents=True, exist_ok=True)
    info = root.stat()
    if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) != 0o700:
        root.chmod(0o700)


def read_credentials(root: Path) -> dict | None:
    """The stored credentials of the server folder `root`, or None if there are none yet."""
    path = credentials_path(root)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise AuthProblem(
            f"{path} cannot be read ({err}); if it is damaged, delete it: the next start makes new credentials"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("password"), str) or not data.get("user"):
        raise AuthProblem(f"{path} does not hold credentials; delete it: the next start makes new ones")
    info = path.stat()
    if stat.S_IMODE(info.st_mode) & 0o077 and info.st_uid == os.geteuid():
        path.chmod(0o600)  # a copy or a restore widened it: owner-only again
    return data


def _write(path: Path, data: dict) -> None:
    """Write `data` to `path` atomically, created 0600 (never readable by others, not even for a moment)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(json.dumps(data, indent=2) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def ensure_credentials(root: Path) -> dict:
    """The credentials of the server folder `root`, generated (a 256-bit random password) if it has none.

    Called with the server lock held (helpers.db.server), so two processes never make two passwords."""
    _owner_only(root)
    found = read_credentials(root)
    if found is not None:
        return found
    data = {
        "user": USER,
        "password": secrets.token_urlsafe(32),
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "provisioned": None,  # the storage dir whose server has this user (set by mark_provisioned)
    }
    _write(credentials_path(root), data)
    return data


def mark_provisioned(root: Path, storage: Path) -> dict:
    """Record that the server on `storage` now has the user of these credentials."""
    data = {**(read_credentials(root) or {}), "provisioned": str(storage)}
    _write(credentials_path(root), data)
    return data


def client_options(credentials: dict) -> dict[str, Any]:
    """pymongo keyword arguments that authenticate as the local server's user."""
    return {
        "username": credentials["user"],
        "password": credentials["password"],
        "authSource": "admin",
        "authMechanism": MECHANISM,
    }


def local_client(uri: str, root: Path, **options: Any) -> MongoClient:
    """A pymongo client for the local server of folder `root`, authenticated with its stored credentials."""
    credentials = read_credentials(root)
    if credentials is None:
        raise AuthProblem(
            f"{credentials_path(root)} is missing, so the local server cannot be reached; run "
            "`python -m helpers.db.server stop`, then start it again (new credentials are made on start)"
        )
    return MongoClient(uri, **client_options(credentials), **options)


# Run by `bootstrap` in its own process (`python -I -c`): argv[1] is the storage dir; stdin holds the credentials.
# The server's own createUser/dropUser handlers run on the storage files; no socket is opened. Exit 3: the
# storage dir holds files but no database (not what the helpers made); stdout: the dropped users, as JSON.
_BOOTSTRAP = """
import json, os, sys
os.umask(0o077)
storage, credentials = sys.argv[1], json.loads(sys.stdin.read())
if os.path.isdir(storage) and os.listdir(storage) and not os.path.exists(os.path.join(storage, 'WiredTiger')):
    print(json.dumps(sorted(os.listdir(storage))[:5])); sys.exit(3)
from secantus.commands import CommandContext, dispatch
from secantus.cursors import CursorRegistry
from secantus.storage import Storage
store = Storage(storage, enable_oplog=False)
try:
    run = lambda doc, db: dispatch(doc, CommandContext(connection_id=0, storage=store, cursors=CursorRegistry(), db_name=db))
    dropped = []
    for user in store.list_users(None, limit=1000000):
        db, name = user.get('db'), user.get('user')
        run({'dropUser': name}, db)
        if (db, name) != ('admin', credentials['user']):
            dropped.append(f'{db}.{name}')
    done = run({'createUser': credentials['user'], 'pwd': credentials['password'], 'roles': ROLES}, 'admin')
    if done.get('ok') != 1.0:
        raise SystemExit('createUser failed: ' + str(done.get('errmsg')))
    print(json.dumps(dropped))
finally:
    store.close()
"""


def bootstrap(storage: Path, credentials: dict, timeout: float = 120.0) -> list[str]:
    """Before the server starts: make our user the only user of `storage`, with no port open; the dropped users.

    Runs the server's own user commands on the storage files in a child process (the storage must not be open in
    a server). A storage dir that holds files but no database is refused: the helpers did not make it."""
    storage = Path(storage)
    storage.mkdir(mode=0o700, parents=True, exist_ok=True)
    script = _BOOTSTRAP.replace("ROLES", repr(_ROLES))
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-c", script, str(storage)],
            input=json.dumps({"user": credentials["user"], "password": credentials["password"]}),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=storage.parent,
        )
    except subprocess.TimeoutExpired:
        raise AuthProblem(f"giving {storage} its user took over {timeout:.0f} s; retry the start") from None
    if done.returncode == 3:
        raise AuthProblem(
            f"{storage} holds files ({', '.join(json.loads(done.stdout))}) but no database the helpers made, so "
            "it is refused; move that folder away or delete it, and start again"
        )
    if done.returncode != 0:
        raise AuthProblem(f"could not give {storage} its user: {done.stderr.strip()[-400:] or 'no output'}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _all_users(client: MongoClient) -> list[tuple[str, str]]:
    """(db, user) of every user the server lists: `usersInfo: {forAllDBs: true}` plus each listed database's own."""
    found = {(u.get("db", "admin"), u["user"]) for u in client.admin.command("usersInfo", {"forAllDBs": True})["users"]}
    for name in ["admin", *client.list_database_names()]:
        found |= {(u.get("db", name), u["user"]) for u in client[name].command("usersInfo").get("users", [])}
    return sorted(found)


def keep_only_ours(client: MongoClient, credentials: dict) -> list[str]:
    """Over the wire, after an authenticated start: drop every user in any database but ours; the dropped."""
    others = [(db, name) for db, name in _all_users(client) if (db, name) != ("admin", credentials["user"])]
    for db, name in others:
        with contextlib.suppress(OperationFailure):
            client[db].command("dropUser", name)
    return [f"{db}.{name}" for db, name in others]


def authenticated_problem(uri: str, credentials: dict, timeout_ms: int = 2000) -> str | None:
    """None if our user can log in and the server answers a command; else what went wrong, in a few words."""
    client: MongoClient = MongoClient(
        uri, serverSelectionTimeoutMS=timeout_ms, connectTimeoutMS=timeout_ms, **client_options(credentials)
    )
    try:
        client.admin.command("listDatabases", nameOnly=True)
        return None
    except OperationFailure as err:
        return "authentication failed" if err.code == 18 else f"commands fail: {err.details.get('errmsg', err)}"
    except PyMongoError as err:
        return f"no answer ({type(err).__name__})"
    finally:
        client.close()
