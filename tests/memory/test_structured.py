"""helpers.memory.structured: forced tool calls validated client-side; extraction and reconciliation use them (issue 12)."""

from __future__ import annotations

import json

import anthropic
import httpx2
import pytest

from helpers import prompts
from helpers.config import load_settings
from helpers.llm import get_client
from helpers.memory.facts import FactMemory
from helpers.memory.retention import extract_facts
from helpers.memory.structured import ToolOutputError, call_tool, schema_errors
from helpers.offline import OfflineModel, OfflineTransport

MODEL = "claude-haiku-4-5"


class Scripted(OfflineTransport):
    """The offline model, except that task requests get a fixed (bad) reply: `content` blocks as given."""

    def __init__(self, content: list[dict], stop_reason: str = "end_turn"):
        super().__init__(OfflineModel())
        self.content, self.stop_reason = content, stop_reason

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.read() or b"{}")
        system = body.get("system") or ""
        if request.url.path.endswith("/v1/messages") and system.startswith(
            (prompts.EXTRACTION_TASK[:60], prompts.RECONCILE_TASK[:60])
        ):
            return httpx2.Response(
                200,
                json={
                    "id": "msg_scripted",
                    "type": "message",
                    "role": "assistant",
                    "model": body["model"],
                    "content": self.content,
                    "stop_reason": self.stop_reason,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 5},
                },
            )
        return super().handle_request(request)


def scripted_client(content: list[dict], stop_reason: str = "end_turn") -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="offline",
        base_url="http://offline.invalid",
        max_retries=0,
        http_client=httpx2.Client(transport=Scripted(content, stop_reason)),
    )


def tool_use(name: str, data) -> list[dict]:
    return [{"type": "tool_use", "id": "toolu_1", "name": name, "input": data}]


@pytest.fixture
def client():
    return get_client(load_settings({}), max_retries=0)


# --- the offline model speaks tool use ----------------------------------------------------------


def test_offline_model_answers_a_forced_tool_with_a_tool_use_block(client):
    reply = client.messages.create(
        model=MODEL,
        max_tokens=300,
        system=prompts.EXTRACTION_TASK,
        tools=[prompts.EXTRACTION_TOOL],
        tool_choice={"type": "tool", "name": prompts.EXTRACTION_TOOL["name"]},
        messages=[{"role": "user", "content": "User: I'm vegetarian, so no meat please.\nAssistant: Noted."}],
    )
    assert reply.stop_reason == "tool_use"
    [block] = reply.content
    assert block.type == "tool_use" and block.name == "record_facts" and block.id.startswith("toolu_")
    assert block.input == {"facts": ["The user is vegetarian, so no meat."]}
    assert schema_errors(block.input, prompts.EXTRACTION_TOOL["input_schema"]) == []


def test_tool_definitions_count_as_input_tokens(client):
    messages = [{"role": "user", "content": "User: hi"}]
    plain = client.messages.count_tokens(model=MODEL, messages=messages).input_tokens
    with_tool = client.messages.count_tokens(model=MODEL, messages=messages, tools=[prompts.EXTRACTION_TOOL])
    assert with_tool.input_tokens > plain + 20


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"tool_choice": {"type": "tool", "name": "nope"}}, "nope"),
        ({"tools": [{"name": "t", "input_schema": {"type": "string"}}]}, "input_schema"),
    ],
)
def test_bad_tool_requests_are_bad_requests(client, kwargs, message):
    args = {"tools": [prompts.EXTRACTION_TOOL], **kwargs}
    with pytest.raises(anthropic.BadRequestError, match=message):
        client.messages.create(model=MODEL, max_tokens=50, messages=[{"role": "user", "content": "hi"}], **args)


# --- the schema check ---------------------------------------------------------------------------------


def test_schema_errors_name_each_problem():
    schema = prompts.RECONCILE_TOOL["input_schema"]
    assert schema_errors({"replaces": [0], "duplicates": []}, schema) == []
    assert schema_errors({"replaces": "0"}, schema) == [
        "input.duplicates: required",
        "input.replaces: expected array, got str",
    ]
    assert schema_errors({"replaces": [True, -1], "duplicates": []}, schema) == [
        "input.replaces[0]: expected an integer, got bool",
        "input.replaces[1]: -1 is below the minimum 0",
    ]


def test_call_tool_returns_validated_input(client):
    data = call_tool(
        client,
        model=MODEL,
        max_tokens=200,
        system=prompts.RECONCILE_TASK,
        tool=prompts.RECONCILE_TOOL,
        content="<new_fact>\nThe user lives in Denver.\n</new_fact>\n<older_facts>\n"
        "0. The user lives in Los Angeles.\n</older_facts>",
    )
    assert data == {"replaces": [0], "duplicates": []}


# --- extraction: invalid output is an error, not "no facts" --------------------------------------------

EXCHANGE = [
    {"role": "user", "content": "My sister Priya lives in Pasadena."},
    {"role": "assistant", "content": "Noted."},
]


def test_extract_facts_uses_the_tool(client):
    assert extract_facts(client, MODEL, EXCHANGE) == ["The user's sister Priya lives in Pasadena."]


@pytest.mark.parametrize(
    "content",
    [
        [{"type": "text", "text": "Sure! The user's sister lives in Pasadena."}],  # no tool call at all
        tool_use("record_facts", {"fact": ["The user's sister lives in Pasadena."]}),  # wrong key
        tool_use("record_facts", {"facts": "The user's sister lives in Pasadena."}),  # not a list
        tool_use("record_facts", {"facts": [42]}),  # not strings
    ],
)
def test_unusable_extraction_raises_instead_of_returning_no_facts(content):
    with pytest.raises(ToolOutputError, match="record_facts") as err:
        extract_facts(scripted_client(content), MODEL, EXCHANGE)
    assert isinstance(err.value, anthropic.APIError)  # callers that keep work pending on API errors do so here too


# --- reconciliation: unusable output is an error, never "no change" -----------------------------------


def test_unusable_reconcile_reply_raises(mock_store, settings):
    bad = scripted_client([{"type": "text", "text": "The new fact replaces fact 0."}])
    facts = FactMemory(mock_store, client=bad, settings=settings)
    with pytest.raises(ToolOutputError, match="reconcile_facts"):
        facts.reconcile("The user lives in Denver.", ["The user lives in Los Angeles."])
    out_of_range = scripted_client(tool_use("reconcile_facts", {"replaces": [7], "duplicates": []}))
    with pytest.raises(ToolOutputError, match="index 7"):
        FactMemory(mock_store, client=out_of_range, settings=settings).reconcile(
            "The user lives in Denver.", ["The user lives in Los Angeles."]
        )


def test_a_contradiction_left_unchecked_is_counted_and_flagged(mock_store, settings):
    """Both facts stay active (the newer date wins in the prompt), but the store says the check failed."""
    bad = scripted_client([{"type": "text", "text": "{not json"}])
    facts = FactMemory(mock_store, client=bad, settings=settings)
    facts.add_facts("alice", ["The user lives in Los Angeles."])
    result = facts.add_facts("alice", ["The user lives in Denver."])[0]
    assert result.reconciled is False and facts.stats["reconcile_errors"] == 1


def test_offline_reconcile_supersedes_through_the_tool(mock_store, settings, client):
    facts = FactMemory(mock_store, client=client, settings=settings)
    facts.add_facts("alice", ["The user lives in Los Angeles."])
    result = facts.add_facts("alice", ["The user lives in Denver."])[0]
    assert result.reconciled and result.replaced
    assert [h.text for h in facts.active("alice")] == ["The user lives in Denver."]
