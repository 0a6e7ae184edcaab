"""The contract suite's live twin: the same requests as test_contract.py, sent to the Messages API itself; the
statuses must be those the offline model gives. A drift in the API (a model retired, a rule added or dropped) shows
up here as a failing case, not as a learner's surprise. Runs only with GTE_LIVE_TESTS=1 and ANTHROPIC_API_KEY.

Cheap by construction: every case is a refusal (billed nothing) or a request with max_tokens 16 or less, most on
claude-haiku-4-5; count_tokens is free."""

from __future__ import annotations

import os

import anthropic
import pytest
from contract_cases import cases, send

from helpers.config import load_settings
from helpers.llm import get_client

pytestmark = pytest.mark.live
CASES = cases()


@pytest.fixture(scope="module")
def clients():
    if os.environ.get("GTE_LIVE_TESTS") != "1" or not os.environ.get("ANTHROPIC_API_KEY"):
        pytest.skip("live contract twin: needs GTE_LIVE_TESTS=1 and ANTHROPIC_API_KEY")
    live = anthropic.Anthropic(max_retries=2)
    offline = get_client(load_settings({}), max_retries=0)
    return live, offline


@pytest.mark.parametrize("name,status,source,request_", CASES, ids=[c[0] for c in CASES])
def test_the_api_answers_as_the_offline_model_does(clients, name, status, source, request_):
    live, offline = clients
    got = send(live, request_)
    assert got == send(offline, request_) == status, (
        f"{name}: the API answered {got}, the contract says {status} ({source})"
    )
