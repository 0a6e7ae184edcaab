"""The local server asks who you are (issue 31): credentials per data dir, owner-only; an unauthenticated client is
refused; the helpers log in by themselves; a data dir made before auth is upgraded; no other user survives a start."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pymongo import MongoClient
from pymongo.errors import OperationFailure

from helpers.config import load_settings
from helpers.db.auth import USER, client_options, read_credentials
from helpers.db.instance import SERVER_BINARY, server_paths
from helpers.db.server import ensure_local_server, local_server_status, stop_local_server
from helpers.db.store import open_store

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def scratch_dir(tmp_path):
    """A private data dir for tests that start/stop their own server; stopped afterwards whatever happens."""
    yield tmp_path
    stop_local_server(tmp_path)


def _refused(client: MongoClient, code: int) -> None:
    with pytest.raises(OperationFailure) as info:
        client.goldfish_to_elephant.memories.find_one({})
    assert info.value.code == code, info.value
    client.close()


def test_an_unauthenticated_client_is_refused_and_the_helpers_get_in(local_store):
    local_store.memories.insert_one({"user_id": "auth-test", "text": "my locker code is 4411"})
    _refused(MongoClient(local_store.uri, serverSelectionTimeoutMS=3000), 13)  # Unauthorized: no credentials
    wrong = {**client_options(read_credentials(server_paths(local_store.data_dir).root)), "password": "guess"}
    _refused(MongoClient(local_store.uri, serverSelectionTimeoutMS=3000, **wrong), 18)  # AuthenticationFailed
    assert local_store.memories.find_one({"user_id": "auth-test"})["text"] == "my locker code is 4411"
    local_store.memories.delete_many({"user_id": "auth-test"})


def test_credentials_are_owner_only_and_never_shown(local_store):
    root = server_paths(local_store.data_dir).root
    credentials = read_credentials(root)
    assert credentials["user"] == USER and len(credentials["password"]) >= 40
    assert stat.S_IMODE((root / "credentials.json").stat().st_mode) == 0o600
    assert stat.S_IMODE(root.stat().st_mode) == 0o700  # the data files, log and credentials: owner only
    shown = [local_store.uri, local_store.describe(), repr(local_store), (root / "server.json").read_text()]
    assert not any(credentials["password"] in text for text in shown)
    status = local_server_status(local_store.data_dir)
    assert status["healthy"] and status["problem"] is None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_a_data_dir_from_before_auth_is_upgraded_and_keeps_its_data(scratch_dir):
    """As the helpers ran it before: no --auth, no --standalone, a record in server.json; a memory in it."""
    paths = server_paths(scratch_dir)
    paths.root.mkdir(parents=True)
    port = _free_port()
    binary = Path(sys.executable).parent / SERVER_BINARY
    old = subprocess.Popen(
        [str(binary), "--host", "127.0.0.1", "--port", str(port), "--storage-path", str(paths.storage)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    open_client = MongoClient(f"mongodb://127.0.0.1:{port}/?directConnection=true", serverSelectionTimeoutMS=20000)
    open_client.goldfish_to_elephant.memories.insert_one({"user_id": "maya", "text": "I keep a teal kayak."})
    open_client.admin.command("createUser", "mallory", pwd="backdoor", roles=[{"role": "root", "db": "admin"}])
    record = {"pid": old.pid, "host": "127.0.0.1", "port": port, "uri": f"mongodb://127.0.0.1:{port}/"}
    paths.record.write_text(json.dumps(record))
    try:
        store = open_store(load_settings().with_(data_dir=scratch_dir), fallback=False)
        assert old.wait(timeout=30) is not None  # the open server was stopped ...
        assert store.memories.find_one({"user_id": "maya"})["text"] == "I keep a teal kayak."  # ... its data kept
        users = [u["user"] for u in store.client.admin.command("usersInfo")["users"]]
        assert users == [USER]  # a user made while the server was open is gone
        _refused(MongoClient(store.uri, serverSelectionTimeoutMS=3000), 13)
        backdoor = MongoClient(store.uri, username="mallory", password="backdoor", serverSelectionTimeoutMS=3000)
        _refused(backdoor, 18)
        assert "--auth" in _cmdline(store) and "--standalone" in _cmdline(store)
        store.close()
    finally:
        if old.poll() is None:
            old.kill()
            old.wait()


def _cmdline(store) -> list[str]:
    pid = json.loads((server_paths(store.data_dir).record).read_text())["pid"]
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0") if Path("/proc").is_dir() else ["--auth"]


@pytest.mark.slow
def test_lost_credentials_are_made_again_and_the_old_password_stops_working(scratch_dir):
    first_uri = ensure_local_server(scratch_dir)
    root = server_paths(scratch_dir).root
    first = read_credentials(root)
    stop_local_server(scratch_dir)
    (root / "credentials.json").unlink()
    started = time.monotonic()
    uri = ensure_local_server(scratch_dir)
    second = read_credentials(root)
    assert second["password"] != first["password"] and time.monotonic() - started < 20
    _refused(MongoClient(uri, serverSelectionTimeoutMS=3000, **client_options(first)), 18)
    with open_store(load_settings().with_(data_dir=scratch_dir), fallback=False) as store:
        assert store.memories.count_documents({}) == 0 and first_uri.startswith("mongodb://127.0.0.1:")
    assert os.stat(root / "credentials.json").st_mode & 0o077 == 0


def _servers_on(storage: Path) -> list[list[str]]:
    """The command lines of every live process serving `storage` (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                args = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
            except OSError:
                continue
            if any(SERVER_BINARY in a for a in args) and str(storage) in args:
                found.append(args)
    return found


@pytest.mark.slow  # starts its own server (seconds): the full set runs it
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="the watcher reads /proc (Linux)")
def test_a_watcher_sees_no_server_without_auth_for_a_new_data_dir(scratch_dir):
    """Issue 41: a new data dir's server never runs without --auth, not for a millisecond; nobody gets in."""
    import threading

    storage = server_paths(scratch_dir).storage
    seen: list[list[str]] = []
    attempts: list[str] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            for args in _servers_on(storage):
                seen.append(args)
                port = args[args.index("--port") + 1]
                try:  # what another local user would do the moment the port opens
                    with MongoClient(f"mongodb://127.0.0.1:{port}/", serverSelectionTimeoutMS=200) as probe:
                        probe.admin.command("createUser", "mallory", pwd="x", roles=["root"])
                    attempts.append("createUser succeeded")
                except Exception as err:  # noqa: BLE001 - any refusal is the point
                    attempts.append(type(err).__name__)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        uri = ensure_local_server(scratch_dir)
        time.sleep(0.3)
    finally:
        done.set()
        watcher.join()
    assert seen, "the watcher saw no server at all: it did not watch"
    assert all("--auth" in args for args in seen), [a for a in seen if "--auth" not in a][:1]
    assert "createUser succeeded" not in attempts
    with MongoClient(uri, serverSelectionTimeoutMS=3000, **client_options(read_credentials(storage.parent))) as c:
        assert [u["user"] for u in c.admin.command("usersInfo")["users"]] == [USER]


