"""Context editing offline (`clear_tool_uses_20250919`), through the real SDK, as the docs describe it:
https://platform.claude.com/docs/en/build-with-claude/context-editing ("Tool result clearing": the oldest tool
results are replaced by placeholder text once the trigger is exceeded, the newest `keep` uses stay, `exclude_tools`
are never cleared, `clear_at_least` or nothing; the response's `context_management.applied_edits`; "Token counting":
count_tokens returns the edited count and `context_management.original_input_tokens`)."""

from __future__ import annotations

import os

import anthropic
import pytest

from helpers.config import load_settings
from helpers.llm import get_client, offline_transport
from helpers.offline.context_editing import PLACEHOLDER, ClearToolUses

MODEL = "claude-haiku-4-5"
CM = "context-management-2025-06-27"
TOOLS = [
    {"name": "get_weather", "input_schema": {"type": "object"}},
    {"name": "memory_lookup", "input_schema": {"type": "object"}},
]


def history(n: int, name: str = "get_weather") -> list[dict]:
    """A user question then n tool uses, each with a long result."""
    messages = [{"role": "user", "content": "What is the weather in every city?"}]
    for k in range(n):
        tool = name if k else "memory_lookup"  # the oldest use is another tool
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"toolu_{k}", "name": tool, "input": {"city": f"c{k}"}}],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": f"rain in c{k} " * 150}],
            }
        )
    return messages


def ask(edit: dict, n: int = 5, **extra):
    client = get_client(load_settings({}), max_retries=0)
    request = dict(model=MODEL, tools=TOOLS, betas=[CM], messages=history(n), context_management={"edits": [edit]})
    counted = client.beta.messages.count_tokens(**request)
    reply = client.beta.messages.create(max_tokens=100, **request, **extra)
    return client, counted, reply


def test_below_the_trigger_nothing_is_cleared_and_the_response_says_so():
    client, counted, reply = ask({"type": "clear_tool_uses_20250919"})  # default trigger: 100,000 input tokens
    assert reply.context_management.applied_edits == []
    assert counted.input_tokens == counted.context_management.original_input_tokens == reply.usage.input_tokens


def test_past_the_trigger_the_oldest_results_are_cleared_and_the_newest_kept():
    edit = {
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "tool_uses", "value": 3},
        "keep": {"type": "tool_uses", "value": 2},
    }
    client, counted, reply = ask(edit)
    [applied] = reply.context_management.applied_edits
    assert applied.type == "clear_tool_uses_20250919" and applied.cleared_tool_uses == 3  # 5 uses, keep 2
    original = counted.context_management.original_input_tokens
    assert applied.cleared_input_tokens == original - counted.input_tokens > 0
    assert reply.usage.input_tokens == counted.input_tokens  # usage counts what the model read
    sent = offline_transport(client).requests[-1][1]
    assert PLACEHOLDER not in str(sent)  # server-side: the client's history is sent whole, the edit is not visible


def test_the_model_reads_placeholders_for_the_cleared_results_and_inputs():
    edit = {
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "tool_uses", "value": 3},
        "keep": {"type": "tool_uses", "value": 2},
        "clear_tool_inputs": True,
    }
    body = {
        "model": MODEL,
        "max_tokens": 10,
        "tools": TOOLS,
        "messages": history(5),
        "context_management": {"edits": [edit]},
    }
    read = ClearToolUses().prepare(body)["messages"]
    results = [b["content"] for m in read[2::2] for b in m["content"]]
    inputs = [b["input"] for m in read[1::2] for b in m["content"]]
    assert results[:3] == [PLACEHOLDER] * 3 and all(r.startswith("rain") for r in results[3:])
    assert inputs[:3] == [{}] * 3 and inputs[3:] == [{"city": "c3"}, {"city": "c4"}]
    assert body["messages"] == history(5)  # the request itself is not changed


def test_exclude_tools_and_clear_at_least():
    keep_memory = {
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "tool_uses", "value": 1},
        "keep": {"type": "tool_uses", "value": 0},
        "exclude_tools": ["memory_lookup"],
    }
    _, _, reply = ask(keep_memory)
    assert reply.context_management.applied_edits[0].cleared_tool_uses == 4  # every use but the excluded tool's
    too_little = {**keep_memory, "clear_at_least": {"type": "input_tokens", "value": 1_000_000}}
    _, counted, reply = ask(too_little)
    assert reply.context_management.applied_edits == []  # would free less than clear_at_least: nothing cleared
    assert counted.input_tokens == counted.context_management.original_input_tokens


def test_what_the_api_refuses():
    client = get_client(load_settings({}), max_retries=0)
    bad = {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 0}}
    with pytest.raises(anthropic.BadRequestError, match="greater than or equal to 1"):
        client.beta.messages.create(
            model=MODEL,
            max_tokens=20,
            betas=[CM],
            tools=TOOLS,
            messages=history(1),
            context_management={"edits": [bad]},
        )
    with pytest.raises(anthropic.BadRequestError, match="context-management-2025-06-27"):
        client.beta.messages.create(
            model=MODEL,
            max_tokens=20,
            betas=["compact-2026-01-12"],
            tools=TOOLS,
            messages=history(1),
            context_management={"edits": [{"type": "clear_tool_uses_20250919"}]},
        )


def test_a_stream_reports_the_applied_edits_in_message_delta():
    client = get_client(load_settings({}), max_retries=0)
    edit = {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 3}}
    with client.beta.messages.stream(
        model=MODEL,
        max_tokens=50,
        tools=TOOLS,
        betas=[CM],
        messages=history(5),
        context_management={"edits": [edit]},
    ) as stream:
        final = stream.get_final_message()
    assert final.context_management.applied_edits[0].cleared_tool_uses == 2  # 5 uses, default keep 3


@pytest.mark.live
@pytest.mark.skipif(not os.environ.get("ANTHROPIC_API_KEY"), reason="needs ANTHROPIC_API_KEY (live test)")
def test_live_the_api_clears_the_same_tool_uses():
    """The live twin (GTE_LIVE_TESTS=1 with a key): the API applies the same edit to the same request."""
    client = get_client(load_settings())
    edit = {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 3}, "keep": {"type": "tool_uses", "value": 2}}  # fmt: skip
    request = dict(model=MODEL, tools=TOOLS, betas=[CM], messages=history(5), context_management={"edits": [edit]})
    counted = client.beta.messages.count_tokens(**request)
    reply = client.beta.messages.create(max_tokens=100, **request)
    [applied] = reply.context_management.applied_edits
    assert applied.cleared_tool_uses == 3 and applied.cleared_input_tokens > 0
    assert counted.input_tokens < counted.context_management.original_input_tokens
