"""helpers.memory: stateless/history strategies and BoundedMemory (window + rolling summary in MongoDB)."""

import pytest

from helpers.config import load_settings
from helpers.db.store import mongomock_store
from helpers.llm import get_client, offline_transport
from helpers.memory import (
    BoundedMemory,
    EmptyMessageError,
    HistoryMemory,
    StatelessMemory,
    TurnError,
    session_id_from_file,
)
from helpers.memory.importer import import_turns
from helpers.offline import count_text_tokens
from helpers.prompts import SCOUT_PERSONA, SUMMARY_OPEN

FILLER = "What should we do near Griffith Park on day {i}, maybe something with a view?"


@pytest.fixture
def settings():
    return load_settings({})


@pytest.fixture
def client(settings):
    return get_client(settings, max_retries=0)


def bounded(client, settings, store=None, **kw):
    kw.setdefault("budget", 300)
    return BoundedMemory(
        client,
        settings,
        store=store or mongomock_store(),
        user_id=kw.pop("user_id", "u1"),
        session_id=kw.pop("session_id", "s1"),
        **kw,
    )


def test_stateless_and_history(client, settings):
    goldfish = StatelessMemory(client, settings)
    goldfish.turn("My favorite color is green")
    assert "green" not in goldfish.turn("What is my favorite color?").reply
    history = HistoryMemory(client, settings)
    history.turn("My favorite color is green")
    assert "green" in history.turn("What is my favorite color?").reply
    assert len(history.history) == 4


def test_a_reply_cut_to_nothing_at_a_full_window_is_not_resent(client, settings):
    """A prompt that fills the window exactly gets an empty reply (model_context_window_exceeded); the history keeps
    the user's message and no empty assistant turn, so the next request is one the API takes."""
    text = "My favorite color is green"
    request = HistoryMemory(client, settings).build_request(text)
    full = client.messages.count_tokens(**{k: v for k, v in request.items() if k != "max_tokens"}).input_tokens
    history = HistoryMemory(get_client(settings, context_window=full, max_retries=0), settings)
    first = history.turn(text)
    assert (first.reply, first.stop_reason) == ("", "model_context_window_exceeded")
    assert [m["role"] for m in history.history] == ["user"]
    nxt = client.messages.create(**history.build_request("What is my favorite color?"))
    assert "green" in nxt.content[0].text


def test_last_k_forgets_old_facts(client, settings):
    short = HistoryMemory(client, settings, keep_last=4)
    short.turn("My favorite color is green")
    for i in range(3):
        short.turn(FILLER.format(i=i))
    assert "green" not in short.turn("What is my favorite color?").reply
    assert short.build_request("x")["messages"][0]["role"] == "user"


@pytest.mark.parametrize("bad", ["", "   ", "\n\t", "a\x00b", 123, "x" * 200_001])
def test_bad_input_is_refused_before_any_call(client, settings, bad):
    memory = bounded(client, settings)
    with pytest.raises(EmptyMessageError):
        memory.turn(bad)
    assert memory.store.count_logs("u1", "s1") == 0
    assert not [p for p, _ in offline_transport(client).requests if p.endswith("/v1/messages")]


def test_window_stays_within_budget_and_summary_keeps_the_fact(client, settings):
    memory = bounded(client, settings)
    memory.turn("Hi Scout! My name is Maya and my favorite color is teal.")
    inputs = []
    for i in range(40):
        result = memory.turn(FILLER.format(i=i))
        inputs.append(result.input_tokens)
        assert result.window_tokens <= 300
    state = memory.state()
    assert state["window_tokens"] <= state["budget"] == 300
    assert "teal" in state["summary"] and "Maya" in state["summary"]
    assert state["retention"] == 1.0
    assert state["log_count"] == 82 and state["version"] == 41
    assert state["summary_covers"]["first_seq"] == 1
    assert state["summary_covers"]["count"] + len(state["window"]) == 82
    # flat: after the window fills, input tokens per turn stop growing
    assert max(inputs[20:]) - min(inputs[20:]) < 40
    reply = memory.turn("What is my favorite color?").reply
    assert "teal" in reply


