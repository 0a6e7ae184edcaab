"""helpers/memory_tool/stage.py and loop.py: the memory_tool stage's turn, through the real SDK's tool_runner.

The model here is tests/memory_tool/_scripted.py's policy (the offline model learns the memory tool in phase 2);
what is tested is the stage: the request it sends, the loop and its cap, what it logs, saves and reports, the files
shared by a user's sessions and by no other user, and how a failing model or store ends a turn without losing the
user's message. The live twin at the end runs the same flow against the API.
"""

from __future__ import annotations

import os

import httpx2
import pytest
from _scripted import ScriptedModel, note_taker, request_tokens, text, this_turn, tool_use

from helpers.config import load_settings
from helpers.memory import TurnError
from helpers.memory_tool import MemoryToolMemory, MongoMemoryTool
from helpers.pricing import CostLedger
from helpers.prompts import MEMORY_TOOL_GUIDANCE, SCOUT_PERSONA
from helpers.sim.simulate import simulate
from helpers.sim.strategies import make_strategy

SETTINGS = load_settings({})


def stage(model: ScriptedModel, store, user="maya", session="s1", **kw) -> MemoryToolMemory:
    return MemoryToolMemory(model.client(), SETTINGS, store=store, user_id=user, session_id=session, **kw)


def test_one_turn_sends_the_tool_runs_the_commands_and_saves_the_exchange(mock_store):
    model = ScriptedModel(note_taker)
    memory = stage(model, mock_store)
    result = memory.turn("My favourite tea is genmaicha.")

    first, *rest = model.requests
    assert first["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    assert first["system"] == f"{SCOUT_PERSONA}\n\n{MEMORY_TOOL_GUIDANCE}"
    assert first["messages"] == [{"role": "user", "content": "My favourite tea is genmaicha."}]
    assert "thread" not in first and "tool_choice" not in first  # whole requests, no server-side thread
    assert len(rest) == 2 and rest[-1]["messages"][-1]["content"][0]["type"] == "tool_result"
    assert result.reply == "Noted." and result.stop_reason == "end_turn" and result.stage == "memory_tool"
    assert result.request["messages"] == model.requests[-1]["messages"]  # the LAST request, as sent
    assert result.input_tokens == request_tokens(model.requests[-1]) > request_tokens(first)
    assert memory.tool.read("/memories/user.md") == "My favourite tea is genmaicha.\n"

    logs = mock_store.logs_for("maya", "s1")
    assert [(e["role"], e["status"]) for e in logs] == [("user", "ok"), ("assistant", "ok")]
    assert logs[1]["calls"] == 3 and [c["command"] for c in logs[1]["commands"]] == ["view", "create"]
    assert "genmaicha" not in str(logs[1]["commands"])  # commands are logged without file text
    saved = mock_store.load_session("maya", "s1")
    assert [m["content"] for m in saved["window"]] == ["My favourite tea is genmaicha.", "Noted."]
    assert all(m["tokens"] > 0 and m["turn"] == memory.turn_id for m in saved["window"])
    assert result.user_tokens == saved["window"][0]["tokens"] and result.version == saved["version"] == 1
    assert memory.tool.trail()[0]["session_id"] == "s1" and memory.tool.trail()[0]["turn"] == memory.turn_id
    assert memory.last["calls"] == 3 and memory.last["input_tokens_all"] > result.input_tokens


def test_turn_tokens_are_the_chat_calls_and_the_whole_turn_is_in_last_and_the_ledger(mock_store):
    model, ledger = ScriptedModel(note_taker), CostLedger()
    memory = stage(model, mock_store, ledger=ledger)
    result = memory.turn("My favourite tea is genmaicha.")
    assert [e.purpose for e in ledger.entries] == ["memory_tool", "memory_tool", "chat"]
    chat = ledger.entries[-1]
    assert result.input_tokens == chat.input_tokens and result.output_tokens == chat.output_tokens
    assert memory.last["input_tokens_all"] == sum(e.input_tokens for e in ledger.entries)
    assert memory.last["output_tokens_all"] == sum(e.output_tokens for e in ledger.entries)
    assert ledger.totals_by_kind()["memory"]["calls"] == 2


@pytest.fixture(params=["mongomock", "local"])
def store(request):
    """The same test on mongomock and on the local SecantusDB server."""
    return request.getfixturevalue("mock_store" if request.param == "mongomock" else "local_store")


def test_a_new_session_of_the_same_user_reads_the_files_another_user_has_none(store):
    model = ScriptedModel(note_taker)
    stage(model, store, session="s1").turn("My favourite tea is genmaicha.")
    later = stage(model, store, session="s2")
    assert later.build_request("What is my favourite tea?")["messages"] == [
        {"role": "user", "content": "What is my favourite tea?"}
    ]  # a new session: no window, the files are the only memory
    answer = later.turn("What is my favourite tea?")
    assert "genmaicha" in answer.reply
    assert "genmaicha" in str(answer.request["messages"])  # the file's text was in the request the reply came from
    other = stage(model, store, user="bob", session="s3").turn("What is my favourite tea?")
    assert "genmaicha" not in other.reply and "genmaicha" not in str(other.request)
    assert other.reply == "I have nothing in memory about that."


def test_the_window_is_trimmed_by_whole_exchanges_and_nothing_is_summarised(mock_store):
    model = ScriptedModel(lambda body: [text("ok")])
    memory = stage(model, mock_store, budget=60)
    for i in range(8):
        result = memory.turn(f"Message number {i} with a few more words to take up some room in the window.")
    saved = mock_store.load_session("maya", "s1")
    assert result.dropped > 0 and 2 <= len(saved["window"]) < 16 and saved["window"][0]["role"] == "user"
    assert saved["window"][-2]["content"].startswith("Message number 7")
    assert not saved.get("summary") and not saved.get("pending")
    last = model.requests[-1]["messages"]
    assert last[-1]["content"].startswith("Message number 7") and len(last) < 15  # the request carried a trimmed window
    assert mock_store.count_logs("maya", "s1") == 16  # the log keeps every message


def test_the_loop_is_capped_and_the_last_request_forbids_tools(mock_store):
    def greedy(body):
        said, sent, _ = this_turn(body)
        if body.get("tool_choice") == {"type": "none"}:
            return [text(f"Stopped after {len(sent)} commands.")]
        return [tool_use(len(sent) + 1, command="create", path=f"/memories/f{len(sent)}.md", file_text="x")]

    model, ledger = ScriptedModel(greedy), CostLedger()
    memory = stage(model, mock_store, max_iterations=4, ledger=ledger)
    result = memory.turn("Remember everything.")
    assert len(model.requests) == 4 and [r.get("tool_choice") for r in model.requests] == [
        None,
        None,
        None,
        {"type": "none"},
    ]
    assert result.reply == "Stopped after 3 commands." and result.request["tool_choice"] == {"type": "none"}
    assert len(memory.tool.files()) == 3  # each command ran exactly once
    assert memory.last["capped"] and memory.stats["capped"] == 1 and memory.stats["calls"] == 4
    with pytest.raises(ValueError, match="max_iterations must be a whole number >= 2"):
        stage(model, mock_store, max_iterations=1).turn("hi")


def test_command_errors_go_back_to_the_model_and_the_turn_goes_on(mock_store):
    def traverser(body):
        said, sent, results = this_turn(body)
        if not sent:
            return [tool_use(1, command="view", path="/memories/../../etc/passwd")]
        return [text(f"The tool said: {results[0]}")]

    model = ScriptedModel(traverser)
    memory = stage(model, mock_store)
    result = memory.turn("Show me the password file.")
    block = model.requests[-1]["messages"][-1]["content"][0]
    assert (
        block["is_error"] is True
        and block["content"] == "Path /memories/../../etc/passwd would escape /memories directory"
    )
    assert result.reply.startswith("The tool said: Path /memories/../../etc/passwd would escape")
    assert memory.stats["command_errors"] == 1 and memory.tool.trail()[-1]["outcome"] == "refused_path"


def test_a_failing_model_call_keeps_the_users_message_and_changes_no_session(mock_store):
    def fails_second(body):
        said, sent, _ = this_turn(body)
        if sent:
            return httpx2.Response(
                529, json={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
            )
        return [tool_use(1, command="create", path="/memories/a.md", file_text="written before the failure")]

    memory = stage(ScriptedModel(fails_second), mock_store)
    with pytest.raises(TurnError, match="529") as caught:
        memory.turn("My name is Maya.")
    assert caught.value.text == "My name is Maya."
    logs = mock_store.logs_for("maya", "s1")
    assert [(e["role"], e["status"]) for e in logs] == [("user", "unanswered")]
    assert mock_store.load_session("maya", "s1")["window"] == []
    assert memory.tool.read("/memories/a.md") == "written before the failure"  # a command that ran stays done


def test_a_failing_store_during_a_command_ends_the_turn_at_once(mock_store):
    model = ScriptedModel(note_taker)
    memory = stage(model, mock_store)

    def down(*_):
        from pymongo.errors import AutoReconnect

        raise AutoReconnect("connection reset by peer")

    memory.tool.storage.load = down
    with pytest.raises(TurnError, match="the database failed during this turn"):
        memory.turn("My favourite tea is genmaicha.")
    assert len(model.requests) == 1  # no request after the failed command: the model is not asked to cope
    assert [e["status"] for e in mock_store.logs_for("maya", "s1")] == ["unanswered"]


def test_a_turn_that_ends_without_a_reply_is_an_error_not_an_empty_message(mock_store):
    memory = stage(ScriptedModel(lambda body: []), mock_store)
    with pytest.raises(TurnError, match="without a reply"):
        memory.turn("Hello?")
    assert mock_store.load_session("maya", "s1")["window"] == []


def test_a_user_erased_while_the_turn_runs_gets_nothing_written_back(mock_store):
    from helpers.memory.forget import documents_of, forget_user

    stage(ScriptedModel(note_taker), mock_store).turn("My favourite tea is genmaicha.")

    def erased_midway(body):
        said, sent, results = this_turn(body)
        if not sent:
            return [tool_use(1, command="view", path="/memories/user.md")]
        forget_user(mock_store, "maya")  # --forget-user from another process, while the model is answering
        return [text(f"You told me: {results[0]}")]

    with pytest.raises(TurnError, match="erased"):
        stage(ScriptedModel(erased_midway), mock_store).turn("What is my favourite tea?")
    assert sum(documents_of(mock_store, "maya").values()) == 0


def test_two_processes_on_one_session_keep_both_exchanges(mock_store):
    model = ScriptedModel(lambda body: [text("ok")])
    a, b = stage(model, mock_store), stage(model, mock_store)
    a.turn("first from a")
    b.turn("first from b")  # b read the session after a saved it
    save, raced = mock_store.save_session, []

    def b_saves_first(*args, **kwargs):
        if not raced:
            raced.append("b")
            b.turn("second from b")  # between a's read of the session and a's save
        return save(*args, **kwargs)

    mock_store.save_session = b_saves_first
    a.turn("second from a")
    window = [m["content"] for m in mock_store.load_session("maya", "s1")["window"] if m["role"] == "user"]
    assert window == ["first from a", "first from b", "second from b", "second from a"] and a.stats["conflicts"] == 1


def test_state_rebuild_and_settle(mock_store):
    model = ScriptedModel(note_taker)
    memory = stage(model, mock_store)
    memory.turn("My favourite tea is genmaicha.")
    state = memory.state()
    assert state["stage"] == "memory_tool" and [f["path"] for f in state["files"]] == ["/memories/user.md"]
    assert len(state["window"]) == 2 and state["summary"] == "" and state["memories"] == []
    mock_store.save_session("maya", "s1", 1, {"window": []})  # lose the window: the log still has the exchange
    rebuilt = memory.rebuild()
    assert rebuilt["messages"] == 2 and rebuilt["window"] == 2
    mock_store.append_log("maya", "s1", "user", "typed, then the process died", status="pending", extra={"turn": "x"})
    assert memory.settle_interrupted() == {"ok": 0, "unanswered": 1}


def test_the_strategy_table_builds_the_stage_and_the_simulator_prices_its_upkeep(mock_store):
    ledger = CostLedger()
    strategy = make_strategy(
        "memory_tool", ScriptedModel(note_taker).client(), SETTINGS, ledger=ledger, store=mock_store
    )
    assert isinstance(strategy, MemoryToolMemory) and strategy.user_id == "simulation"
    result = simulate(strategy, ["My favourite tea is genmaicha.", "What is my favourite tea?"], name="memory_tool")
    assert result.turns == 2 and "genmaicha" in result.replies[1]
    assert result.cost_by_purpose["chat"]["calls"] == 2 and result.cost_by_purpose["memory_tool"]["calls"] >= 3


@pytest.mark.live
@pytest.mark.skipif(not os.environ.get("ANTHROPIC_API_KEY"), reason="needs ANTHROPIC_API_KEY (live test)")
def test_live_a_fact_told_in_one_session_is_recalled_in_the_next_and_not_for_another_user(local_store):
    """The same flow against the API (GTE_LIVE_TESTS=1 with ANTHROPIC_API_KEY): Claude decides what to write."""
    from helpers.llm import get_client

    settings, client = load_settings(), get_client()
    run = f"{os.getpid()}"

    def chat(user: str, session: str, said: str) -> str:
        memory = MemoryToolMemory(client, settings, store=local_store, user_id=f"{user}-{run}", session_id=session)
        return memory.turn(said).reply

    chat("maya", "one", "Please remember this for later: my favourite tea is genmaicha.")
    files = MongoMemoryTool(local_store, f"maya-{run}", settings=settings).files()
    assert any("genmaicha" in f.content.lower() for f in files), [f.path for f in files]
    assert "genmaicha" in chat("maya", "two", "What is my favourite tea?").lower()
    assert "genmaicha" not in chat("bob", "three", "What is my favourite tea?").lower()