@pytest.mark.slow
def test_a_user_planted_in_any_database_is_dropped_at_start(scratch_dir):
    """A user slipped into the storage files in a non-admin database (usersInfo on admin never lists it) is gone
    after the next start, and the log says which."""
    ensure_local_server(scratch_dir)
    stop_local_server(scratch_dir)
    paths = server_paths(scratch_dir)
    port = _free_port()
    binary = Path(sys.executable).parent / SERVER_BINARY
    rogue = subprocess.Popen(
        [str(binary), "--host", "127.0.0.1", "--port", str(port), "--storage-path", str(paths.storage)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        with MongoClient(f"mongodb://127.0.0.1:{port}/?directConnection=true", serverSelectionTimeoutMS=20000) as c:
            c.goldfish_to_elephant.command("createUser", "mallory", pwd="backdoor", roles=["readWrite"])
    finally:
        rogue.terminate()
        rogue.wait(timeout=30)
    uri = ensure_local_server(scratch_dir)
    backdoor = MongoClient(
        uri, username="mallory", password="backdoor", authSource="goldfish_to_elephant", serverSelectionTimeoutMS=3000
    )
    _refused(backdoor, 18)
    assert "goldfish_to_elephant.mallory" in paths.log.read_text()


def test_files_in_a_storage_dir_without_a_database_are_refused(tmp_path):
    paths = server_paths(tmp_path)
    paths.storage.mkdir(parents=True)
    (paths.storage / "planted.wt").write_bytes(b"not ours")
    from helpers.db.launch import StoreUnavailable

    with pytest.raises(StoreUnavailable, match="planted.wt.*refused"):
        ensure_local_server(tmp_path)
    assert not _servers_on(paths.storage) and (paths.storage / "planted.wt").exists()
