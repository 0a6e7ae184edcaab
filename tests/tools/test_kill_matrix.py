"""Crash-safe long-term memory and an import you can re-run (issue 31): a vector turn or a vector import ended at
every one of its crash points (helpers.db.crash), then started again, leaves 0 committed turns without their
memories and nothing twice; the memories equal those of the same run never killed.

The fast part ends the run in process (a BaseException at the point, 1 seed each); the slow part ends real
processes there (os._exit in a forked process, on the local server) and SIGKILLs real CLI imports at random moments.
The slow part runs KILL_SEEDS seeds a point: 2 in the test suite (CI's budget), 20
for the record (`KILL_SEEDS=20 python -m pytest -m slow tests/tools/test_kill_matrix.py -k real_processes`: at
e6d7ba4 all 13 points passed, 260 kills, in 19 minutes beside other work on 2 CPUs)."""

from __future__ import annotations

import gc
import json
import multiprocessing
import os
import random
import signal
import socket
import subprocess
import sys
import time
import uuid

import pytest
from _kill_scenarios import (
    COMMITTED,
    IMPORT_POINTS,
    TURN_POINTS,
    Killed,
    active_facts,
    arm,
    chat_script,
    chat_until_killed,
    import_until_killed,
    problems,
    reference_chat,
    reference_import,
    resume_chat,
    resume_import,
    transcript,
    vector,
)
from _reliability import ROOT, cli_env

from helpers.config import load_settings
from helpers.db import crash
from helpers.db.store import mongomock_store, open_store
from helpers.llm import get_client
from helpers.memory import BoundedMemory
from helpers.memory.importer import import_turns
from helpers.tools.consistency import check_consistency

FAST_SEEDS = range(1)
SLOW_SEEDS = range(int(os.environ.get("KILL_SEEDS", "2")))


def test_the_matrix_covers_every_crash_point():
    """The matrix covers every point the code has (a point added later must join a list below)."""
    # import:batch: the bounded import's (test_a_bounded_import_...); facts:added: a supersede's, reached only when
    # a fact replaces another (tests/memory/test_facts.py kills there)
    assert set(crash.POINTS) == {*TURN_POINTS, *(p.split("@")[0] for p in IMPORT_POINTS), "import:batch", "facts:added"}


def check_chat(store, seed: int, point: str, reached: bool) -> None:
    assert reached, f"seed {seed}: the turn never reached {point}"
    resume_chat(store, seed)
    assert problems(store) == [], (seed, point)
    assert active_facts(store) == reference_chat(seed, point in COMMITTED), (seed, point)
    killed = [e["status"] for e in store.logs_for("u", "s") if e["content"] == chat_script(seed)[1]]
    assert killed == (["ok"] if point in COMMITTED else ["unanswered"]), (seed, point, killed)


@pytest.mark.parametrize("point", TURN_POINTS)
def test_a_vector_turn_killed_at_any_point_leaves_no_committed_turn_without_its_memories(point):
    for seed in FAST_SEEDS:
        store = mongomock_store()
        check_chat(store, seed, point, chat_until_killed(store, seed, point))


def check_import(store, seed: int, point: str, reached: bool) -> None:
    assert reached, f"seed {seed}: the import never reached {point}"
    start, result = resume_import(store, seed)
    assert start["problems_after_start"] == [], (seed, point, start)  # the next start alone completes the committed
    turns = len(transcript(seed))
    assert problems(store, imported=turns) == [], (seed, point)
    assert result["imported"] + result["skipped"] == turns and store.logs.count_documents({}) == turns
    assert active_facts(store) == reference_import(seed), (seed, point)
    again = import_turns(vector(store), transcript(seed))  # a finished import, run again, writes nothing
    assert (again["imported"], again["skipped"], store.logs.count_documents({})) == (0, turns, turns)
    assert problems(store, imported=turns) == [] and active_facts(store) == reference_import(seed)


@pytest.mark.parametrize("point", IMPORT_POINTS)
def test_a_vector_import_killed_at_any_point_completes_once_when_run_again(point):
    for seed in FAST_SEEDS:
        store = mongomock_store()
        check_import(store, seed, point, import_until_killed(store, seed, point))