def test_summary_goes_in_the_system_prompt_marked_as_data(client, settings):
    memory = bounded(client, settings, budget=60)
    memory.turn("My favorite color is teal.")
    memory.turn(FILLER.format(i=1))
    memory.turn(FILLER.format(i=2))
    request = memory.build_request("What is my favorite color?")
    assert request["system"].startswith(SCOUT_PERSONA)
    assert SUMMARY_OPEN in request["system"] and "teal" in request["system"]
    assert all("teal" not in str(m["content"]) for m in request["messages"])
    assert request["messages"][0]["role"] == "user"


def test_show_request_changes_nothing(client, settings):
    store = mongomock_store()
    memory = bounded(client, settings, store=store)
    memory.turn("hello")
    before = (store.load_session("u1", "s1"), store.count_logs("u1", "s1"))
    request = memory.build_request("What next?")
    assert request["messages"][-1] == {"role": "user", "content": "What next?"}
    assert (store.load_session("u1", "s1"), store.count_logs("u1", "s1")) == before
    fresh = bounded(client, settings, store=store, session_id="never-used")
    fresh.build_request("hi")
    assert store.load_session("u1", "never-used") is None


def test_message_tokens_are_own_tokens_not_context(client, settings):
    memory = bounded(client, settings, budget=10_000)
    texts = ["Hi there, I'm planning a trip.", FILLER.format(i=1), FILLER.format(i=2)]
    for t in texts:
        memory.turn(t)
    window = memory.state()["window"]
    for m in window[1:]:
        # own text tokens plus a few tokens of framing, never the whole context
        assert count_text_tokens(m["text"]) <= m["tokens"] <= count_text_tokens(m["text"]) + 8
    request = memory.build_request("next")
    counted = client.messages.count_tokens(
        model=memory.model, system=request["system"], messages=request["messages"][:-1]
    ).input_tokens
    base = (
        client.messages.count_tokens(
            model=memory.model, system=request["system"], messages=[{"role": "user", "content": "."}]
        ).input_tokens
        - 1
    )
    assert abs((counted - base) - memory.state()["window_tokens"]) <= 8


def test_no_count_tokens_round_trip_in_steady_state(client, settings):
    memory = bounded(client, settings, budget=200)
    for i in range(30):
        memory.turn(FILLER.format(i=i))
    # one count when the session starts, one when the first summary appears; none after that
    assert memory.stats["count_calls"] <= 2
    counts = [p for p, _ in offline_transport(client).requests if p.endswith("count_tokens")]
    assert len(counts) == memory.stats["count_calls"]


def test_failed_model_call_keeps_the_turn_and_the_session(settings):
    store = mongomock_store()
    ok = bounded(get_client(settings, max_retries=0), settings, store=store)
    ok.turn("My favorite color is teal.")
    before = store.load_session("u1", "s1")
    broken = bounded(get_client(settings, faults="529x*", max_retries=0), settings, store=store)
    with pytest.raises(TurnError) as err:
        broken.turn("Where should we eat tonight?")
    assert err.value.text == "Where should we eat tonight?"
    assert store.load_session("u1", "s1") == before
    logs = store.logs_for("u1", "s1")
    assert logs[-1]["content"] == "Where should we eat tonight?" and logs[-1]["status"] == "unanswered"
    assert "Overloaded" in logs[-1]["error"] or "529" in logs[-1]["error"]
    assert "teal" in ok.turn("What is my favorite color?").reply


def test_prompt_too_long_is_explained_and_does_not_poison_the_session(settings):
    client = get_client(settings, context_window=500, max_retries=0)
    store = mongomock_store()
    memory = bounded(client, settings, store=store)
    memory.turn("hello")
    with pytest.raises(TurnError, match="too long for the model's context window"):
        memory.turn("word " * 2000)
    assert memory.turn("and now a normal question about tacos?").reply


