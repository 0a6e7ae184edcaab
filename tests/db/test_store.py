"""Tests for helpers.db.store: connection resolution, the local server lifecycle, sessions and logs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from helpers.config import load_settings
from helpers.db import launch as localserver
from helpers.db.instance import server_pids
from helpers.db.processes import pid_running
from helpers.db.server import ensure_local_server, local_server_status, stop_local_server
from helpers.db.store import Store, StoreError, StoreUnavailable, StoreWarning, mongomock_store, open_store

ROOT = Path(__file__).resolve().parents[2]
ODD_IDS = ['{"$ne": null}', "$where", "$gt", "a.b", ".*", " ", "ünï😀", "null", "0"]
BAD_IDS = [{"$ne": None}, {"$gt": ""}, None, 0, 1.5, b"u", ["u"], True]


@pytest.fixture
def scratch_dir(tmp_path):
    """A private data dir for tests that start/stop their own server; stopped afterwards whatever happens."""
    yield tmp_path
    stop_local_server(tmp_path)


def _record(data_dir: Path) -> dict:
    return json.loads((data_dir / "secantus" / "server.json").read_text())


# ---------------------------------------------------------------------------
# Sessions (mongomock)
# ---------------------------------------------------------------------------


def test_create_and_load_session(mock_store):
    assert mock_store.load_session("u", "s") is None
    created = mock_store.create_session("u", "s", {"persona": "pirate"})
    assert created["version"] == 0 and created["window"] == [] and created["summary"] == ""
    assert "_id" not in created
    loaded = mock_store.load_session("u", "s")
    assert loaded == created
    assert loaded["created_at"] == loaded["updated_at"]


def test_create_session_twice_returns_the_existing_one(mock_store):
    first = mock_store.create_session("u", "s", {"summary": "first"})
    second = mock_store.create_session("u", "s", {"summary": "second"})
    assert second == first and second["summary"] == "first"
    assert mock_store.sessions.count_documents({}) == 1


def test_save_session_bumps_version_and_guards_it(mock_store):
    mock_store.create_session("u", "s")
    saved = mock_store.save_session("u", "s", 0, {"summary": "v1", "window": [{"role": "user", "content": "hi"}]})
    assert saved["version"] == 1 and saved["summary"] == "v1" and "_id" not in saved
    assert saved["updated_at"] >= saved["created_at"]
    assert mock_store.save_session("u", "s", 0, {"summary": "stale writer"}) is None  # version conflict
    assert mock_store.load_session("u", "s")["summary"] == "v1"
    assert mock_store.save_session("u", "s", 1, {"summary": "v2"})["version"] == 2


def test_save_session_on_missing_session_is_none(mock_store):
    assert mock_store.save_session("u", "nope", 0, {"summary": "x"}) is None


@pytest.mark.parametrize(
    "fields", [{"version": 7}, {"user_id": "other"}, {"_id": 1}, {"$set": {"a": 1}}, {"a.b": 1}, {"created_at": 0}]
)
def test_session_fields_cannot_touch_managed_keys(mock_store, fields):
    mock_store.create_session("u", "s")
    with pytest.raises(ValueError):
        mock_store.save_session("u", "s", 0, fields)
    with pytest.raises(ValueError):
        mock_store.create_session("u", "s2", fields)


def test_expected_version_must_be_an_int(mock_store):
    mock_store.create_session("u", "s")
    for bad in ({"$gte": 0}, "0", None, True):
        with pytest.raises(ValueError):
            mock_store.save_session("u", "s", bad, {"summary": "x"})


def test_delete_session_keeps_logs(mock_store):
    mock_store.create_session("u", "s")
    mock_store.append_log("u", "s", "user", "hi")
    assert mock_store.delete_session("u", "s") is True
    assert mock_store.delete_session("u", "s") is False
    assert mock_store.load_session("u", "s") is None
    assert mock_store.count_logs("u", "s") == 1


# ---------------------------------------------------------------------------
# Logs (mongomock)
# ---------------------------------------------------------------------------


def test_append_log_numbers_each_session_from_one(mock_store):
    assert [mock_store.append_log("u", "s", "user", f"m{i}") for i in range(5)] == [1, 2, 3, 4, 5]
    assert mock_store.append_log("u", "other", "user", "x") == 1
    assert mock_store.append_log("u2", "s", "user", "x") == 1
    logs = mock_store.logs_for("u", "s")
    assert [d["seq"] for d in logs] == [1, 2, 3, 4, 5] and mock_store.count_logs("u", "s") == 5
    first = logs[0]
    assert {k: first[k] for k in ("role", "content", "tokens", "status", "reply_to", "error")} == {
        "role": "user",
        "content": "m0",
        "tokens": None,
        "status": "ok",
        "reply_to": None,
        "error": None,
    }
    assert "_id" not in first and first["created_at"] is not None


def test_append_log_fields_and_extra(mock_store):
    seq = mock_store.append_log(
        "u",
        "s",
        "assistant",
        [{"type": "text", "text": "hi"}],
        tokens=12,
        status="pending",
        reply_to=1,
        extra={"model": "offline"},
    )
    doc = mock_store.logs_for("u", "s")[0]
    assert (seq, doc["tokens"], doc["status"], doc["reply_to"], doc["model"]) == (1, 12, "pending", 1, "offline")
    assert doc["content"] == [{"type": "text", "text": "hi"}]
    for bad_extra in ({"seq": 9}, {"user_id": "x"}, {"$inc": 1}):
        with pytest.raises(ValueError):
            mock_store.append_log("u", "s", "user", "x", extra=bad_extra)
    with pytest.raises(ValueError):
        mock_store.append_log("u", "s", "user", "x", tokens="12")
    assert mock_store.count_logs("u", "s") == 1


def test_append_log_retries_when_another_writer_took_the_seq(mock_store, monkeypatch):
    mock_store.append_log("u", "s", "user", "a")
    real = Store._max_seq
    calls = []

    def stale_then_real(self, key, hint):
        calls.append(hint)
        return 0 if len(calls) == 1 else real(self, key, hint)  # first read is stale: seq 1 is taken

    monkeypatch.setattr(Store, "_max_seq", stale_then_real)
    assert mock_store.append_log("u", "s", "user", "b") == 2
    assert len(calls) == 2


def test_append_log_gives_up_after_bounded_collisions(mock_store, monkeypatch):
    mock_store.append_log("u", "s", "user", "a")
    monkeypatch.setattr(Store, "_max_seq", lambda self, key, hint: 0)
    with pytest.raises(StoreError, match="gave up"):
        mock_store.append_log("u", "s", "user", "b")
    assert mock_store.count_logs("u", "s") == 1


def test_two_stores_on_one_database_keep_seqs_contiguous(mock_store):
    other = Store(mock_store.client, mock_store.db, "mongomock")
    assert mock_store.append_log("u", "s", "user", "a") == 1
    assert [other.append_log("u", "s", "user", x) for x in "bc"] == [2, 3]
    assert mock_store.append_log("u", "s", "user", "d") == 4  # its cached hint (1) is stale but only a lower bound
    mock_store.logs.drop()  # hint now above the real max: falls back to a full read
    assert mock_store.append_log("u", "s", "user", "e") == 1


def test_set_log_status(mock_store):
    for i in range(3):
        mock_store.append_log("u", "s", "user", str(i), status="pending")
    mock_store.append_log("u", "other", "user", "x", status="pending")
    assert mock_store.set_log_status("u", "s", [1, 2], "failed", error="timeout", only_if_status="pending") == 2
    assert mock_store.set_log_status("u", "s", [1, 2, 3], "ok", only_if_status="pending") == 1
    assert mock_store.set_log_status("u", "s", [1], "ok") == 1  # retry succeeded: error cleared
    assert mock_store.set_log_status("u", "s", [], "ok") == 0
    by_seq = {d["seq"]: (d["status"], d["error"]) for d in mock_store.logs_for("u", "s")}
    assert by_seq == {1: ("ok", None), 2: ("failed", "timeout"), 3: ("ok", None)}
    assert mock_store.logs_for("u", "other")[0]["status"] == "pending"
    with pytest.raises(ValueError):
        mock_store.set_log_status("u", "s", [{"$gt": 0}], "ok")


# ---------------------------------------------------------------------------
# Isolation: ids are literal strings, anything else is refused
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("odd", ODD_IDS)
def test_odd_id_strings_are_literal(mock_store, odd):
    mock_store.create_session("alice", "s", {"summary": "alice's"})
    mock_store.append_log("alice", "s", "user", "alice's secret")
    assert mock_store.load_session(odd, "s") is None and mock_store.logs_for(odd, "s") == []
    assert mock_store.load_session("alice", odd) is None and mock_store.count_logs("alice", odd) == 0
    mock_store.create_session(odd, odd, {"summary": "odd"})
    assert mock_store.append_log(odd, odd, "user", "odd") == 1
    assert mock_store.load_session(odd, odd)["summary"] == "odd"
    assert mock_store.load_session(odd, odd)["user_id"] == odd
    assert mock_store.delete_session(odd, "s") is False
    assert mock_store.load_session("alice", "s")["summary"] == "alice's"


@pytest.mark.parametrize("bad", BAD_IDS, ids=repr)
def test_non_string_ids_never_reach_a_query(mock_store, bad):
    mock_store.create_session("alice", "s")
    mock_store.append_log("alice", "s", "user", "secret")
    calls = [
        lambda u, s: mock_store.load_session(u, s),
        lambda u, s: mock_store.create_session(u, s),
        lambda u, s: mock_store.save_session(u, s, 0, {"summary": "x"}),
        lambda u, s: mock_store.append_log(u, s, "user", "x"),
        lambda u, s: mock_store.set_log_status(u, s, [1], "hacked"),
        lambda u, s: mock_store.logs_for(u, s),
        lambda u, s: mock_store.count_logs(u, s),
        lambda u, s: mock_store.delete_session(u, s),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="must be"):
            call(bad, "s")
        with pytest.raises(ValueError, match="must be"):
            call("alice", bad)
    assert mock_store.load_session("alice", "s")["version"] == 0
    assert mock_store.logs_for("alice", "s")[0]["status"] == "ok"


def test_empty_id_is_refused(mock_store):
    with pytest.raises(ValueError, match="non-empty"):
        mock_store.load_session("", "s")


_ids = st.text(min_size=1, max_size=12)


@hsettings(max_examples=40, deadline=None)
@given(a=st.tuples(_ids, _ids), b=st.tuples(_ids, _ids))
def test_one_session_never_sees_another(a, b):
    store = mongomock_store()
    store.create_session(*a, {"summary": "a"})
    store.append_log(*a, "user", "from a")
    if a == b:
        assert store.logs_for(*b)[0]["content"] == "from a"
    else:
        assert store.load_session(*b) is None and store.logs_for(*b) == [] and store.count_logs(*b) == 0
        assert store.append_log(*b, "user", "from b") == 1
        assert [d["content"] for d in store.logs_for(*a)] == ["from a"]


# ---------------------------------------------------------------------------
# The Store object, indexes, connection resolution
# ---------------------------------------------------------------------------


def test_mongomock_store_describes_itself(mock_store):
    assert mock_store.kind == "mongomock" and mock_store.persistent is False
    assert "nothing persists" in mock_store.describe()
    assert "mongomock" in repr(mock_store)


def test_ensure_indexes_is_idempotent(mock_store):
    mock_store.ensure_indexes()
    mock_store.ensure_indexes()
    assert mock_store.sessions.index_information()["user_session"]["unique"]
    assert mock_store.logs.index_information()["user_session_seq"]["unique"]
    assert "user_created" in mock_store.memories.index_information()


def test_unreachable_mongodb_uri_names_the_setting():
    uri = "mongodb://alice:s3cret@127.0.0.1:1/?serverSelectionTimeoutMS=500"
    started = time.monotonic()
    with pytest.raises(StoreUnavailable) as info:
        open_store(load_settings().with_(mongodb_uri=uri))
    message = str(info.value)
    assert "MONGODB_URI" in message and "docker compose up -d" in message and "127.0.0.1:1" in message
    assert "s3cret" not in message and "alice" not in message
    assert "Topology Description" not in message
    assert time.monotonic() - started < 5


def test_malformed_mongodb_uri_names_the_setting():
    with pytest.raises(StoreUnavailable, match="MONGODB_URI"):
        open_store(load_settings().with_(mongodb_uri="mongodb://127.0.0.1:notaport/"))


def test_missing_binary_falls_back_to_mongomock_loudly(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(localserver, "_find_server_binary", lambda: None)
    cfg = load_settings().with_(mongodb_uri=None, data_dir=tmp_path)
    with pytest.warns(StoreWarning, match="nothing will persist"):
        fallback = open_store(cfg)
    assert fallback.kind == "mongomock" and not fallback.persistent
    assert "nothing will persist" in capsys.readouterr().err
    assert fallback.append_log("u", "s", "user", "x") == 1
    with pytest.raises(StoreUnavailable, match=r"python -m helpers\.db\.server start"):
        open_store(cfg, fallback=False)


def test_start_failure_reports_the_log(tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "secantusd-py"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'fake server: disk on fire' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(localserver, "_find_server_binary", lambda: fake)
    with pytest.raises(StoreUnavailable) as info:
        ensure_local_server(tmp_path / "data")
    message = str(info.value)
    assert "disk on fire" in message and "server.log" in message and "helpers.db.server start" in message
    assert not (tmp_path / "data" / "secantus" / "server.json").exists()


# ---------------------------------------------------------------------------
# Real local SecantusDB server (the one this test session started; see conftest.py)
# ---------------------------------------------------------------------------


def test_local_store_is_persistent_and_described(local_store):
    assert local_store.kind == "local" and local_store.persistent
    line = local_store.describe()
    assert line.startswith("store: local SecantusDB server at 127.0.0.1:") and "data in" in line


def test_live_server_is_reused(local_store, settings):
    first = ensure_local_server(settings.data_dir)
    record = _record(settings.data_dir)
    assert ensure_local_server(settings.data_dir) == first == local_store.uri
    assert _record(settings.data_dir) == record  # same pid, same started_at: no new process
    status = local_server_status(settings.data_dir)
    assert status["running"] and status["pid"] == record["pid"] and status["uri"] == first


def test_version_guard_on_the_real_server(local_store):
    assert local_store.create_session("u", "s")["version"] == 0
    assert local_store.create_session("u", "s")["version"] == 0  # duplicate key: returns the existing one
    assert local_store.save_session("u", "s", 0, {"summary": "one"})["version"] == 1
    assert local_store.save_session("u", "s", 0, {"summary": "stale"}) is None
    assert local_store.load_session("u", "s")["summary"] == "one"


def test_odd_ids_and_dict_ids_on_the_real_server(local_store):
    odd = '{"$ne": null}'
    local_store.create_session("alice", "s", {"summary": "alice's"})
    assert local_store.load_session(odd, "s") is None
    local_store.create_session(odd, "s", {"summary": "odd"})
    assert local_store.load_session(odd, "s")["summary"] == "odd"
    with pytest.raises(ValueError):
        local_store.load_session({"$ne": None}, "s")


_WORKER = textwrap.dedent("""
    import sys, time
    from helpers.config import load_settings
    from helpers.db.store import open_store
    uri, db_name, start_at = sys.argv[1], sys.argv[2], float(sys.argv[3])
    store = open_store(load_settings().with_(db_name=db_name))  # the local server, logged in as its user
    while time.time() < start_at:
        time.sleep(0.001)
    print(" ".join(str(store.append_log("u", "s", "user", f"msg {i}")) for i in range(100)))