def test_a_memory_interrupted_mid_write_finishes_it_at_its_own_next_turn():
    """A KeyboardInterrupt in a notebook cell after the commit (the same object chats on): its next turn stores
    what the interrupted write owed, once."""
    store = mongomock_store()
    memory = vector(store)
    memory.turn("My name is Maya and I live in Portland.")
    arm("memory:turns", in_process=True)
    try:
        with pytest.raises(Killed):
            memory.turn("My flight number is UA1432.")
    finally:
        arm(None, in_process=True)
    owed = store.logs.count_documents({"memory": "todo"})
    assert owed == 2 and memory.long_term.interrupted
    memory.turn("My dog is called Miso.")
    assert problems(store) == [] and any("UA1432" in f for f in active_facts(store))


def test_a_live_writers_unfinished_entries_are_left_to_it(monkeypatch):
    """Recovery never races a writer that still runs: entries owed by a memory alive in this process (or a process
    alive on this host) are left alone until RECOVER_AFTER_S has passed."""
    from helpers.memory import remember

    store = mongomock_store()
    first = vector(store)
    first.turn("My name is Maya and I live in Portland.")
    store.logs.update_many({}, {"$set": {"memory": "todo"}})  # as if its write were still under way
    second = vector(store)
    assert second.long_term.recover() == {"exchanges": 0, "imported": 0}
    parent = os.getppid()  # a process alive on this host: its entries are left to it as well
    started = open(f"/proc/{parent}/stat").read().rsplit(")", 1)[-1].split()[19]
    alive = f"{socket.gethostname()}:{parent}:{started}:1"
    store.logs.update_many({}, {"$set": {"writer": alive}})
    assert second.long_term.recover() == {"exchanges": 0, "imported": 0}
    monkeypatch.setattr(remember, "RECOVER_AFTER_S", -1)  # the lease has run out: anyone finishes it
    assert second.long_term.recover() == {"exchanges": 1, "imported": 0}
    assert problems(store) == []
    monkeypatch.undo()
    store.logs.update_many({}, {"$set": {"memory": "todo", "writer": f"{socket.gethostname()}:{parent}:1:1"}})
    assert second.long_term.recover() == {"exchanges": 1, "imported": 0}  # that pid now names another process
    assert problems(store) == []
    del first
    gc.collect()


def test_rebuild_alone_completes_what_a_killed_turn_owed():
    """--rebuild finishes long-term memory too (it used to redo only window and summary)."""
    store = mongomock_store()
    assert chat_until_killed(store, 3, "commit:saved")
    assert store.logs.count_documents({"status": "pending", "memory": "todo"}) == 2
    vector(store).rebuild()
    assert problems(store) == [] and active_facts(store) == reference_chat_prefix(3)


def reference_chat_prefix(seed: int) -> tuple[str, ...]:
    """The active facts after the turns before the killed one and the killed one (no kill)."""
    before, killed, _ = chat_script(seed)
    store = mongomock_store()
    memory = vector(store)
    for text in [*before, killed]:
        memory.turn(text)
    return active_facts(store)


def test_a_background_writer_that_died_with_work_queued_is_finished_at_the_next_start(monkeypatch):
    """Background mode: the worker's queue dies with the process; the entries stay owed and the next start stores
    them (the worker marks them done only once it has stored them)."""
    store = mongomock_store()
    memory = vector(store, background=True)
    monkeypatch.setattr(memory.long_term.worker, "submit", lambda *a, **k: None)  # queued, never run: then killed
    memory.turn("My flight number is UA1432.")
    assert store.logs.count_documents({"memory": "todo"}) == 2
    memory.long_term.worker.close()  # nothing queued ran; the process ends (its worker and memory with it)
    monkeypatch.undo()
    del memory
    gc.collect()
    again = vector(store, background=True)
    assert again.recover()["remembered"] == {"exchanges": 1, "imported": 0}
    again.close()
    assert problems(store) == [] and any("UA1432" in fact for fact in active_facts(store))


@pytest.mark.parametrize("point", ["import:logged", "import:batch@1", "import:batch@2"])
def test_a_bounded_import_killed_mid_way_completes_once_when_run_again(point):
    """The bounded stage imports in batches of exchanges, each its own commit: killed between two, run again, every
    turn is logged once and the session accounts for each exactly once."""
    store = mongomock_store()
    settings = load_settings({})
    turns = [
        {"role": r, "content": f"Day {i}: code {4400 + i}." if r == "user" else "Noted."}
        for i in range(40)
        for r in ("user", "assistant")
    ]

    def bounded():
        return BoundedMemory(
            get_client(settings, max_retries=0),
            settings,
            store=store,
            user_id="u",
            session_id="s",
            budget=120,
            check_retention=False,
        )

    arm(point, in_process=True)
    try:
        with pytest.raises(Killed):
            import_turns(bounded(), turns)
    finally:
        arm(None, in_process=True)
    memory = bounded()
    memory.recover()
    result = import_turns(memory, turns)
    assert result["imported"] + result["skipped"] == 80 and store.logs.count_documents({}) == 80
    assert check_consistency(store, "u", "s") == [] and {e["status"] for e in store.logs.find()} <= {
        "ok",
        "unsummarised",
    }
    assert import_turns(bounded(), turns)["imported"] == 0 and store.logs.count_documents({}) == 80


