"""Issue 40's live twin: every new behaviour of the stand-in (forced tools, stop sequences, structured outputs,
thinking display, the reply's promised fields, the quoted closest line) run as the same request against the API and
against the offline model; the outcomes the docs promise must hold for both. Runs only with GTE_LIVE_TESTS=1 and
ANTHROPIC_API_KEY. Cheap: claude-haiku-4-5 (sonnet-4-6 / opus-4-7 where the rule is about them), small max_tokens."""

from __future__ import annotations

import json
import os

import anthropic
import jsonschema
import pytest

from helpers.config import load_settings
from helpers.llm import get_client

pytestmark = pytest.mark.live
HAIKU = "claude-haiku-4-5"
WEATHER = {
    "name": "record_weather",
    "description": "Record today's weather for a city",
    "strict": True,
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "temperature_c": {"type": "number"}},
        "required": ["city", "temperature_c"],
        "additionalProperties": False,
    },
}
ASK = [{"role": "user", "content": "It's 21 degrees in Portland today."}]
LOCKER = [
    {"role": "user", "content": "my gym locker combination is 4172"},
    {"role": "assistant", "content": "Noted."},
    {"role": "user", "content": "What's the combination for my gym locker?"},
]


@pytest.fixture(scope="module", params=["live", "offline"])
def client(request):
    if os.environ.get("GTE_LIVE_TESTS") != "1" or not os.environ.get("ANTHROPIC_API_KEY"):
        pytest.skip("live twin: needs GTE_LIVE_TESTS=1 and ANTHROPIC_API_KEY")
    return anthropic.Anthropic(max_retries=2) if request.param == "live" else get_client(load_settings({}))


@pytest.mark.parametrize(
    "choice", [{"type": "tool", "name": "record_weather"}, {"type": "any", "disable_parallel_tool_use": True}]
)
def test_forced_tool(client, choice):
    reply = client.messages.create(model=HAIKU, max_tokens=200, messages=ASK, tools=[WEATHER], tool_choice=choice)
    calls = [b for b in reply.content if b.type == "tool_use"]
    assert reply.stop_reason == "tool_use" and len(calls) == 1 and calls[0].name == "record_weather"
    jsonschema.validate(calls[0].input, WEATHER["input_schema"])


def test_forced_tool_streams_input_json(client):
    kwargs = dict(model=HAIKU, max_tokens=200, messages=ASK, tools=[WEATHER], tool_choice={"type": "any"})
    with client.messages.stream(**kwargs) as stream:
        pieces = [e.delta.partial_json for e in stream if e.type == "content_block_delta"]
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use" and json.loads("".join(pieces)) == final.content[-1].input


def test_stop_sequence(client):
    ask = [{"role": "user", "content": "Write the word alpha, then the word omega, then stop."}]
    for stream in (False, True):
        kwargs = dict(model=HAIKU, max_tokens=50, messages=ask, stop_sequences=["omega"])
        if stream:
            with client.messages.stream(**kwargs) as s:
                reply = s.get_final_message()
        else:
            reply = client.messages.create(**kwargs)
        if reply.stop_reason == "stop_sequence":  # a real model might never write "omega": then it must not claim it
            assert reply.stop_sequence == "omega" and "omega" not in reply.content[0].text
        else:
            assert reply.stop_sequence is None


def test_structured_output(client):
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "temperature_c": {"type": "number"}},
        "required": ["city", "temperature_c"],
        "additionalProperties": False,
    }
    reply = client.messages.create(
        model=HAIKU, max_tokens=200, messages=ASK, output_config={"format": {"type": "json_schema", "schema": schema}}
    )
    jsonschema.validate(json.loads(reply.content[0].text), schema)


@pytest.mark.parametrize(
    "model, thinking, shown",
    [
        ("claude-sonnet-4-6", {"type": "enabled", "budget_tokens": 1024}, True),
        ("claude-opus-4-7", {"type": "adaptive", "display": "omitted"}, False),
    ],
)
def test_thinking_display(client, model, thinking, shown):
    ask = [{"role": "user", "content": "Think it through: is 91 a prime number? Answer yes or no."}]
    reply = client.messages.create(model=model, max_tokens=3000, messages=ask, thinking=thinking)
    blocks = [b for b in reply.content if b.type == "thinking"]
    assert all(b.signature for b in blocks)
    if shown:
        assert blocks and blocks[0].thinking
    else:
        assert all(b.thinking == "" for b in blocks)


def test_promised_fields(client):
    reply = client.messages.create(model=HAIKU, max_tokens=16, messages=ASK)
    assert reply._request_id and reply._request_id.startswith("req_")
    assert reply.usage.service_tier in ("standard", "priority", "batch")
    raw = client.messages.with_raw_response.create(model=HAIKU, max_tokens=16, messages=ASK)
    assert raw.http_response.json().get("stop_details", "absent") is None  # the offline model sends it as null


def test_iterations_whenever_compaction_is_on(client):
    reply = client.beta.messages.create(
        model="claude-opus-4-6",
        max_tokens=16,
        messages=ASK,
        betas=["compact-2026-01-12"],
        context_management={"edits": [{"type": "compact_20260112"}]},
    )
    assert reply.usage.iterations and reply.usage.iterations[-1].type == "message"


def test_the_learners_first_chat_is_never_not_told(client):
    reply = client.messages.create(model=HAIKU, max_tokens=100, messages=LOCKER).content[0].text
    assert "4172" in reply and "haven't told" not in reply
