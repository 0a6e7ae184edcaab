"""Reliability (issue 6), model side: faults are retried by the SDK (bounded, backoff + jitter, retry-after
honoured), then surface as a clear error; the turn is kept, the session untouched, the next turn works.
Summary/extraction faults keep the dropped turns pending until a later merge."""

from __future__ import annotations

import time

import pytest
from _reliability import FILLER, cli_env, model_requests, record_sleeps, run_chat

from helpers.config import load_settings
from helpers.db.store import mongomock_store
from helpers.llm import get_client, offline_transport
from helpers.memory import BoundedMemory, TurnError
from helpers.offline import FaultPlan
from helpers.tools.consistency import check_consistency

KINDS = ["429", "529", "500", "timeout", "connect"]
EXPLAINED = {  # what the user is told, per fault kind (helpers.memory.explain)
    "429": "rate limited by the API (after retries)",
    "529": "failed with HTTP 529 (after retries)",
    "500": "failed with HTTP 500 (after retries)",
    "timeout": "did not answer in time (after retries)",
    "connect": "could not reach the model (after retries)",
}


@pytest.fixture
def settings():
    return load_settings({})


def bounded(client, settings, store, budget=300, **kw):
    return BoundedMemory(client, settings, store=store, user_id="u1", session_id="s1", budget=budget, **kw)


# ---------------------------------------------------------------------------- the SDK's retry, observed


def test_retry_after_ms_is_honoured_in_real_time():
    """Two 429s: the waits follow the server's retry-after-ms, not the SDK's default backoff (0.375-0.5 s, then
    0.75-1 s): at least the asked wait, and shorter than the default would have been."""
    for wait_ms, default_min in ((40, 0.375), (300, 0.75)):
        client = get_client(load_settings({}), faults=FaultPlan.parse("429x2", retry_after_ms=wait_ms), max_retries=2)
        transport = offline_transport(client)
        seen: list[float] = []
        serve = transport.handle_request

        def timed(request, serve=serve, seen=seen):
            if request.url.path.endswith("/v1/messages"):
                seen.append(time.monotonic())
            return serve(request)

        transport.handle_request = timed
        client.messages.create(model="claude-haiku-4-5", max_tokens=50, messages=[{"role": "user", "content": "hi"}])
        gaps = [b - a for a, b in zip(seen, seen[1:])]
        assert len(seen) == 3  # two faults, then the answer
        assert all(gap >= wait_ms / 1000 for gap in gaps), (wait_ms, gaps)
        assert gaps[-1] < default_min, (wait_ms, gaps)


@pytest.mark.parametrize("kind", KINDS)
def test_each_fault_is_retried_with_bounded_backoff_then_explained(kind, settings, monkeypatch):
    """Through BoundedMemory: max_retries + 1 attempts, then TurnError; turn logged 'unanswered', session unchanged,
    next turn works, logs and session consistent."""
    slept = record_sleeps(monkeypatch)
    store = mongomock_store()
    client = get_client(settings, faults=f"ok,{kind}x3", max_retries=2)
    memory = bounded(client, settings, store)
    memory.turn("My favorite color is teal.")
    before = store.load_session("u1", "s1")
    with pytest.raises(TurnError) as err:
        memory.turn("Where should we eat tonight?")
    assert EXPLAINED[kind] in str(err.value) and "your message is saved" in str(err.value)
    assert "Traceback" not in str(err.value) and "\n" not in str(err.value)
    assert err.value.text == "Where should we eat tonight?"
    # bounded: one try + max_retries=2 retries, each after a wait
    assert len(model_requests(client)) == 1 + 3
    assert len(slept) == 2
    if kind in ("429", "529", "500"):
        assert slept == [0.02, 0.02]  # the offline server's retry-after-ms: 20
    else:  # no retry-after: exponential backoff 0.5 s * 2^n with up to 25 % jitter
        assert 0.375 <= slept[0] <= 0.5 and 0.75 <= slept[1] <= 1.0
    assert store.load_session("u1", "s1") == before
    last = store.logs_for("u1", "s1")[-1]
    assert (last["role"], last["content"], last["status"]) == ("user", "Where should we eat tonight?", "unanswered")
    assert last["error"]
    assert "teal" in memory.turn("What is my favorite color?").reply
    assert check_consistency(store, "u1", "s1", budget=300) == []


def test_backoff_is_exponential_with_jitter_and_bounded(settings, monkeypatch):
    slept = record_sleeps(monkeypatch)
    store = mongomock_store()
    client = get_client(settings, faults="connectx*", max_retries=6)
    memory = bounded(client, settings, store)
    with pytest.raises(TurnError, match="could not reach the model"):
        memory.turn("hello")
    assert len(model_requests(client)) == 7 and len(slept) == 6
    nominal = [min(0.5 * 2**n, 8.0) for n in range(6)]
    factors = [s / n for s, n in zip(slept, nominal)]
    assert all(0.75 <= f <= 1.0 for f in factors), slept
    assert len({round(f, 9) for f in factors}) > 1, "no jitter: every wait was the same fraction of its nominal"
    assert store.logs_for("u1", "s1")[0]["status"] == "unanswered"
    assert store.load_session("u1", "s1")["version"] == 0 and check_consistency(store, "u1", "s1") == []