# ---- real processes ----------------------------------------------------------------------------------------------


def _in_child(kind: str, db: str, seed: int, point: str, out) -> None:
    """A forked process: run until the crash point ends it through os._exit (exit code CRASH_EXIT_CODE)."""
    store = open_store(load_settings().with_(mongodb_uri=None, db_name=db), fallback=False)
    run = chat_until_killed if kind == "chat" else import_until_killed
    run(store, seed, point, in_process=False)
    out.send("the crash point was never reached")


@pytest.fixture(scope="module")
def forkserver():
    """Processes forked from a clean server process that has already imported the memory layer (fast, fork-safe)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["_kill_warm"])
    return context


def _kill_in_child(context, kind: str, seed: int, point: str):
    db = f"kill_{kind}_{seed}_{uuid.uuid4().hex[:8]}"
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_in_child, args=(kind, db, seed, point, send))
    child.start()
    child.join(120)
    assert child.exitcode == crash.CRASH_EXIT_CODE, (
        kind,
        seed,
        point,
        child.exitcode,
        receive.poll() and receive.recv(),
    )
    return open_store(load_settings().with_(mongodb_uri=None, db_name=db), fallback=False), db


@pytest.mark.slow
@pytest.mark.timeout(3600)  # KILL_SEEDS=20: 1.5 min a point on an idle machine, several under load
@pytest.mark.parametrize("point", TURN_POINTS)
def test_real_processes_killed_at_every_point_of_a_vector_turn(forkserver, point):
    for seed in SLOW_SEEDS:
        store, db = _kill_in_child(forkserver, "chat", seed, point)
        try:
            check_chat(store, seed, point, reached=True)
        finally:
            store.client.drop_database(db)
            store.close()


@pytest.mark.slow
@pytest.mark.timeout(3600)  # KILL_SEEDS=20: 1.5 min a point on an idle machine, several under load
@pytest.mark.parametrize("point", IMPORT_POINTS)
def test_real_processes_killed_at_every_point_of_a_vector_import(forkserver, point):
    for seed in SLOW_SEEDS:
        store, db = _kill_in_child(forkserver, "import", seed, point)
        try:
            check_import(store, seed, point, reached=True)
        finally:
            store.client.drop_database(db)
            store.close()


# ---- the CLI: a vector import killed mid-way, run again, recalls every turn once -----------------------------------


def _chat(*args: str, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "helpers.chat", "--stage", "vector", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=timeout)


def _long_transcript(path, turns: int) -> list[str]:
    """A dated transcript whose user turns each state one code only they hold."""
    codes, lines = [], ["(conversation on 8 May, 2023)"]
    for i in range(turns // 2):
        codes.append(f"K{7000 + i}Q")
        lines.append(json.dumps({"role": "user", "content": f"Locker {i} at the gym opens with code {codes[-1]}."}))
        lines.append(json.dumps({"role": "assistant", "content": f"Noted for locker {i}."}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return codes


def _shower(sid, env):
    """--show-request in a real process: (exit code, stdout)."""

    def show(question: str) -> tuple[int, str]:
        shown = _chat("--session-file", str(sid), "--show-request", question, env=env)
        return shown.returncode, shown.stdout

    return show


def _check_recall(store, codes: list[str], sid_file, show) -> None:
    """Every turn logged once, committed and remembered; each turn's memory stored once; 3 sampled codes recalled by
    --show-request (`show(question)` -> (exit code, stdout))."""
    session = open(sid_file).read().strip()
    logs = store.logs_for("default", session)
    assert (
        len(logs) == 2 * len(codes)
        and {e["status"] for e in logs} == {"ok"}
        and {e["memory"] for e in logs} == {"done"}
    )
    turns = [d["text"] for d in store.memories.find({"kind": "episode"})]
    for code in codes:
        assert sum(code in t for t in turns) == 1, code  # every turn remembered, once
    for i in random.Random(len(codes)).sample(range(len(codes)), 3):
        code, out = show(f"Which code opens locker {i} at the gym?")
        assert code == 0 and codes[i] in out, (i, out[-500:])


def test_a_cli_import_ended_mid_way_and_run_again_recalls_every_turn_once(tmp_path):
    """Through the CLI's main (in this process, so fast): --import ended at its second fact chunk, then run again;
    --show-request finds each sampled turn's code, and every turn is logged and remembered exactly once."""
    from test_chat_cli_errors import run_main

    db = f"cli_kill_{uuid.uuid4().hex[:8]}"
    env, sid = {"GTE_DB_NAME": db, "GTE_DATA_DIR": os.environ["GTE_DATA_DIR"]}, tmp_path / ".sid"
    codes = _long_transcript(tmp_path / "chat.jsonl", 24)
    argv = ["--stage", "vector", "--session-file", str(sid)]
    arm("import:chunk@2", in_process=True)
    try:
        code, _, err = run_main([*argv, "--import", str(tmp_path / "chat.jsonl")], env)
    finally:
        arm(None, in_process=True)
    assert code == -1 and "Killed" in err, err[-2000:]
    gc.collect()  # the killed run's memory is gone, as its process would be
    code, out, err = run_main([*argv, "--import", str(tmp_path / "chat.jsonl")], env)
    assert code == 0 and json.loads(out)["imported"] == 0 and json.loads(out)["skipped"] == 24, err
    store = open_store(load_settings().with_(mongodb_uri=None, db_name=db), fallback=False)
    try:
        _check_recall(store, codes, sid, lambda question: run_main([*argv, "--show-request", question], env)[:2])
    finally:
        store.client.drop_database(db)
        store.close()


