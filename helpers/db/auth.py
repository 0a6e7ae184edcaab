"""Plumbing: the local server asks who you are: one user per data dir, its password generated once and kept owner-only.

The local SecantusDB server runs with `--auth` (SCRAM-SHA-256), so a process that cannot read
`<data_dir>/secantus/credentials.json` (mode 0600, in a folder of mode 0700 that also holds the data files) can
neither read nor write anything on it: on a shared workshop machine or JupyterHub, one learner's memories are not
every local user's. The helpers pass the credentials to pymongo themselves (`client_options`, `local_client`);
the connection string stays free of them, so nothing prints the password.

A data dir whose storage has no user yet (a new one, or one made before the server asked for a password) is
provisioned by helpers.db.server on start: the server runs once without `--auth` on a fresh loopback port (about a
second), `provision` makes our user the only one, and the server is restarted with `--auth`. Whoever connected in
that second cannot stay: every authenticated start drops any other user (`keep_only_ours`).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
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
    "provision",
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


def _users(client: MongoClient) -> list[str]:
    return [u["user"] for u in client.admin.command("usersInfo").get("users", [])]


def provision(uri: str, credentials: dict, timeout_ms: int = 5000) -> None:
    """On a server started WITHOUT --auth: make our user (with this password) the only user, with the root role."""
    client: MongoClient = MongoClient(uri, serverSelectionTimeoutMS=timeout_ms, connectTimeoutMS=timeout_ms)
    try:
        for name in _users(client):
            client.admin.command("dropUser", name)
        client.admin.command("createUser", credentials["user"], pwd=credentials["password"], roles=_ROLES)
        keep_only_ours(client, credentials)
    finally:
        client.close()


def keep_only_ours(client: MongoClient, credentials: dict) -> list[str]:
    """Drop every user but ours (someone could add one while the server briefly ran without --auth); the dropped."""
    others = [name for name in _users(client) if name != credentials["user"]]
    for name in others:
        with contextlib.suppress(OperationFailure):
            client.admin.command("dropUser", name)
    return others


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
