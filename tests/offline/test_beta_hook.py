"""Beta features offline: the memory tool, context editing and compaction are validated by the contract and
accepted; their behaviour plugs in as a `Behaviour` (helpers.offline.beta), driven by the SDK's own tool_runner.
These tests replace the default behaviours (helpers.offline.default_behaviours) with toy ones to test the hook."""

from __future__ import annotations

import anthropic
import pytest
from anthropic.lib.tools import BetaAbstractMemoryTool

from helpers.config import load_settings
from helpers.llm import get_client, offline_transport
from helpers.offline import Behaviour, Reply
from helpers.offline.beta import CLEAR_TOOL_USES, MEMORY

MODEL = "claude-haiku-4-5"
CM = "context-management-2025-06-27"


class DictMemory(BetaAbstractMemoryTool):
    """The smallest memory backend: files in a dict (the series' MongoDB backend is another helper's work)."""

    def __init__(self):
        super().__init__()
        self.files: dict[str, str] = {"/memories/home.md": "Lives in Lisbon."}

    def view(self, command):
        return "\n".join(["Directory /memories:", *sorted(self.files)])

    def create(self, command):
        self.files[command.path] = command.file_text
        return f"File created successfully at: {command.path}"

    def str_replace(self, command):
        raise NotImplementedError

    def insert(self, command):
        raise NotImplementedError

    def delete(self, command):
        raise NotImplementedError

    def rename(self, command):
        raise NotImplementedError


class LookFirst(Behaviour):
    """A toy memory policy: view the directory first, then answer with what the tool said."""

    feature = MEMORY

    def respond(self, body: dict, default: Reply) -> Reply:
        last = body["messages"][-1]["content"]
        results = (
            [b for b in last if isinstance(b, dict) and b.get("type") == "tool_result"]
            if isinstance(last, list)
            else []
        )
        if not results:
            return Reply(
                [
                    {
                        "type": "tool_use",
                        "id": "toolu_look_1",
                        "name": "memory",
                        "input": {"command": "view", "path": "/memories"},
                    }
                ],
                "tool_use",
            )
        seen = results[0]["content"] if isinstance(results[0]["content"], str) else results[0]["content"][0]["text"]
        return Reply([{"type": "text", "text": f"I looked: {seen.splitlines()[0]}"}])


class ClearOld(Behaviour):
    """A toy context editor: drops every tool result but the last, and says so in `context_management`."""

    feature = CLEAR_TOOL_USES

    def prepare(self, body: dict) -> dict:
        msgs = [dict(m) for m in body["messages"]]
        results = [
            i
            for i, m in enumerate(msgs)
            if isinstance(m["content"], list) and any(b.get("type") == "tool_result" for b in m["content"])
        ]
        for i in results[:-1]:
            msgs[i]["content"] = [
                dict(b, content="[cleared]") if b.get("type") == "tool_result" else b for b in msgs[i]["content"]
            ]
        return {**body, "messages": msgs}

    def respond(self, body: dict, default: Reply) -> Reply:
        default.extra["context_management"] = {
            "applied_edits": [{"type": "clear_tool_uses_20250919", "cleared_tool_uses": 1, "cleared_input_tokens": 10}]
        }
        return default


def client_with(*behaviours):
    """An offline client with exactly these behaviours (not the defaults every offline client has)."""
    client = get_client(load_settings({}), max_retries=0)
    offline_transport(client).model.behaviours[:] = behaviours
    return client


def test_without_a_behaviour_a_memory_tool_request_gets_a_plain_reply():
    client = client_with()
    runner = client.beta.messages.tool_runner(
        model=MODEL,
        max_tokens=200,
        tools=[DictMemory()],
        messages=[{"role": "user", "content": "I live in Lisbon."}],
        betas=[CM],
    )
    replies = list(runner)
    assert len(replies) == 1 and replies[0].content[0].type == "text" and replies[0].stop_reason == "end_turn"


def test_a_memory_behaviour_drives_the_sdk_tool_runner():
    client = client_with(LookFirst())
    runner = client.beta.messages.tool_runner(
        model=MODEL,
        max_tokens=200,
        tools=[DictMemory()],
        messages=[{"role": "user", "content": "What do you remember?"}],
        betas=[CM],
    )
    replies = list(runner)
    assert [r.stop_reason for r in replies] == ["tool_use", "end_turn"]
    assert replies[0].content[0].input == {"command": "view", "path": "/memories"}
    assert replies[1].content[0].text == "I looked: Directory /memories:"
    sent = [body for path, body in offline_transport(client).requests]
    assert sent[1]["messages"][-1]["content"][0]["type"] == "tool_result"  # the runner sent the view result back


def test_a_context_editing_behaviour_changes_what_is_counted_and_reports_it():
    use = lambda n: {"type": "tool_use", "id": f"toolu_{n}", "name": "get_weather", "input": {"city": "Oslo"}}  # noqa: E731
    result = lambda n: {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": "rain " * 200}  # noqa: E731
    tool = {"name": "get_weather", "input_schema": {"type": "object"}}
    request = dict(
        model=MODEL,
        max_tokens=50,
        tools=[tool],
        betas=[CM],
        messages=[
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": [use(1)]},
            {"role": "user", "content": [result(1)]},
            {"role": "assistant", "content": [use(2)]},
            {"role": "user", "content": [result(2)]},
        ],
        context_management={"edits": [{"type": "clear_tool_uses_20250919"}]},
    )
    plain, editing = client_with(), client_with(ClearOld())
    before = plain.beta.messages.count_tokens(**{k: v for k, v in request.items() if k != "max_tokens"})
    after = editing.beta.messages.count_tokens(**{k: v for k, v in request.items() if k != "max_tokens"})
    assert after.input_tokens < before.input_tokens
    reply = editing.beta.messages.create(**request)
    assert reply.usage.input_tokens == after.input_tokens
    assert reply.context_management.applied_edits[0].type == "clear_tool_uses_20250919"


def test_beta_requests_are_checked_like_the_api():
    client = client_with()
    with pytest.raises(anthropic.BadRequestError, match="requires the beta header"):
        client.beta.messages.create(
            model=MODEL,
            max_tokens=20,
            messages=[{"role": "user", "content": "hi"}],
            betas=["compact-2026-01-12"],
            context_management={"edits": [{"type": "clear_tool_uses_20250919"}]},
        )
    with pytest.raises(anthropic.BadRequestError, match="context_management: Extra inputs"):
        client.beta.messages.create(
            model=MODEL,
            max_tokens=20,
            messages=[{"role": "user", "content": "hi"}],
            context_management={"edits": [{"type": "clear_tool_uses_20250919"}]},
        )
    ok = client.beta.messages.create(
        model="claude-opus-4-6",
        max_tokens=20,
        betas=["compact-2026-01-12"],
        messages=[
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "compaction", "content": "The user said hi."}]},
            {"role": "user", "content": "and?"},
        ],
        context_management={"edits": [{"type": "compact_20260112"}]},
    )
    assert ok.content[-1].type == "text"
