"""Issue 41: another user of the machine reads nothing of the data dir: folders 0700, files 0600, index files, log,
lock and record included; a data dir made with wider modes is tightened on start."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import pytest
from _embedders import HashEmbedder

from helpers.config import load_settings
from helpers.db.instance import server_paths
from helpers.db.private import exposed, tighten
from helpers.db.server import ensure_local_server, stop_local_server
from helpers.db.store import open_store
from helpers.retrieval import MemoryIndex
from helpers.retrieval import users as users_module
from helpers.retrieval.schema import TurnUnit
from helpers.retrieval.snapshot import index_root, snapshot_path

SECRET = "my-vault-code-is-7Q4Z9"


@pytest.fixture
def shared_parent():
    """A folder every local user may enter (as /home/you or a JupyterHub volume often is), holding the data dir."""
    parent = Path(tempfile.mkdtemp(prefix="gte-private-"))
    parent.chmod(0o755)
    yield parent
    stop_local_server(parent / "data")
    shutil.rmtree(parent, ignore_errors=True)


def _memories_with_an_index_file(data_dir: Path, monkeypatch) -> Path:
    monkeypatch.setattr(users_module, "SNAPSHOT_MIN_ROWS", 8)
    embedder = HashEmbedder()
    store = open_store(load_settings().with_(data_dir=data_dir), fallback=False)
    try:
        index = MemoryIndex(store, embedder)
        start = datetime(2024, 1, 1, tzinfo=timezone.utc)
        units = [TurnUnit(s, "user", f"turn {s}: {SECRET} and tacos", start, "Maya") for s in range(1, 13)]
        with index.holding("maya"):
            index.add_turns("maya", "s1", units)
        path = snapshot_path(index_root(store), store.db.name, "maya")
        assert path.exists() and SECRET.encode() in path.read_bytes()  # the file holds memory text: it matters
        return path
    finally:
        store.close()


def test_nothing_under_a_new_data_dir_is_readable_by_others(shared_parent, monkeypatch):
    data_dir = shared_parent / "data"
    _memories_with_an_index_file(data_dir, monkeypatch)
    paths = server_paths(data_dir)
    assert paths.log.exists() and paths.lock.exists() and paths.record.exists()
    assert exposed(data_dir) == []
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("runuser"), reason="needs root to act as user nobody")
def test_user_nobody_reads_no_memory_from_the_data_dir(shared_parent, monkeypatch):
    data_dir = shared_parent / "data"
    _memories_with_an_index_file(data_dir, monkeypatch)
    probe = subprocess.run(
        ["runuser", "-u", "nobody", "--", "grep", "-r", "-a", "-l", SECRET, str(data_dir)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe.returncode != 0 and SECRET not in probe.stdout and probe.stdout == ""
    assert "Permission denied" in probe.stderr


@pytest.mark.slow  # starts its own server (seconds): the full set runs it
def test_an_existing_data_dir_with_wide_modes_is_tightened_on_start(shared_parent):
    data_dir = shared_parent / "data"
    ensure_local_server(data_dir)
    stop_local_server(data_dir)
    for folder, _dirs, files in os.walk(data_dir):  # as a copy, a restore or an older version left it
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(Path(folder) / name, 0o644)
    (data_dir / "index").mkdir(mode=0o755)
    (data_dir / "index" / "old.idx").write_text("an index file made before")
    os.chmod(data_dir / "index" / "old.idx", 0o644)
    assert len(exposed(data_dir)) > 5
    ensure_local_server(data_dir)
    assert exposed(data_dir) == []
    assert tighten(data_dir) == 0  # nothing left to change