@pytest.mark.slow  # a CLI subprocess (seconds each): the full set runs it
def test_model_faults_through_the_cli(local_store_session, tmp_path):
    """Every fault kind in one CLI run: a clear '!' line on stderr, no traceback, the next line is answered."""
    db = f"rel_cli_{tmp_path.name[-20:]}".replace("-", "_")
    lines, plan = ["My favorite color is teal."], ["ok"]
    for kind in KINDS:
        lines += [f"Where should we eat ({kind})?", f"And after that, a walk? ({kind})"]
        plan += [f"{kind}x2", "ok"]
    lines += ["word " * 6000, "What is my favorite color?"]  # too long for a 3,000-token window, then fine
    env = cli_env(GTE_OFFLINE_FAULTS=",".join(plan), MAX_RETRIES="1", GTE_DB_NAME=db, OFFLINE_CONTEXT_WINDOW="3000")
    out = run_chat(lines, "--session-file", str(tmp_path / "sid"), "--user", "u", "--budget", "2000", env=env)
    stdout, stderr = out.stdout.decode(), out.stderr.decode()
    store = local_store_session.with_db(db)
    try:
        sid = (tmp_path / "sid").read_text().strip()
        assert "Traceback" not in stderr, stderr[-3000:]
        failures = [line for line in stderr.splitlines() if line.startswith("! ")]
        assert len(failures) == len(KINDS) + 1, stderr
        for line, kind in zip(failures, KINDS):
            assert EXPLAINED[kind] in line
        assert "too long for the model's context window" in failures[-1] and "shorten it" in failures[-1]
        replies = stdout.strip().splitlines()
        assert len(replies) == 1 + len(KINDS) + 1 and "teal" in replies[-1]
        assert out.returncode == 1  # some turns failed
        logs = store.logs_for("u", sid)
        unanswered = [e["content"] for e in logs if e["status"] == "unanswered"]
        assert unanswered == [lines[1 + 2 * i] for i in range(len(KINDS))] + [lines[-2]]
        assert check_consistency(store, "u", sid, budget=2000) == []
    finally:
        store.client.drop_database(db)


def test_prompt_too_long_keeps_turn_and_session(settings):
    store = mongomock_store()
    memory = bounded(get_client(settings, context_window=600, max_retries=0), settings, store)
    memory.turn("My favorite color is teal.")
    before = store.load_session("u1", "s1")
    with pytest.raises(TurnError, match="too long for the model's context window") as err:
        memory.turn("word " * 3000)
    assert "Nothing was lost" in str(err.value)
    assert store.load_session("u1", "s1") == before
    assert store.logs_for("u1", "s1")[-1]["status"] == "unanswered"
    assert "teal" in memory.turn("What is my favorite color?").reply
    assert check_consistency(store, "u1", "s1", budget=300) == []


# ---------------------------------------------------------------------------- summary / extraction faults


def _accounted(store) -> tuple[set, set]:
    """(ok log seqs, seqs the session accounts for: window + pending + summary coverage range)."""
    session = store.load_session("u1", "s1")
    ok = {e["seq"] for e in store.logs_for("u1", "s1") if e["status"] == "ok"}
    held = {m["seq"] for m in session["window"] + session.get("pending", [])}
    covers = session.get("summary_covers") or {}
    if covers.get("count"):
        held |= {s for s in ok if covers["first_seq"] <= s <= covers["last_seq"]}
    return ok, held


def test_consecutive_summary_and_extraction_failures_then_recovery(settings):
    store = mongomock_store()
    client = get_client(settings, max_retries=0)
    plan = offline_transport(client).faults
    memory = bounded(client, settings, store, budget=60)
    memory.turn("My favorite color is teal.")
    pending = []
    for i in range(4):  # chat call ok, summary call fails: four turns in a row
        plan.queue[:] = ["ok", "500"]
        memory.turn(FILLER.format(i=i))
        assert memory.last["summary_error"]
        pending.append(memory.state()["pending"])
        ok, held = _accounted(store)
        assert ok <= held and check_consistency(store, "u1", "s1", budget=60) == []
    assert pending == sorted(pending) and pending[0] >= 2 and pending[-1] >= pending[0] + 6
    assert "teal" not in memory.state()["summary"]
    plan.queue[:] = ["ok", "ok", "529"]  # the summary succeeds but the retention check's extraction call fails
    memory.turn(FILLER.format(i=10))
    assert memory.last["summary_error"] and memory.state()["pending"] > pending[-1]
    assert memory.stats["summary_failures"] == 5
    plan.queue[:] = []  # recovery: everything pending is merged in one go
    memory.turn(FILLER.format(i=11))
    state = memory.state()
    assert state["pending"] == 0 and "teal" in state["summary"]
    ok, held = _accounted(store)
    assert ok == held
    assert state["summary_covers"]["count"] + len(state["window"]) == len(ok)
    assert check_consistency(store, "u1", "s1", budget=60) == []
    assert "teal" in memory.turn("What is my favorite color?").reply
