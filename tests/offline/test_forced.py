"""Issue 40, items 1-3: forced tool use, stop sequences and structured outputs as the API does them
(helpers.offline.forced), through the real SDK client, in `create` and in `messages.stream()`."""

from __future__ import annotations

import json

import jsonschema
import pytest

from helpers.config import load_settings
from helpers.llm import get_client
from helpers.offline.forced import cut_at_stop, fill

MODEL = "claude-haiku-4-5"
WEATHER = {
    "name": "record_weather",
    "description": "Record today's weather for a city",
    "input_schema": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "the city"},
            "temperature_c": {"type": "number", "description": "temperature in degrees"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city", "temperature_c", "unit"],
    },
}
BOOKING = {
    "name": "book_table",
    "description": "Book a restaurant table",
    "strict": True,
    "input_schema": {
        "type": "object",
        "properties": {"party_size": {"type": "integer"}, "time": {"type": "string"}},
        "required": ["party_size", "time"],
        "additionalProperties": False,
    },
}
ASK = [{"role": "user", "content": "It's 21 degrees in Portland today. Could you book a table at 7pm?"}]


@pytest.fixture(scope="module")
def client():
    return get_client(load_settings({}))


def tool_uses(message):
    return [b for b in message.content if b.type == "tool_use"]


@pytest.mark.parametrize(
    "choice",
    [
        {"type": "tool", "name": "record_weather"},
        {"type": "tool", "name": "record_weather", "disable_parallel_tool_use": True},
        {"type": "any", "disable_parallel_tool_use": True},
    ],
)
def test_a_forced_tool_is_called_once_with_a_valid_input_from_the_conversation(client, choice):
    reply = client.messages.create(
        model=MODEL, max_tokens=300, messages=ASK, tools=[WEATHER, BOOKING], tool_choice=choice
    )
    calls = tool_uses(reply)
    assert reply.stop_reason == "tool_use" and len(calls) == 1 and len(reply.content) == 1
    tool = {"record_weather": WEATHER, "book_table": BOOKING}[calls[0].name]
    jsonschema.validate(calls[0].input, tool["input_schema"])
    if choice["type"] == "tool":
        assert calls[0].name == "record_weather"
        assert calls[0].input == {"city": "Portland", "temperature_c": 21, "unit": "celsius"}


def test_any_picks_the_tool_the_message_is_about_and_strict_schemas_hold(client):
    ask = [{"role": "user", "content": "Please reserve a restaurant table for us at 7pm."}]
    reply = client.messages.create(
        model=MODEL, max_tokens=300, messages=ask, tools=[WEATHER, BOOKING], tool_choice={"type": "any"}
    )
    (call,) = tool_uses(reply)
    assert call.name == "book_table" and call.input["time"] == "7pm"
    jsonschema.validate(call.input, BOOKING["input_schema"])  # strict: no extra key, right types
    assert set(call.input) == {"party_size", "time"} and isinstance(call.input["party_size"], int)


def test_a_forced_tool_streams_as_input_json_deltas(client):
    kwargs = dict(model=MODEL, max_tokens=300, messages=ASK, tools=[WEATHER], tool_choice={"type": "any"})
    made = client.messages.create(**kwargs)
    with client.messages.stream(**kwargs) as stream:
        deltas = [e.delta.partial_json for e in stream if e.type == "content_block_delta"]
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use" and json.loads("".join(deltas)) == tool_uses(made)[0].input
    assert tool_uses(final)[0].input == tool_uses(made)[0].input


