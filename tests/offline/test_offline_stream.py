"""Streaming offline, through the real SDK: `stream=True`, `messages.stream()` and the beta twins produce the
documented server-sent events (https://platform.claude.com/docs/en/build-with-claude/streaming)."""

from __future__ import annotations

import json

import anthropic
import pytest

from helpers import prompts
from helpers.config import load_settings
from helpers.llm import get_client, offline_transport, stream_text
from helpers.offline.stream import sse_events

MODEL = "claude-haiku-4-5"
HI = [{"role": "user", "content": "My name is Maya and I live in Lisbon. Where do I live?"}]
TOOL = {
    "name": "get_weather",
    "description": "Weather for a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


@pytest.fixture
def client():
    return get_client(load_settings({}), max_retries=0)


def test_message_stream_yields_text_and_a_final_message_with_usage(client):
    with client.messages.stream(model=MODEL, max_tokens=200, messages=HI) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert len(pieces) > 1 and "".join(pieces) == final.content[0].text
    assert "Lisbon" in final.content[0].text
    assert final.usage.input_tokens > 0 and final.usage.output_tokens > 0 and final.stop_reason == "end_turn"
    same = client.messages.create(model=MODEL, max_tokens=200, messages=HI)
    assert same.content[0].text == final.content[0].text and same.usage.input_tokens == final.usage.input_tokens


def test_raw_stream_is_the_documented_event_sequence(client):
    events = list(client.messages.create(model=MODEL, max_tokens=200, messages=HI, stream=True))
    kinds = [e.type for e in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert kinds[1:4] == ["content_block_start", "content_block_delta", "content_block_delta"]
    assert "content_block_stop" in kinds and events[0].message.usage.input_tokens > 0
    assert events[-2].delta.stop_reason == "end_turn" and events[-2].usage.output_tokens > 0


def test_tool_use_streams_its_input_as_json_deltas(client):
    tool = prompts.EXTRACTION_TOOL
    with client.messages.stream(
        model=MODEL,
        max_tokens=400,
        system=prompts.EXTRACTION_TASK,
        tools=[tool],
        tool_choice={"type": "tool", "name": tool["name"]},
        messages=[{"role": "user", "content": "User: I live in Lisbon and I love jazz.\nAssistant: Noted."}],
    ) as stream:
        events = list(stream)
        final = stream.get_final_message()
    pieces = [
        e.delta.partial_json for e in events if e.type == "content_block_delta" and e.delta.type == "input_json_delta"
    ]
    assert final.content[0].type == "tool_use" and final.stop_reason == "tool_use"
    assert len(pieces) > 1 and json.loads("".join(pieces)) == final.content[0].input
    same = client.messages.create(
        model=MODEL,
        max_tokens=400,
        system=prompts.EXTRACTION_TASK,
        tools=[tool],
        tool_choice={"type": "tool", "name": tool["name"]},
        messages=final_request_messages(),
    )
    assert same.content[0].input == final.content[0].input


def final_request_messages():
    return [{"role": "user", "content": "User: I live in Lisbon and I love jazz.\nAssistant: Noted."}]


def test_beta_stream_works_too(client):
    with client.beta.messages.stream(
        model=MODEL, max_tokens=100, messages=HI, betas=["context-management-2025-06-27"]
    ) as s:
        text = "".join(s.text_stream)
    assert "Lisbon" in text


def test_a_refused_stream_is_an_http_error_before_any_event(client):
    with pytest.raises(anthropic.BadRequestError):
        with client.messages.stream(model=MODEL, max_tokens=100, messages=[{"role": "user", "content": " "}]) as s:
            list(s.text_stream)


def test_faults_apply_to_streams_and_midstream_is_the_docs_error_event():
    overloaded = get_client(load_settings({}), max_retries=0, faults="529")
    with pytest.raises(anthropic.APIStatusError) as info:
        with overloaded.messages.stream(model=MODEL, max_tokens=50, messages=HI) as s:
            list(s.text_stream)
    assert info.value.status_code == 529
    midway = get_client(load_settings({}), max_retries=0, faults="midstream")
    with pytest.raises(anthropic.APIStatusError, match="overloaded_error"):
        with midway.messages.stream(model=MODEL, max_tokens=50, messages=HI) as s:
            list(s.text_stream)
    assert offline_transport(midway).faults.served == ["midstream"]


def test_stream_text_helper_prints_as_it_streams(client, capsys):
    final = stream_text(client, model=MODEL, max_tokens=200, messages=HI)
    out = capsys.readouterr().out
    assert out.strip() == final.content[0].text and final.usage.output_tokens > 0


def test_events_of_a_thinking_reply_carry_the_signature():
    message = {
        "id": "m",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 2},
        "content": [{"type": "thinking", "thinking": "", "signature": "s1"}, {"type": "text", "text": "Hi"}],
    }
    deltas = [d["delta"] for name, d in sse_events(message) if name == "content_block_delta"]
    assert {"type": "signature_delta", "signature": "s1"} in deltas and {"type": "text_delta", "text": "Hi"} in deltas
