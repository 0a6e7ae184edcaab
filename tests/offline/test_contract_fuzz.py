"""No malformed body reaches code that can raise: random mutations of valid requests (a value replaced by another
JSON value, a key dropped or added, anywhere in the body) are each answered with a status the API uses, never a
crash (a crash would surface as APIConnectionError and the SDK would retry it)."""

from __future__ import annotations

import copy
import json

import httpx2
import pytest
from contract_cases import cases
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.offline import OfflineModel, OfflineTransport

SEEDS = [req for name, status, _, req in cases() if status == 200 and name not in ("pdf document",)]
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 70_000) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
TRANSPORT = OfflineTransport(OfflineModel())


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*prefix, i))


@st.composite
def mutated(draw):
    request = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    body = request["body"]
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(body) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = body
        for key in path[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["replace", "drop", "add"]))
        if action == "replace":
            parent[path[-1]] = draw(JSON)
        elif action == "drop" and isinstance(parent, dict):
            parent.pop(path[-1])
        elif isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=8))] = draw(JSON)
        else:
            parent.append(draw(JSON))
    return request


def _status(request_) -> int:
    headers = {"anthropic-version": request_.get("version", "2026-10-21")}
    if request_.get("beta"):
        headers["anthropic-beta"] = ",".join(request_["beta"])
    path = "/v1/messages/count_tokens" if request_.get("endpoint") == "count_tokens" else "/v1/messages"
    raw = json.dumps(request_["body"]).encode()
    response = TRANSPORT.handle_request(
        httpx2.Request("POST", f"http://offline.invalid{path}", content=raw, headers=headers)
    )
    assert response.status_code in (200, 400, 404, 413), response.read()[:300]
    return response.status_code


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_every_mutated_body_gets_an_api_status_never_a_crash(request_):
    _status(request_)


@pytest.mark.slow
@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_many_more_mutated_bodies(request_):
    _status(request_)
