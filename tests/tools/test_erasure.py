"""Erasure that erases (issue 31), end to end on a private local server: after `--forget-user` the secret is in no
database the server exposes (its own `local`, `admin`, `config` included) and in no byte of the data directory once
the server stops; a chat of that user running meanwhile does not answer it or write it back."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument

from helpers.config import load_settings
from helpers.db.server import local_server_status, stop_local_server
from helpers.db.store import open_store

ROOT = Path(__file__).resolve().parents[2]
RAW = CodecOptions(document_class=RawBSONDocument)


@pytest.fixture
def data_dir(tmp_path):
    """A private data dir: forgetting rewrites the server's files and restarts it, which the shared one must not."""
    yield tmp_path / "data"
    stop_local_server(tmp_path / "data")


def _env(data_dir: Path) -> dict:
    return {**os.environ, "GTE_DATA_DIR": str(data_dir), "MONGODB_URI": "", "ANTHROPIC_API_KEY": ""}


def _cli(data_dir: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "helpers.chat", *args],
        input=stdin,
        env=_env(data_dir),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _copies_in_databases(data_dir: Path, secret: bytes) -> dict[str, int]:
    """Documents holding `secret`, per namespace, in EVERY database the server exposes (the raw BSON bytes)."""
    with open_store(load_settings().with_(data_dir=data_dir), fallback=False) as store:
        found = {}
        for db_name in store.client.list_database_names():
            db = store.client[db_name]
            for name in db.list_collection_names():
                raw = db.get_collection(name, codec_options=RAW)
                hits = sum(secret in doc.raw for doc in raw.find({}))
                if hits:
                    found[f"{db_name}.{name}"] = hits
        return found


def _copies_on_disk(data_dir: Path, secret: bytes) -> dict[str, int]:
    return {
        str(path.relative_to(data_dir)): path.read_bytes().count(secret)
        for path in data_dir.rglob("*")
        if path.is_file() and secret in path.read_bytes()
    }


@pytest.mark.slow
def test_forget_user_leaves_no_copy_in_any_database_nor_any_byte_on_disk(data_dir):
    secret, kept = f"locker-{uuid.uuid4().hex[:10]}", f"bike-{uuid.uuid4().hex[:10]}"
    for user, text in (("maya", secret), ("bob", kept)):
        args = ["--stage", "vector", "--user", user, "--session-file", str(data_dir.parent / f"{user}.sid")]
        said = _cli(data_dir, *args, stdin=f"My code is {text}.\nI like tea.\nWhat is my code?\nquit\n")
        assert said.returncode == 0 and text in said.stdout, said.stderr
    with open_store(load_settings().with_(data_dir=data_dir), fallback=False) as store:
        store.client.admin.command("fsync")  # a checkpoint: the secret is in the collection files, not only the journal
    assert _copies_in_databases(data_dir, secret.encode()) and _copies_in_databases(data_dir, kept.encode())

    out = _cli(data_dir, "--forget-user", "maya")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["total"] > 0 and report["left"] == 0 and "rewritten" in report["files"]

    assert _copies_in_databases(data_dir, secret.encode()) == {}  # local.oplog.rs, admin, config included
    assert _copies_in_databases(data_dir, kept.encode())  # the other user is kept
    assert local_server_status(data_dir)["healthy"]
    stop_local_server(data_dir)
    assert _copies_on_disk(data_dir, secret.encode()) == {}, "bytes of the erased user left in the data dir"
    assert _copies_on_disk(data_dir, kept.encode())  # ... while bob's are still on disk: the check can see bytes


class Chat:
    """A terminal chat kept running: one line in, one reply line out."""

    def __init__(self, data_dir: Path, *args: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "helpers.chat", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(data_dir),
            cwd=ROOT,
            text=True,
            bufsize=1,
        )

    def say(self, text: str, timeout: float = 180) -> str:
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 1.0)
            if ready:
                return self.proc.stdout.readline().strip()
            assert self.proc.poll() is None, self.proc.stderr.read()
        raise AssertionError(f"no reply to {text!r} within {timeout} s")

    def close(self) -> tuple[int, str]:
        self.proc.stdin.write("quit\n")
        self.proc.stdin.close()
        err = self.proc.stderr.read()
        return self.proc.wait(timeout=120), err


@pytest.mark.slow
def test_a_chat_running_while_its_user_is_forgotten_does_not_bring_the_secret_back(data_dir):
    secret = f"locker-{uuid.uuid4().hex[:10]}"
    chat = Chat(data_dir, "--stage", "vector", "--user", "maya", "--session-file", str(data_dir.parent / "maya.sid"))
    try:
        chat.say(f"My locker code is {secret}.")
        chat.say("I live in Portland and I like tea.")
        assert secret in chat.say("What is my locker code?")  # remembered while the user exists

        out = _cli(data_dir, "--forget-user", "maya")  # another process; the chat keeps running
        assert out.returncode == 0 and json.loads(out.stdout)["left"] == 0, out.stderr

        reply = chat.say("What is my locker code?")
        assert secret not in reply, reply
        assert chat.say("Thanks, bye for now.")
    finally:
        code, err = chat.close()
    assert code == 0, err
    assert _copies_in_databases(data_dir, secret.encode()) == {}  # nothing was written back: logs, memories, sessions
    stop_local_server(data_dir)
    assert _copies_on_disk(data_dir, secret.encode()) == {}
