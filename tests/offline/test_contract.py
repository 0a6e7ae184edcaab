"""The Messages API's contract, offline: every case of contract_cases.py comes out with the API's status, through the
real SDK, each citing the rule it tests. Its live twin, test_contract_live.py, sends the same cases to the API."""

from __future__ import annotations

import json

import anthropic
import pytest
from contract_cases import cases, send

from helpers.config import load_settings
from helpers.llm import get_client, offline_transport
from helpers.offline.contract import RULES

CASES = cases()


@pytest.fixture(scope="module")
def client():
    return get_client(load_settings({}), max_retries=0)


def test_the_suite_is_large_and_every_case_cites_its_rule():
    assert len(CASES) >= 60
    assert len({name for name, *_ in CASES}) == len(CASES)
    for name, status, source, _ in CASES:
        assert source.startswith(("https://platform.claude.com/docs/", "observed: '")), name
        assert status in (200, 400, 404, 413), name


@pytest.mark.parametrize("name,status,source,request_", CASES, ids=[c[0] for c in CASES])
def test_offline_answers_like_the_api(client, name, status, source, request_):
    assert send(client, request_) == status, f"{name}: expected {status} ({source})"


def test_every_rule_of_the_table_names_its_source_and_says_what_it_checks():
    assert len(RULES) >= 30 and len({r.name for r in RULES}) == len(RULES)
    for rule in RULES:
        assert rule.source.startswith(("https://platform.claude.com/docs/", "observed: '")), rule.name
        assert rule.says, f"{rule.name}: its check has no docstring"


def test_refusals_carry_the_apis_error_shape(client):
    with pytest.raises(anthropic.NotFoundError) as info:
        client.messages.create(model="claude-imaginary-9", max_tokens=5, messages=[{"role": "user", "content": "x"}])
    assert info.value.body["type"] == "error" and info.value.body["request_id"].startswith("req_")
    assert info.value.body["error"] == {"type": "not_found_error", "message": "model: claude-imaginary-9"}
    assert info.value.request_id == info.value.body["request_id"]
    with pytest.raises(anthropic.BadRequestError) as info:
        client.messages.create(
            model="claude-haiku-4-5", max_tokens=5, messages=[{"role": "user", "content": "x"}], extra_body={"foo": 1}
        )
    assert info.value.body["error"] == {
        "type": "invalid_request_error",
        "message": "foo: Extra inputs are not permitted",
    }


@pytest.mark.parametrize(
    "content",
    [[{"type": "text", "text": 123}], 123, ["hi"], [{"type": "text"}], [None], [{"type": "image", "source": "x"}]],
)
def test_a_malformed_body_is_a_400_never_a_crash_the_sdk_retries(content):
    retrying = get_client(load_settings({}), max_retries=2)
    seen = offline_transport(retrying).requests
    with pytest.raises(anthropic.BadRequestError):
        retrying.messages.create(
            model="claude-haiku-4-5", max_tokens=5, messages=[{"role": "user", "content": content}]
        )
    assert len(seen) == 1  # refused once, not retried as a connection error would be


def test_malformed_json_and_a_non_object_body_are_400s(client):
    import httpx2

    for raw in (b"{not json", b"[1, 2]", json.dumps("x").encode()):
        with pytest.raises(anthropic.BadRequestError):
            client.post(
                "/v1/messages",
                cast_to=httpx2.Response,
                content=raw,
                options={"max_retries": 0, "headers": {"content-type": "application/json"}},
            )