def test_summary_failure_keeps_dropped_turns_pending_then_merges(settings):
    store = mongomock_store()
    good = get_client(settings, max_retries=0)
    memory = bounded(good, settings, store=store, budget=60)
    memory.turn("My favorite color is teal.")
    # chat call ok, summary call fails: the transport serves faults in order
    flaky = get_client(settings, faults="ok,500,500,500", max_retries=0)
    memory_flaky = bounded(flaky, settings, store=store, budget=60)
    memory_flaky.turn(FILLER.format(i=1))
    state = memory_flaky.state()
    assert state["pending"] >= 2 and "teal" not in state["summary"]
    memory.turn(FILLER.format(i=2))
    state = memory.state()
    assert state["pending"] == 0 and "teal" in state["summary"]
    assert "teal" in memory.turn("What is my favorite color?").reply


def test_version_guard_reapplies_on_conflict(client, settings):
    store = mongomock_store()
    a = bounded(client, settings, store=store)
    b = bounded(client, settings, store=store)
    a.turn("first from a")
    original_load = b.load
    calls = {"n": 0}

    def stale_load(create=True):
        doc = original_load(create)
        calls["n"] += 1
        if calls["n"] == 1:
            a.turn("sneaky write from a")  # lands between b's load and b's save
        return doc

    b.load = stale_load
    b.turn("second from b")
    assert b.stats["conflicts"] == 1
    window_texts = [m["text"] for m in a.state()["window"] if m["role"] == "user"]
    assert window_texts == ["first from a", "sneaky write from a", "second from b"]


def test_session_file_resume_and_reset(tmp_path, client, settings):
    store = mongomock_store()
    path = tmp_path / ".session_id"
    first = BoundedMemory(client, settings, store=store, session_file=path)
    first.turn("My favorite color is teal.")
    assert path.read_text().strip() == first.session_id
    again = BoundedMemory(client, settings, store=store, session_file=path)
    assert again.session_id == first.session_id
    assert "teal" in again.turn("What is my favorite color?").reply
    # row dropped, file kept: a fresh conversation under the same id
    store.delete_session("default", first.session_id)
    same_id = BoundedMemory(client, settings, store=store, session_file=path)
    assert same_id.session_id == first.session_id
    assert "teal" not in same_id.turn("What is my favorite color?").reply
    assert store.load_session("default", first.session_id)["version"] == 1
    # file deleted: a new conversation, the database untouched
    path.unlink()
    new = BoundedMemory(client, settings, store=store, session_file=path)
    assert new.session_id != first.session_id
    assert store.load_session("default", first.session_id) is not None


def test_import_and_rebuild(client, settings):
    store = mongomock_store()
    memory = bounded(client, settings, store=store, budget=80)
    turns = [
        {"role": "user", "content": "My name is Maya and I live in Portland."},
        {"role": "assistant", "content": "Nice to meet you, Maya."},
    ]
    for i in range(6):
        turns += [{"role": "user", "content": FILLER.format(i=i)}, {"role": "assistant", "content": "Try the trail."}]
    chat_calls_before = len(
        [
            1
            for p, b in offline_transport(client).requests
            if p.endswith("/v1/messages") and b.get("system", "").startswith(SCOUT_PERSONA)
        ]
    )
    state = import_turns(memory, turns)
    chat_calls_after = len(
        [
            1
            for p, b in offline_transport(client).requests
            if p.endswith("/v1/messages") and b.get("system", "").startswith(SCOUT_PERSONA)
        ]
    )
    assert chat_calls_after == chat_calls_before  # no chat-model call
    assert state["log_count"] == 14 and state["window_tokens"] <= 80 and "Portland" in state["summary"]
    store.save_session("u1", "s1", state["version"], {"window": [], "summary": ""})  # damage it
    rebuilt = memory.rebuild()
    assert rebuilt["window"] == state["window"] and "Portland" in rebuilt["summary"]
    with pytest.raises(ValueError):
        import_turns(memory, [{"role": "user", "content": ""}])


