"""Reliability (issue 6), database side: an unreachable server at start, the local server killed mid-conversation,
processes SIGKILLed mid-turn, several processes on one session, two kernels at once, and the load benchmark.
Every test ends with helpers.tools.consistency.check_consistency."""

from __future__ import annotations

import io
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from _reliability import CHAT, FILLER, ROOT, LiveChat, cli_env, run_chat

from helpers.config import load_settings
from helpers.db import store as store_mod
from helpers.db.processes import pid_running
from helpers.db.server import ensure_local_server, local_server_status, stop_local_server
from helpers.db.store import Store, open_store
from helpers.llm import get_client, offline_transport
from helpers.memory import BoundedMemory, TurnError
from helpers.tools.consistency import check_consistency


def _db(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def _kill_local_server(data_dir) -> int:
    """SIGKILL the local server of `data_dir` (no clean shutdown) and wait until it is gone."""
    pid = local_server_status(data_dir)["pid"]
    assert pid, "the local server is not running"
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while pid_running(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not pid_running(pid)
    return pid


def _normal(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def scratch_server(tmp_path_factory):
    """A private data dir whose local server these tests may kill; stopped at the end whatever happens."""
    data = tmp_path_factory.mktemp("killable")
    yield data
    stop_local_server(data)


# ---------------------------------------------------------------------------- unreachable at start


@pytest.mark.slow  # a CLI process waiting out a server-selection timeout (seconds): the full set runs it
def test_unreachable_mongodb_uri_at_start_is_a_clear_error_exit_2(tmp_path):
    env = cli_env(MONGODB_URI="mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=300")
    out = run_chat(["hello"], "--session-file", str(tmp_path / "sid"), env=env, timeout=60)
    err = out.stderr.decode()
    assert out.returncode == 2, err
    assert "Traceback" not in err and out.stdout == b""
    assert "MONGODB_URI" in err and "127.0.0.1:1" in err
    assert "local SecantusDB server" in err and "docker compose up -d" in err  # how to start one or the other


# ---------------------------------------------------------------------------- the local server dies


@pytest.mark.slow
def test_local_server_dies_mid_turn_then_next_turn_restarts_it(scratch_server, monkeypatch):
    monkeypatch.setattr(store_mod, "URI_TIMEOUT_MS", 800)  # fail fast once the server is gone (default 5 s)
    settings = load_settings().with_(mongodb_uri=None, data_dir=Path(scratch_server), db_name="inproc")
    store = open_store(settings, fallback=False)
    uri = store.uri
    llm = get_client(settings, max_retries=0)
    memory = BoundedMemory(llm, settings, store=store, user_id="u", session_id="s", budget=2000)
    acknowledged = [memory.turn("My favorite color is teal.").reply, memory.turn(FILLER.format(i=1)).reply]
    before = store.load_session("u", "s")

    transport = offline_transport(llm)
    serve = transport.handle_request

    def server_dies_while_the_model_answers(request):
        if request.url.path.endswith("/v1/messages"):
            _kill_local_server(scratch_server)
        return serve(request)

    transport.handle_request = server_dies_while_the_model_answers
    with pytest.raises(TurnError, match="the database failed during this turn") as err:
        memory.turn("Where should we eat tonight?")
    assert "Traceback" not in str(err.value)
    transport.handle_request = serve
    assert not local_server_status(scratch_server)["running"]

    assert "teal" in memory.turn("What is my favorite color?").reply  # restarted the server, reconnected
    assert local_server_status(scratch_server)["running"] and store.uri != uri
    session = store.load_session("u", "s")
    assert session["version"] == before["version"] + 1
    window_replies = [m["content"] for m in session["window"] if m["role"] == "assistant"]
    assert window_replies[:2] == acknowledged
    logs = store.logs_for("u", "s")
    assert [e["status"] for e in logs] == ["ok"] * 4 + ["pending"] + ["ok"] * 2  # in flight when it died
    assert check_consistency(store, "u", "s", budget=2000) == []
    store.close()


@pytest.mark.slow
def test_local_server_killed_between_turns_cli_carries_on(scratch_server, tmp_path):
    env = cli_env(GTE_DATA_DIR=str(scratch_server), GTE_DB_NAME="clikill")
    ensure_local_server(scratch_server)
    chat = LiveChat("--session-file", str(tmp_path / "sid"), "--user", "u", "--budget", "2000", env=env)
    try:
        printed = [chat.ask(text) for text in ("My favorite color is teal.", FILLER.format(i=1), FILLER.format(i=2))]
        assert all(printed), chat.proc.stderr.read() if chat.proc.poll() is not None else printed
        _kill_local_server(scratch_server)
        after = chat.ask("What is my favorite color?", timeout=90)
        code = chat.close()
    finally:
        if chat.proc.poll() is None:
            chat.kill()
    assert after is not None and "teal" in after, chat.stderr[-3000:]
    assert code == 0 and "Traceback" not in chat.stderr and "! " not in chat.stderr
    settings = load_settings().with_(mongodb_uri=None, data_dir=Path(scratch_server), db_name="clikill")
    with open_store(settings, fallback=False) as store:
        sid = (tmp_path / "sid").read_text().strip()
        logs = store.logs_for("u", sid)
        ok_replies = [_normal(e["content"]) for e in logs if e["role"] == "assistant" and e["status"] == "ok"]
        window = [_normal(m["content"]) for m in store.load_session("u", sid)["window"] if m["role"] == "assistant"]
        assert ok_replies == window == [*printed, after]  # every reply printed before the kill survived it
        assert check_consistency(store, "u", sid, budget=2000) == []


# ---------------------------------------------------------------------------- SIGKILL mid-turn


@pytest.mark.slow
def test_processes_killed_mid_turn_leave_logs_and_session_consistent(local_store_session, tmp_path):
    db = _db("rel_kill")
    env = cli_env(GTE_DB_NAME=db)
    args = ("--session-file", str(tmp_path / "sid"), "--user", "u", "--budget", "150")
    store = local_store_session.with_db(db)
    rng = random.Random(20261129)
    printed: list[str] = []
    try:
        for round_ in range(3):
            chat = LiveChat(*args, env=env)
            if round_ == 0:
                chat.send("My favorite color is teal.")
            for i in range(80):
                chat.send(f"Round {round_}, question {i}: " + FILLER.format(i=i))
            assert chat.reply(timeout=60) is not None
            time.sleep(rng.uniform(0.05, 0.7))
            chat.kill()  # SIGKILL: wherever it is in a turn
            printed += chat.replies
            sid = (tmp_path / "sid").read_text().strip()
            assert check_consistency(store, "u", sid, budget=150) == [], f"after kill {round_ + 1}"
        final = run_chat(["What is my favorite color?", "Thanks, and one more about tacos?"], *args, env=env)
        assert final.returncode == 0 and b"Traceback" not in final.stderr, final.stderr.decode()[-2000:]
        answers = final.stdout.decode().strip().splitlines()
        assert len(answers) == 2 and "teal" in answers[0]
        printed += answers
        logs = store.logs_for("u", sid)
        acknowledged = Counter(_normal(e["content"]) for e in logs if e["role"] == "assistant" and e["status"] == "ok")
        assert not Counter(printed) - acknowledged  # every reply a user saw is acknowledged in the logs
        assert sum(e["status"] == "pending" for e in logs) <= 2 * 3  # at most one turn in flight per kill
        assert check_consistency(store, "u", sid, budget=150) == []
    finally:
        store.client.drop_database(db)


# ---------------------------------------------------------------------------- concurrency


@pytest.mark.slow
@pytest.mark.parametrize("n_procs, n_turns", [(3, 30), (2, 50)])  # (2, 50): issue 4's acceptance
def test_concurrent_cli_processes_on_one_session(local_store_session, tmp_path, n_procs, n_turns):
    db = _db(f"rel_conc_{n_procs}x{n_turns}")
    sid_file = tmp_path / "sid"
    sid_file.write_text("shared-session\n")
    env = cli_env(GTE_DB_NAME=db)
    procs, texts = [], []
    for p in range(n_procs):
        lines = [f"Process {p} turn {i}: " + FILLER.format(i=i) for i in range(n_turns)]
        texts += lines
        proc = subprocess.Popen(
            [*CHAT, "--session-file", str(sid_file), "--user", "u", "--budget", "200", "--stats"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=env,
        )
        proc.stdin.write(("\n".join(lines) + "\n").encode())  # fits the pipe buffer: all start at once
        proc.stdin.close()
        procs.append(proc)
    outputs = [(proc.stdout.read(), proc.stderr.read(), proc.wait(timeout=180)) for proc in procs]
    store = local_store_session.with_db(db)
    try:
        stats = []
        for out, err, code in outputs:
            err_text = err.decode()
            assert code == 0 and "Traceback" not in err_text and "! " not in err_text, err_text[-3000:]
            assert len(out.decode().strip().splitlines()) == n_turns
            stats.append(json.loads(err_text.split("# stats ", 1)[1].splitlines()[0]))
        assert [s["turns"] for s in stats] == [n_turns] * n_procs
        conflicts = sum(s["conflicts"] for s in stats)
        assert conflicts <= n_procs * n_turns * (BoundedMemory.MAX_SAVE_ATTEMPTS - 1)
        logs = store.logs_for("u", "shared-session")
        assert [e["seq"] for e in logs] == list(range(1, 2 * n_procs * n_turns + 1))  # contiguous, no duplicates
        assert all(e["status"] == "ok" for e in logs)
        users = Counter(e["content"] for e in logs if e["role"] == "user")
        assert users == Counter(texts)  # none lost, none twice
        replies_to = Counter(e["reply_to"] for e in logs if e["role"] == "assistant")
        assert set(replies_to.values()) == {1} and len(replies_to) == n_procs * n_turns
        session = store.load_session("u", "shared-session")
        assert session["version"] == n_procs * n_turns
        covered = (session.get("summary_covers") or {}).get("count", 0)
        assert covered + len(session["window"]) + len(session.get("pending", [])) == len(logs)
        assert check_consistency(store, "u", "shared-session", budget=200) == []
        print(
            f"\n{n_procs} processes x {n_turns} turns: {len(logs)} log entries, lost 0, duplicates 0, "
            f"version-guard conflicts {conflicts} (retried), per process {[s['conflicts'] for s in stats]}"
        )
    finally:
        store.client.drop_database(db)


def test_version_guard_retries_are_bounded_counted_and_reported(local_store_session, tmp_path, monkeypatch, capsys):
    """A session that changes on every save: the turn gives up after MAX_SAVE_ATTEMPTS, the CLI says so and goes on."""
    from helpers.tools import chat

    db = _db("rel_guard")
    monkeypatch.setenv("GTE_DB_NAME", db)
    monkeypatch.setattr(Store, "save_session", lambda self, *args, **kw: None)  # someone else always won
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"hello\nhello again\n"), encoding="utf-8"))
    store = local_store_session.with_db(db)
    try:
        code = chat.main(["--stage", "bounded", "--session-file", str(tmp_path / "sid"), "--user", "u", "--stats"])
        sid = (tmp_path / "sid").read_text().strip()
        logs = store.logs_for("u", sid)
        # kept, never acknowledged, and not left "pending" forever: the CLI settles them as "unanswered"
        assert [e["status"] for e in logs] == ["unanswered"] * 4
        assert [e["content"] for e in logs if e["role"] == "user"] == ["hello", "hello again"]
        assert all(f"changed {BoundedMemory.MAX_SAVE_ATTEMPTS} times" in e["error"] for e in logs)
        assert store.load_session("u", sid)["version"] == 0
        assert check_consistency(store, "u", sid) == []
    finally:
        store.client.drop_database(db)
    err = capsys.readouterr().err
    attempts = BoundedMemory.MAX_SAVE_ATTEMPTS
    assert code == 1 and "Traceback" not in err
    assert err.count(f"changed {attempts} times while saving") == 2 and "--rebuild" in err
    stats = json.loads(err.split("# stats ", 1)[1].splitlines()[0])
    assert stats["conflicts"] == 2 * attempts and stats["turns"] == 0


KERNEL = textwrap.dedent("""
    import json, sys
    from helpers.config import load_settings
    from helpers.llm import get_client
    from helpers.memory import BoundedMemory
    from helpers.db.store import open_store

    settings = load_settings()
    store = open_store(settings, fallback=False)
    print("ready", store.kind, flush=True)
    sys.stdin.readline()
    shared = BoundedMemory(get_client(settings), settings, store=store, user_id="k", session_id="shared", budget=300)
    for i in range(8):
        shared.turn(f"kernel {sys.argv[1]} says hello, number {i}")
    own = BoundedMemory(get_client(settings), settings, store=store, user_id="k", session_id="own-" + sys.argv[1])
    own.turn("My favorite color is teal.")
    print(json.dumps({"conflicts": shared.stats["conflicts"], "own_logs": own.state()["log_count"]}), flush=True)
""")


@pytest.mark.slow
def test_two_kernels_hold_the_embedded_store_at_once(local_store_session):
    db = _db("rel_kernels")
    env = cli_env(GTE_DB_NAME=db)
    kernels = [
        subprocess.Popen(
            [sys.executable, "-c", KERNEL, name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=env,
            text=True,
        )
        for name in ("a", "b")
    ]
    store = local_store_session.with_db(db)
    try:
        assert [k.stdout.readline().strip() for k in kernels] == ["ready local", "ready local"]  # both hold it open
        for k in kernels:
            k.stdin.write("go\n")
            k.stdin.flush()
        results = [k.communicate(timeout=120) for k in kernels]
        assert [k.returncode for k in kernels] == [0, 0], [err[-2000:] for _, err in results]
        assert [json.loads(out)["own_logs"] for out, _ in results] == [2, 2]
        logs = store.logs_for("k", "shared")
        assert len(logs) == 32 and all(e["status"] == "ok" for e in logs)
        assert check_consistency(store, "k", "shared", budget=300) == []
    finally:
        for k in kernels:
            if k.poll() is None:
                k.kill()
        store.client.drop_database(db)


# ---------------------------------------------------------------------------- load


def test_load_benchmark_runs_concurrent_sessions_without_errors(capsys):
    from helpers import bench

    assert bench.main(["load", "--sessions", "6", "--turns", "4", "--workers", "3", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["turns"] == 24 and figures["errors"] == 0 and figures["inconsistent_sessions"] == 0
    assert figures["turns_per_s"] > 0 and 0 < figures["memory_ms_p50"] <= figures["memory_ms_p95"]
    assert figures["memory_ms_p95"] <= figures["turn_ms_p95"]  # model time is excluded
