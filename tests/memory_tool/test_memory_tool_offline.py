"""The memory_tool stage on the offline model (helpers/offline, issue 30's contract), through the real SDK.

Until phase 2 teaches the offline model a memory policy, it answers memory-tool requests with a plain reply; these
tests prove the stage's requests pass the offline model's contract (the memory tool, count_tokens with it, the
tool_use/tool_result turns, `tool_choice: none`), and that the seam phase 2 plugs into works: a `Behaviour` on the
offline model (helpers.offline.beta) that emits memory commands has them run on MongoDB, and what it read is in the
request the reply comes from. The `Behaviour` here is a small fixed tool policy for the test, not phase 2's.
"""

from __future__ import annotations

from helpers.config import load_settings
from helpers.llm import get_client, offline_transport
from helpers.memory_tool import MemoryToolMemory
from helpers.offline import Behaviour, Reply
from helpers.offline.beta import MEMORY

SETTINGS = load_settings({})


def test_the_offline_model_accepts_every_request_the_stage_sends(mock_store):
    memory = MemoryToolMemory(get_client(SETTINGS), SETTINGS, store=mock_store, user_id="maya", session_id="s1")
    first = memory.turn("My favourite tea is genmaicha.")
    second = memory.turn("What is my favourite tea?")
    assert first.reply.strip() and second.reply.strip() and memory.last["commands"] == []  # no policy yet: no commands
    assert second.request["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    assert second.request["messages"][0]["content"] == "My favourite tea is genmaicha."  # the window, this session
    assert memory.stats["count_calls"] == 1 and memory.state()["gauge"]["system"] > 0  # counted with the tool once
    assert [e["status"] for e in mock_store.logs_for("maya", "s1")] == ["ok"] * 4


def _turn_so_far(body: dict) -> tuple[str, list[dict], list[str]]:
    messages = body["messages"]
    start = max(i for i, m in enumerate(messages) if m["role"] == "user" and isinstance(m["content"], str))
    sent = [b["input"] for m in messages[start + 1 :] for b in m["content"] if b.get("type") == "tool_use"]
    results = [
        b["content"] if isinstance(b["content"], str) else b["content"][0]["text"]
        for m in messages[start + 1 :]
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    return messages[start]["content"], sent, results


class ViewThenWrite(Behaviour):
    """Test policy: view /memories; read /memories/user.md if listed; write a statement to it if not; then the
    offline model's own reply."""

    feature = MEMORY

    def respond(self, body: dict, default: Reply) -> Reply:
        said, sent, results = _turn_so_far(body)

        def command(**params) -> Reply:
            return Reply(
                [{"type": "tool_use", "id": f"toolu_{len(sent):03d}", "name": "memory", "input": params}], "tool_use"
            )

        if not sent:
            return command(command="view", path="/memories")
        listed = "/memories/user.md" in results[0]
        if listed and len(sent) == 1:
            return command(command="view", path="/memories/user.md")
        if not listed and not said.endswith("?") and len(sent) == 1:
            return command(command="create", path="/memories/user.md", file_text=said + "\n")
        return default


def test_commands_from_the_offline_models_behaviour_hook_run_on_mongodb_per_user(mock_store):
    def memory(user: str, session: str) -> MemoryToolMemory:
        client = get_client(SETTINGS)
        offline_transport(client).model.behaviours.append(ViewThenWrite())
        return MemoryToolMemory(client, SETTINGS, store=mock_store, user_id=user, session_id=session)

    told = memory("maya", "s1")
    told.turn("My favourite tea is genmaicha.")
    assert [c["command"] for c in told.last["commands"]] == ["view", "create"]
    assert told.tool.read("/memories/user.md") == "My favourite tea is genmaicha.\n"

    asked = memory("maya", "s2").turn("What is my favourite tea?")
    results = [b for m in asked.request["messages"][1:] for b in m["content"] if b.get("type") == "tool_result"]
    assert "genmaicha" in results[-1]["content"] and "     1\tMy favourite tea is genmaicha." in results[-1]["content"]
    other = memory("bob", "s3").turn("What is my favourite tea?")
    assert "genmaicha" not in str(other.request) and other.request["messages"][-1]["content"][0]["content"].endswith(
        "0B\t/memories"
    )