""")


@pytest.mark.slow  # two writer processes on the local server (seconds): the full set runs it
def test_concurrent_appends_get_unique_contiguous_seqs(local_store):
    start_at = str(time.time() + 2.0)  # both workers begin together, after their imports
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, local_store.uri, local_store.db.name, start_at],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [w.communicate(timeout=60) for w in workers]
    assert [w.returncode for w in workers] == [0, 0], [err[-2000:] for _, err in outputs]
    seqs = [int(s) for out, _ in outputs for s in out.split()]
    assert sorted(seqs) == list(range(1, 201))
    assert [d["seq"] for d in local_store.logs_for("u", "s")] == list(range(1, 201))


# ---------------------------------------------------------------------------
# Servers of their own (private data dirs): stale records, CLI, restart
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_stale_record_is_replaced(scratch_dir):
    paths_root = scratch_dir / "secantus"
    paths_root.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = {"pid": dead.pid, "host": "127.0.0.1", "port": 1, "started_at": "2000-01-01T00:00:00+00:00"}
    (paths_root / "server.json").write_text(json.dumps(stale))
    assert local_server_status(scratch_dir)["stale_record"]
    uri = ensure_local_server(scratch_dir)
    record = _record(scratch_dir)
    assert record["pid"] != dead.pid and record["port"] != 1
    assert uri == f"mongodb://127.0.0.1:{record['port']}/?directConnection=true"

    # A record naming a live process that is NOT our server (pid reuse) must not get that process killed.
    stop_local_server(scratch_dir)
    (paths_root / "server.json").write_text(json.dumps({**stale, "pid": os.getpid()}))
    ensure_local_server(scratch_dir)  # we are still alive to assert:
    assert _record(scratch_dir)["pid"] != os.getpid()


@pytest.mark.slow
def test_racing_starts_share_one_server(scratch_dir):
    code = "import sys; from helpers.db.server import ensure_local_server; print(ensure_local_server(sys.argv[1]))"
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(scratch_dir)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    results = [r.communicate(timeout=60) for r in racers]
    assert [r.returncode for r in racers] == [0, 0, 0], [err[-2000:] for _, err in results]
    assert len({out.strip() for out, _ in results}) == 1  # the flock let exactly one of them start a server
    assert server_pids((scratch_dir / "secantus" / "db").resolve()) == [_record(scratch_dir)["pid"]]


@pytest.mark.slow
def test_cli_status_start_stop(scratch_dir):
    env = {**os.environ, "GTE_DATA_DIR": str(scratch_dir), "MONGODB_URI": ""}

    def cli(*args: str) -> subprocess.CompletedProcess:
        # capture_output + timeout: a server that inherited our pipes would hang this call
        return subprocess.run(
            [sys.executable, "-m", "helpers.db.server", *args],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )

    status = cli("status")
    assert status.returncode == 1 and "not running" in status.stdout
    started = cli("start")
    assert started.returncode == 0 and "started" in started.stdout and "127.0.0.1:" in started.stdout
    pid = _record(scratch_dir)["pid"]
    again = cli("start")
    assert again.returncode == 0 and "already running" in again.stdout and _record(scratch_dir)["pid"] == pid
    status = cli("status")
    assert status.returncode == 0 and f"running (pid {pid})" in status.stdout and str(scratch_dir) in status.stdout
    old_name = subprocess.run(
        [sys.executable, "-m", "helpers.db.store", "status"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert old_name.returncode == 0 and old_name.stdout == status.stdout  # `python -m helpers.db.store` still works
    stopped = cli("stop")
    assert stopped.returncode == 0 and f"stopped the local SecantusDB server (pid {pid})" in stopped.stdout
    assert not pid_running(pid)
    assert not (scratch_dir / "secantus" / "server.json").exists()
    assert "nothing to stop" in cli("stop").stdout


@pytest.mark.slow
def test_data_survives_a_server_restart(scratch_dir):
    cfg = load_settings().with_(mongodb_uri=None, data_dir=scratch_dir, db_name="restart")
    with open_store(cfg, fallback=False) as first:
        first.create_session("u", "s", {"summary": "remember me"})
        first.append_log("u", "s", "user", "hello")
        old_pid = _record(scratch_dir)["pid"]
    assert stop_local_server(scratch_dir) is True
    assert not pid_running(old_pid) and not local_server_status(scratch_dir)["running"]
    with open_store(cfg, fallback=False) as second:
        assert _record(scratch_dir)["pid"] != old_pid
        assert second.load_session("u", "s")["summary"] == "remember me"
        assert second.append_log("u", "s", "assistant", "hi again") == 2


# ---------------------------------------------------------------------------
# A real MongoDB (only when MONGODB_URI is set, e.g. `docker compose up -d`)
# ---------------------------------------------------------------------------


@pytest.mark.mongodb
@pytest.mark.skipif(not os.environ.get("MONGODB_URI"), reason="MONGODB_URI is not set")
def test_real_mongodb_round_trip():
    cfg = load_settings().with_(mongodb_uri=os.environ["MONGODB_URI"], db_name=f"gte_test_{uuid.uuid4().hex[:8]}")
    with open_store(cfg, fallback=False) as real:
        try:
            assert real.kind == "uri" and real.describe().startswith("store: MongoDB at ")
            real.create_session("u", "s")
            assert real.save_session("u", "s", 0, {"summary": "x"})["version"] == 1
            assert real.save_session("u", "s", 0, {"summary": "y"}) is None
            assert [real.append_log("u", "s", "user", str(i)) for i in range(3)] == [1, 2, 3]
            assert real.load_session('{"$ne": null}', "s") is None
        finally:
            real.client.drop_database(real.db.name)


def _nested(levels: int) -> dict:
    value: object = 1
    for _ in range(levels):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    "content,message",
    [
        ([{"type": "tool_use", "id": "t", "name": "x", "input": _nested(900)}], "nested more than 99 levels"),
        (_nested(200_000), "nested more than 99 levels"),  # checked without recursion: no RecursionError
        ([{"type": "tool_use", "id": "t", "name": "x", "input": {"n": 2**63}}], "content[0].input.n: the integer"),
        ({1: "x"}, "is not a string"),
    ],
)
def test_what_bson_cannot_store_is_a_clear_error_before_any_write(mock_store, content, message):
    """Issue 31: every write path (a typed turn's log, an import's batch, a session save) refuses a value MongoDB
    cannot store (more than 100 levels, an int over 64 bits) with the place named, before anything is written; the
    local server would store a 900-deep document and then fail every later command on it."""
    with pytest.raises(ValueError, match=re.escape(message)):
        mock_store.append_log("u", "s", "assistant", content)
    with pytest.raises(ValueError, match=re.escape(message)):
        mock_store.append_logs("u", "s", [{"role": "user", "content": "ok"}, {"role": "assistant", "content": content}])
    assert mock_store.count_logs("u", "s") == 0
    mock_store.create_session("u", "s")
    with pytest.raises(ValueError, match="fields"):
        mock_store.save_session("u", "s", 0, {"window": [{"role": "assistant", "content": content}]})
    assert mock_store.load_session("u", "s")["version"] == 0


def test_the_depth_limit_is_mongodbs_100_levels_counted_from_the_document(mock_store):
    """A log document whose content nests 99 levels is 100 levels deep: stored; one more is refused."""
    mock_store.append_log("u", "s", "user", [_nested(98)])
    with pytest.raises(ValueError, match="MongoDB stores at most 100 levels"):
        mock_store.append_log("u", "s", "user", [_nested(99)])
    assert mock_store.count_logs("u", "s") == 1
