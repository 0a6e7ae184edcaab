"""The memory_tool stage on the offline model, through the real SDK and its tool_runner: every request passes the
offline model's contract, and the offline model's own memory policy (helpers/offline/memory_policy.py, registered on
every offline client) views, reads and edits the user's files in MongoDB, per user, and answers from what it read.
"""

from __future__ import annotations

from helpers.config import load_settings
from helpers.llm import get_client, offline_transport
from helpers.memory_tool import MemoryToolMemory
from helpers.offline import MemoryPolicy

SETTINGS = load_settings({})


def stage(store, user: str, session: str) -> MemoryToolMemory:
    return MemoryToolMemory(get_client(SETTINGS), SETTINGS, store=store, user_id=user, session_id=session)


def commands(memory: MemoryToolMemory) -> list[str]:
    return [c["command"] for c in memory.last["commands"]]


def test_every_offline_client_speaks_the_memory_tool():
    assert any(isinstance(b, MemoryPolicy) for b in offline_transport(get_client(SETTINGS)).model.behaviours)


def test_a_statement_is_written_and_a_new_session_answers_from_the_file(mock_store):
    told = stage(mock_store, "maya", "s1")
    first = told.turn("My favourite tea is genmaicha.")
    assert commands(told) == ["view", "create"] and first.reply.strip()
    assert told.tool.read("/memories/user.md") == "The user's favourite tea is genmaicha.\n"
    asked = stage(mock_store, "maya", "s2")
    result = asked.turn("What is my favourite tea?")
    assert commands(asked) == ["view", "view"] and "genmaicha" in result.reply
    assert result.request["messages"][0]["content"] == "What is my favourite tea?"  # a new session: no window
    results = [b for m in result.request["messages"][1:] for b in m["content"] if b.get("type") == "tool_result"]
    assert "     1\tThe user's favourite tea is genmaicha." in results[-1]["content"]  # read, then answered
    assert [e["status"] for e in mock_store.logs_for("maya", "s2")] == ["ok", "ok"]


def test_a_changed_fact_replaces_its_line_and_a_new_one_is_appended(mock_store):
    memory = stage(mock_store, "maya", "s1")
    memory.turn("My favourite tea is genmaicha.")
    memory.turn("I live in Lisbon.")
    assert commands(memory) == ["view", "view", "insert"]
    memory.turn("My favourite tea is sencha.")
    assert commands(memory) == ["view", "view", "str_replace"]
    assert memory.tool.read("/memories/user.md") == "The user's favourite tea is sencha.\nThe user lives in Lisbon.\n"
    memory.turn("I live in Lisbon.")  # said again: nothing to write
    assert commands(memory) == ["view", "view"]


def test_another_user_has_no_files_and_the_model_says_it_does_not_know(mock_store):
    stage(mock_store, "maya", "s1").turn("My favourite tea is genmaicha.")
    bob = stage(mock_store, "bob", "s2")
    result = bob.turn("What is my favourite tea?")
    assert commands(bob) == ["view"] and "genmaicha" not in str(result.request) and "genmaicha" not in result.reply
    assert result.request["messages"][-1]["content"][0]["content"].endswith("0B\t/memories")


def test_a_secret_is_not_written(mock_store):
    memory = stage(mock_store, "maya", "s1")
    memory.turn("My bank card number is 4111 1111 1111 1111 and my favourite tea is genmaicha.")
    assert "4111" not in memory.tool.read("/memories/user.md") and "genmaicha" in memory.tool.read("/memories/user.md")


def test_the_stage_counts_its_requests_and_prices_upkeep_apart(mock_store):
    from helpers.pricing import CostLedger

    ledger = CostLedger()
    memory = MemoryToolMemory(
        get_client(SETTINGS), SETTINGS, store=mock_store, user_id="maya", session_id="s1", ledger=ledger
    )
    memory.turn("My favourite tea is genmaicha.")
    assert memory.last["calls"] == 3 and [e.purpose for e in ledger.entries] == ["memory_tool", "memory_tool", "chat"]
    assert memory.stats["count_calls"] == 1 and memory.state()["gauge"]["system"] > 0  # counted with the tool once