def test_auto_tool_choice_still_answers_in_text(client):
    reply = client.messages.create(model=MODEL, max_tokens=300, messages=ASK, tools=[WEATHER])
    assert reply.stop_reason == "end_turn" and reply.content[0].type == "text"


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"n": {"type": "integer", "minimum": 3, "maximum": 9}}, "required": ["n"]},
        {"type": "array", "items": {"type": "string", "minLength": 2}, "minItems": 2},
        {
            "type": "object",
            "$defs": {"item": {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]}},
            "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/item"}}, "gift": {"type": "boolean"}},
            "required": ["items", "gift"],
            "additionalProperties": False,
        },
        {"anyOf": [{"type": "null"}, {"type": "number", "exclusiveMinimum": 0}]},
        {"type": "object", "properties": {"when": {"type": "string", "format": "date"}}, "required": ["when"]},
        {"type": "object", "properties": {"kind": {"const": "note"}, "level": {"enum": ["low", "high"]}}},
    ],
)
def test_fill_satisfies_every_schema_kind_with_or_without_a_conversation(schema):
    for lines in ([], ["My name is Maya and I live in Portland.", "I need 4 tickets at 7pm."]):
        jsonschema.validate(fill(schema, lines), schema)


def test_stop_sequences_cut_the_reply_in_create_and_stream(client):
    ask = [{"role": "user", "content": "My name is Maya and I live in Portland. Where do I live?"}]
    kwargs = dict(model=MODEL, max_tokens=300, messages=ask, stop_sequences=["nowhere", "Portland"])
    whole = client.messages.create(model=MODEL, max_tokens=300, messages=ask)
    assert "Portland" in whole.content[0].text and whole.stop_sequence is None
    made = client.messages.create(**kwargs)
    assert made.stop_reason == "stop_sequence" and made.stop_sequence == "Portland"
    assert "Portland" not in made.content[0].text and whole.content[0].text.startswith(made.content[0].text)
    with client.messages.stream(**kwargs) as stream:
        final = stream.get_final_message()
    assert (final.stop_reason, final.stop_sequence, final.content[0].text) == (
        "stop_sequence",
        "Portland",
        made.content[0].text,
    )
    missed = client.messages.create(model=MODEL, max_tokens=300, messages=ask, stop_sequences=["zebra"])
    assert missed.stop_reason == "end_turn" and missed.stop_sequence is None


def test_a_reply_that_fills_the_context_window_stops_there_in_create_and_stream():
    """Input plus max_tokens past the window is not refused (no model the API serves does): the reply stops where
    the window is full, stop_reason model_context_window_exceeded; with room left it ends as it would."""
    small = get_client(load_settings({}), context_window=400, reply_tokens=200)
    ask = [{"role": "user", "content": "word " * 300 + "what do you make of that?"}]
    made = small.messages.create(model=MODEL, max_tokens=1000, messages=ask)
    assert made.stop_reason == "model_context_window_exceeded" and made.stop_details is None
    assert made.usage.input_tokens + made.usage.output_tokens == 400 and made.usage.output_tokens < 200
    with small.messages.stream(model=MODEL, max_tokens=1000, messages=ask) as stream:
        final = stream.get_final_message()
    assert (final.stop_reason, final.content[0].text) == (made.stop_reason, made.content[0].text)
    roomy = get_client(load_settings({}), reply_tokens=200).messages.create(model=MODEL, max_tokens=1000, messages=ask)
    assert roomy.stop_reason == "end_turn" and roomy.usage.output_tokens == 200
    assert roomy.content[0].text.startswith(made.content[0].text)


def test_the_first_stop_sequence_in_the_text_wins():
    assert cut_at_stop("one two three", ["three", "two"]) == ("one ", "two")
    assert cut_at_stop("one two", []) == ("one two", None)


def test_structured_output_is_json_valid_against_its_schema(client):
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "the user's name"},
            "city": {"type": "string"},
            "age": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["name", "city", "age", "tags"],
        "additionalProperties": False,
    }
    ask = [{"role": "user", "content": "My name is Maya, I'm 34 and I live in Portland. Extract my details."}]
    reply = client.messages.create(
        model=MODEL, max_tokens=300, messages=ask, output_config={"format": {"type": "json_schema", "schema": schema}}
    )
    data = json.loads(reply.content[0].text)
    jsonschema.validate(data, schema)
    assert (data["name"], data["city"], data["age"]) == ("Maya", "Portland", 34)
    with client.messages.stream(
        model=MODEL, max_tokens=300, messages=ask, output_config={"format": {"type": "json_schema", "schema": schema}}
    ) as stream:
        assert json.loads(stream.get_final_message().content[0].text) == data


