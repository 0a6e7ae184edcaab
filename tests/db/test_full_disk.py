"""A full disk (issue 31): a write that did not happen is never reported as kept, the message names the disk and the
data directory, and `status` says when the server answers ping but every command fails (a panicked engine).

The real test fills a small tmpfs mounted for it (root only, as CI runs); the fast ones simulate the full disk by
reporting no free space and a store whose writes fail, and say so."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest
from pymongo.errors import OperationFailure

from helpers.config import load_settings
from helpers.db import health
from helpers.db.server import stop_local_server
from helpers.db.store import open_store
from helpers.memory.errors import explain_store
from helpers.tools.chat import _settle

ROOT = Path(__file__).resolve().parents[2]


# ---- simulated: no free space reported, writes refused --------------------------------------------------------------
def test_the_message_names_the_disk_and_the_data_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(health, "free_bytes", lambda path: 4096)
    store = SimpleNamespace(disk_problem=lambda: health.disk_problem(tmp_path / "data"))
    text = explain_store(OperationFailure("internal server error"), store)
    assert f"the data directory {tmp_path / 'data'}" in text and "is full" in text and "4.0 KB free" in text
    assert f"mounted at {health.mount_point(tmp_path)}" in text and "helpers.db.server stop" in text
    monkeypatch.setattr(health, "free_bytes", lambda path: 10 * health.LOW_DISK_BYTES)
    assert health.disk_problem(tmp_path / "data") is None
    log = tmp_path / "server.log"
    log.write_text("--- helpers.db.server: start ---\npwrite: failed: No space left on device\n")
    assert "ran out of space" in health.disk_problem(tmp_path / "data", log)
    log.write_text(log.read_text() + "--- helpers.db.server: a later start ---\nready\n")
    assert health.disk_problem(tmp_path / "data", log) is None  # a restart since then: the log is clean again


class _RefusingLogs:
    """A log collection on a full disk: the message was never written, and lookups still answer (0 found)."""

    def update_many(self, *args, **kwargs):
        return SimpleNamespace(modified_count=0)

    def count_documents(self, query):
        return 0


def test_a_message_that_was_not_written_is_never_reported_kept():
    store = SimpleNamespace(load_session=lambda *a: None, logs=_RefusingLogs())
    memory = SimpleNamespace(store=store, user_id="u", session_id="s", turn_id="t1")
    advice = _settle(memory, OperationFailure("internal server error"))
    assert "NOT saved" in advice and "kept" not in advice

    def broken(*args):
        raise OperationFailure("internal server error")

    memory.store = SimpleNamespace(load_session=broken, logs=_RefusingLogs())
    assert "may not have been saved" in _settle(memory, OperationFailure("internal server error"))
    assert "kept" not in _settle(SimpleNamespace(user_id="u"), RuntimeError("model down"))  # no store: nothing kept


# ---- real: a small filesystem, filled --------------------------------------------------------------------------------
@contextlib.contextmanager
def small_disk(where: Path, size_mb: int = 24):
    where.mkdir(parents=True)
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a small tmpfs needs root (CI runs as root); the simulated tests above still run")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(disk: Path) -> Path:
    """Write zeros until the disk refuses (ENOSPC), unbuffered so nothing is left to flush."""
    filler = disk / "filler.bin"
    with open(filler, "wb", buffering=0) as handle:
        for block in (1 << 20, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    handle.write(b"\0" * block)
    assert shutil.disk_usage(disk).free < 4096
    return filler


def _run(args: list[str], env: dict, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], input=stdin, env=env, cwd=ROOT, capture_output=True, text=True, timeout=180
    )


@pytest.mark.slow
def test_a_full_disk_is_named_never_kept_and_status_sees_the_panicked_engine(tmp_path):
    # 8 MB: too small for the storage engine to reserve its 10 MB log segment, so its writes need free pages
    with small_disk(tmp_path / "disk", size_mb=8) as disk:
        data = disk / "data"
        env = {**os.environ, "GTE_DATA_DIR": str(data), "MONGODB_URI": "", "ANTHROPIC_API_KEY": ""}
        chat = ["-m", "helpers.chat", "--stage", "bounded", "--session-file", str(tmp_path / "sid")]
        try:
            first = _run(chat, env, "Hello there\nquit\n")  # starts the server, one turn kept
            assert first.returncode == 0, first.stderr
            filler = _fill(disk)
            notes = [f"note {i}: my locker code is {uuid.uuid4().hex[:8]}" for i in range(6)]
            full = _run(chat, env, "\n".join([*notes, "quit"]) + "\n")
            failures = [line for line in full.stderr.splitlines() if line.startswith("! ")]
            assert full.returncode == 1 and len(failures) == len(notes), full.stderr
            for line in failures:  # nothing was written, so nothing is said to be kept; the disk is named
                assert "kept" not in line and ("NOT saved" in line or "may not have been saved" in line), line
                assert f"the data directory {data} is full" in line and f"mounted at {disk}" in line, line
            status = _run(["-m", "helpers.db.server", "status"], env)
            assert status.returncode == 1 and "NOT WORKING" in status.stdout, status.stdout
            assert "every command fails" in status.stdout and f"the data directory {data} is full" in status.stdout
            filler.unlink()  # space again: the next start replaces the panicked server, and the chat works
            again = _run(chat, env, "Hello again\nquit\n")
            assert again.returncode == 0 and "NOT WORKING" not in again.stderr, again.stderr
            assert _run(["-m", "helpers.db.server", "status"], env).returncode == 0
            with open_store(load_settings().with_(data_dir=data), fallback=False) as store:
                logged = " ".join(str(e["content"]) for e in store.logs.find({}))
            assert "Hello there" in logged and "Hello again" in logged
            refused = [note for note, line in zip(notes, failures) if "NOT saved" in line]
            assert refused and not any(note in logged for note in refused)  # reported not saved: indeed not there
        finally:
            stop_local_server(data)