@pytest.mark.slow
@pytest.mark.parametrize("point", ["import:logged", "import:folded", "import:chunk@2"])
def test_a_cli_process_ended_at_an_import_point_and_run_again_recalls_every_turn_once(tmp_path, point):
    db = f"cli_kill_{uuid.uuid4().hex[:8]}"
    env, sid = cli_env(GTE_DB_NAME=db, EMBEDDER="local"), tmp_path / ".sid"
    codes = _long_transcript(tmp_path / "chat.jsonl", 40)
    killed = _chat(
        "--session-file", str(sid), "--import", str(tmp_path / "chat.jsonl"), env={**env, "GTE_CRASH_AT": point}
    )
    assert killed.returncode == crash.CRASH_EXIT_CODE, killed.stderr[-2000:]
    again = _chat("--session-file", str(sid), "--import", str(tmp_path / "chat.jsonl"), env=env)
    assert again.returncode == 0, again.stderr[-2000:]
    store = open_store(load_settings().with_(mongodb_uri=None, db_name=db), fallback=False)
    try:
        _check_recall(store, codes, sid, _shower(sid, env))
    finally:
        store.client.drop_database(db)
        store.close()


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_a_cli_import_sigkilled_at_a_random_moment_and_run_again_recalls_every_turn_once(tmp_path, seed):
    """The issue's case: a vector --import of 400 turns killed -9 at 2-4 s (it had 400 turns logged and 0
    memories, and a second run logged all 400 again)."""
    db = f"cli_sigkill_{seed}_{uuid.uuid4().hex[:8]}"
    env, sid = cli_env(GTE_DB_NAME=db, EMBEDDER="local"), tmp_path / ".sid"
    codes = _long_transcript(tmp_path / "chat.jsonl", 400)
    command = [sys.executable, "-m", "helpers.chat", "--stage", "vector", "--session-file", str(sid)]
    proc = subprocess.Popen([*command, "--import", str(tmp_path / "chat.jsonl")], cwd=ROOT, env=env)
    time.sleep(random.Random(seed).uniform(2.0, 6.0))
    proc.send_signal(signal.SIGKILL)
    proc.wait(60)
    again = _chat("--session-file", str(sid), "--import", str(tmp_path / "chat.jsonl"), env=env, timeout=900)
    assert again.returncode == 0, again.stderr[-2000:]
    store = open_store(load_settings().with_(mongodb_uri=None, db_name=db), fallback=False)
    try:
        _check_recall(store, codes, sid, _shower(sid, env))
    finally:
        store.client.drop_database(db)
        store.close()


def test_kill_points_are_inert_without_the_setting(monkeypatch):
    monkeypatch.delenv("GTE_CRASH_AT", raising=False)
    monkeypatch.setattr(crash, "EXIT", lambda code: pytest.fail("a crash point fired unarmed"))
    store = mongomock_store()
    assert import_turns(vector(store), transcript(0))["imported"] == 20
    assert problems(store, imported=20) == []
    os.environ.pop("GTE_CRASH_AT", None)