LOCKER = [
    {"role": "user", "content": "My gym locker combination is 4172."},
    {"role": "assistant", "content": "Noted."},
    {"role": "user", "content": "What's my locker code?"},
]


@pytest.mark.parametrize(
    "model, thinking, shown",
    [
        ("claude-sonnet-4-6", {"type": "adaptive"}, True),  # "summarized" is the default up to the 4.6 models
        ("claude-opus-4-7", {"type": "adaptive"}, False),  # "omitted" is the default from Opus 4.7 on
        ("claude-opus-4-7", {"type": "adaptive", "display": "summarized"}, True),
        ("claude-sonnet-4-6", {"type": "adaptive", "display": "omitted"}, False),
        ("claude-haiku-4-5", {"type": "enabled", "budget_tokens": 1024}, True),
    ],
)
def test_thinking_is_an_honest_summary_where_summarized_and_empty_where_omitted(client, model, thinking, shown):
    reply = client.messages.create(model=model, max_tokens=2000, messages=LOCKER, thinking=thinking)
    block, text = reply.content[0], reply.content[1]
    assert block.type == "thinking" and block.signature and "4172" in text.text
    if shown:
        assert "offline stand-in" in block.thinking and "not a real model" in block.thinking
        assert '"My gym locker combination is 4172."' in block.thinking  # what it looked up
    else:
        assert block.thinking == ""
    # the signed block goes back in the next request, as the API's does
    follow = [*LOCKER, {"role": "assistant", "content": [b.model_dump() for b in reply.content]}]
    follow.append({"role": "user", "content": "Thanks!"})
    assert client.messages.create(model=model, max_tokens=2000, messages=follow, thinking=thinking).content


def test_thinking_streams_as_thinking_deltas_then_one_signature_delta(client):
    kwargs = dict(model="claude-sonnet-4-6", max_tokens=2000, messages=LOCKER, thinking={"type": "adaptive"})
    made = client.messages.create(**kwargs)
    with client.messages.stream(**kwargs) as stream:
        deltas = [e.delta for e in stream if e.type == "content_block_delta" and e.index == 0]
        final = stream.get_final_message()
    kinds = [d.type for d in deltas]
    assert kinds[-1] == "signature_delta" and kinds.count("signature_delta") == 1 and len(kinds) > 2
    assert set(kinds[:-1]) == {"thinking_delta"}
    assert "".join(d.thinking for d in deltas[:-1]) == made.content[0].thinking == final.content[0].thinking


def test_the_reply_carries_the_fields_the_docs_promise(client):
    reply = client.messages.create(model=MODEL, max_tokens=50, messages=ASK)
    assert reply._request_id.startswith("req_offline_") and reply.usage.service_tier == "standard"
    raw = client.messages.with_raw_response.create(model=MODEL, max_tokens=50, messages=ASK)
    assert raw.headers["request-id"] == raw.parse()._request_id
    assert raw.http_response.json()["stop_details"] is None  # in the body, as the docs' example shows it
    with client.messages.stream(model=MODEL, max_tokens=50, messages=ASK) as stream:
        assert stream.get_final_message().usage.service_tier == "standard"
    plain = client.beta.messages.create(model="claude-opus-4-6", max_tokens=50, messages=ASK)
    assert plain.usage.iterations is None  # no compaction beta: no iterations
    compacting = client.beta.messages.create(
        model="claude-opus-4-6",
        max_tokens=50,
        messages=ASK,
        betas=["compact-2026-01-12"],
        context_management={"edits": [{"type": "compact_20260112"}]},
    )  # far under the trigger: nothing compacted, yet the usage lists the one sampling iteration
    (only,) = compacting.usage.iterations
    assert only.type == "message" and only.input_tokens == compacting.usage.input_tokens
    assert only.output_tokens == compacting.usage.output_tokens


def test_every_promise_of_a_reply_names_its_docs_page():
    from helpers.offline.contract import PROMISES

    assert len(PROMISES) >= 8 and len({name for name, _ in PROMISES}) == len(PROMISES)
    assert all(source.startswith("https://platform.claude.com/docs/en/") for _, source in PROMISES)