def test_users_and_sessions_are_isolated(client, settings):
    store = mongomock_store()
    bounded(client, settings, store=store, user_id="alice").turn("My favorite color is teal.")
    bob = bounded(client, settings, store=store, user_id="bob")
    assert "teal" not in bob.turn("What is my favorite color?").reply
    other_session = bounded(client, settings, store=store, user_id="alice", session_id="s2")
    assert "teal" not in other_session.turn("What is my favorite color?").reply


def test_session_id_from_file_writes_once(tmp_path):
    path = tmp_path / "nested" / ".session_id"
    sid = session_id_from_file(path)
    assert session_id_from_file(path) == sid and len(sid) == 32


def test_rebuild_keeps_a_committed_exchange_whose_log_status_was_not_updated(client, settings):
    store = mongomock_store()
    memory = bounded(client, settings, store=store)
    memory.turn("My favorite color is teal.")
    memory.turn("Where should we eat tonight?")
    before = memory.state()["window"]
    # a crash after the session save (the commit point) but before the logs were marked "ok"
    store.set_log_status("u1", "s1", [3, 4], "pending")
    assert memory.rebuild()["window"] == before


# ---------------------------------------------------------------------------- cache-aware bounded memory (04)
# (the layout, breakpoints and cache reads: tests/memory/test_cache_layout.py)


def test_reuses_prefix_compares_text_not_markers():
    from helpers.memory import reuses_prefix, with_cache_breakpoints

    one = {"system": "S", "messages": [{"role": "user", "content": "a"}]}
    two = {
        "system": "S",
        "messages": [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"},
            {"role": "user", "content": "c"},
        ],
    }
    assert reuses_prefix(with_cache_breakpoints(one), with_cache_breakpoints(two))
    assert not reuses_prefix(one, {**two, "system": "S2"})
    assert not reuses_prefix(one, {**two, "messages": [{"role": "user", "content": "x"}, *two["messages"][1:]]})
    assert not reuses_prefix(two, one)


def test_low_water_is_checked(client, settings):
    with pytest.raises(ValueError, match="low_water"):
        bounded(client, settings, cache_aware=True, low_water=1.0)


def test_bounded_import_folds_in_batches_not_one_summary_call_per_exchange(client, settings):
    memory = bounded(client, settings, store=mongomock_store(), budget=80)
    turns = []
    for i in range(40):
        turns += [{"role": "user", "content": FILLER.format(i=i)}, {"role": "assistant", "content": "Try the trail."}]

    def summaries():
        return len(
            [
                1
                for p, b in offline_transport(client).requests
                if p.endswith("/v1/messages")
                and str(b.get("system", "")).startswith("You maintain the rolling summary")
            ]
        )

    before = summaries()
    state = import_turns(memory, turns)
    assert state["log_count"] == 80 and state["window_tokens"] <= 80
    assert 1 <= summaries() - before <= 3  # 40 exchanges in folds of IMPORT_FOLD_BATCH (16): three folds at most


def test_the_offline_model_reads_a_memory_block_in_the_newest_message(client):
    from helpers.prompts import MEMORY_CLOSE, MEMORY_OPEN

    block = f"\n\n{MEMORY_OPEN}User: Our dinner reservation at Bestia is at 7:45pm on Friday.{MEMORY_CLOSE}"
    question = "What time is our dinner reservation at Bestia?"
    reply = client.messages.create(
        model="claude-haiku-4-5",
        max_tokens=200,
        system=SCOUT_PERSONA,
        messages=[{"role": "user", "content": [{"type": "text", "text": question}, {"type": "text", "text": block}]}],
    )
    without = client.messages.create(
        model="claude-haiku-4-5", max_tokens=200, system=SCOUT_PERSONA, messages=[{"role": "user", "content": question}]
    )
    assert "7:45" in reply.content[0].text and "7:45" not in without.content[0].text
