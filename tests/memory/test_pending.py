"""helpers.memory.pending and BoundedMemory's use of it: pending turns are bounded, hopeless errors are not retried
forever, a summary cut at max_tokens is retried shorter or flagged, and rebuild summarises in chunks."""

from __future__ import annotations

import json

import anthropic
import httpx2
import pytest

from helpers import prompts
from helpers.db.store import mongomock_store
from helpers.memory import BoundedMemory
from helpers.memory.importer import import_turns
from helpers.memory.pending import fold_pending, is_retryable, take_within
from helpers.memory.summary import SummaryResult
from helpers.offline import OfflineAPIError, OfflineModel, OfflineTransport, count_text_tokens
from helpers.tools.consistency import check_consistency

FILLER = "What should we do near Griffith Park on day {i}, maybe something with a view?"


class SummaryFault(httpx2.BaseTransport):
    """The offline model, except that summary calls get `status` errors or have their stop_reason forced."""

    def __init__(self, status: int | None = None, message: str = "", stop_reason: str | None = None):
        self.inner = OfflineTransport(OfflineModel())
        self.status, self.message, self.stop_reason = status, message, stop_reason
        self.summary_bodies: list[str] = []

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.read() or b"{}")
        is_summary = request.url.path.endswith("/v1/messages") and body.get("system") == prompts.SUMMARY_TASK
        if is_summary:
            self.summary_bodies.append(body["messages"][0]["content"])
            if self.status:
                kind = {404: "not_found_error", 400: "invalid_request_error", 500: "api_error"}[self.status]
                return OfflineAPIError(self.status, kind, self.message).response()
        response = self.inner.handle_request(request)
        if is_summary and self.stop_reason:
            data = json.loads(response.read())
            data["stop_reason"] = self.stop_reason
            return httpx2.Response(200, json=data)
        return response


def _client(transport) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="test", base_url="http://offline.invalid", max_retries=0, http_client=httpx2.Client(transport=transport)
    )


def _memory(client, settings, store, **kw) -> BoundedMemory:
    memory = BoundedMemory(
        client, settings, store=store, user_id="u1", session_id="s1", budget=kw.pop("budget", 60), **kw
    )
    return memory


def _messages(n: int, tokens: int = 10) -> list[dict]:
    out = []
    for i in range(n):
        out += [
            {"role": "user", "content": f"q{i}", "tokens": tokens, "seq": 2 * i + 1},
            {"role": "assistant", "content": f"a{i}", "tokens": tokens, "seq": 2 * i + 2},
        ]
    return out


def test_take_within_keeps_whole_exchanges_inside_both_bounds():
    head, tail = take_within(_messages(5), max_tokens=45, max_count=100)
    assert len(head) == 4 and head + tail == _messages(5)
    head, tail = take_within(_messages(5), max_tokens=1000, max_count=5)
    assert len(head) == 4
    head, _ = take_within(_messages(2, tokens=500), max_tokens=10, max_count=100)
    assert len(head) == 2  # one exchange always goes, even alone over the bound


@pytest.mark.parametrize(
    "status, retry",
    [(400, False), (401, False), (403, False), (404, False), (413, False), (429, True), (500, True), (529, True)],
)
def test_errors_are_classified_by_whether_a_retry_can_help(status, retry):
    request = httpx2.Request("POST", "http://x/v1/messages")
    err = anthropic.APIStatusError("x", response=httpx2.Response(status, request=request), body=None)
    assert is_retryable(err) is retry
    assert is_retryable(anthropic.APIConnectionError(request=request))


def test_fold_pending_bounds_what_it_keeps_after_a_retryable_failure():
    request = httpx2.Request("POST", "http://x/v1/messages")

    def failing(summary, messages):
        raise anthropic.InternalServerError("down", response=httpx2.Response(500, request=request), body=None)

    out = fold_pending(failing, "", 0, _messages(10), max_tokens=60, max_count=100)
    assert len(out.pending) == 6 and len(out.unsummarised) == 14 and out.error and out.warning
    assert out.pending + out.unsummarised == _messages(10)

    def ok(summary, messages):
        return SummaryResult(summary + "|" + ",".join(m["content"] for m in messages), 5, calls=1)

    out = fold_pending(ok, "", 0, _messages(10), max_tokens=60, max_count=100, max_chunks=None)
    assert out.merged == _messages(10) and out.summary.count("|") == 4 and not out.unsummarised


def test_a_summary_model_that_does_not_exist_is_not_retried_forever(settings):
    transport = SummaryFault(404, "model: claude-nonexistent")
    store = mongomock_store()
    memory = _memory(_client(transport), settings, store)
    memory.turn("My favorite color is teal.")
    for i in range(8):
        memory.turn(FILLER.format(i=i))
    state = memory.state()
    # old code: every dropped turn stays pending and every later turn resends all of them
    assert state["pending"] == 0 and state["unsummarised"] >= 6
    assert "will not be retried" in state["summary_warning"] and memory.stats["unsummarised"] >= 6
    sizes = [count_text_tokens(body) for body in transport.summary_bodies]
    assert max(sizes) < 3 * min(sizes)  # each call carries only its own dropped turns
    statuses = [e["status"] for e in store.logs_for("u1", "s1")]
    assert statuses.count("unsummarised") == state["unsummarised"]
    assert check_consistency(store, "u1", "s1", budget=60) == []
    # the setting is fixed: --rebuild folds the unsummarised turns back in, nothing was lost
    transport.status = None
    rebuilt = memory.rebuild()
    assert "teal" in rebuilt["summary"] and rebuilt["pending"] == 0
    assert [e["status"] for e in store.logs_for("u1", "s1")].count("unsummarised") == 0
    assert check_consistency(store, "u1", "s1", budget=60) == []


def test_pending_stays_within_its_bound_while_the_summary_model_is_down(settings):
    transport = SummaryFault(500, "internal error")
    store = mongomock_store()
    memory = _memory(_client(transport), settings, store)
    memory.pending_max_tokens, memory.pending_max_count = 150, 8
    memory.turn("My favorite color is teal.")
    for i in range(12):
        memory.turn(FILLER.format(i=i))
        session = store.load_session("u1", "s1")
        assert len(session["pending"]) <= 8 and sum(m["tokens"] for m in session["pending"]) <= 150
        assert check_consistency(store, "u1", "s1", budget=60) == []
    state = memory.state()
    assert state["unsummarised"] > 0 and "--rebuild" in state["summary_warning"]
    transport.status = None  # the model is back: each turn merges one bounded chunk of what is pending
    memory.turn("Any taco places nearby?")
    state = memory.state()
    assert state["pending"] <= 2 and "teal" in state["summary"]  # the oldest were kept pending, not given up
    assert check_consistency(store, "u1", "s1", budget=60) == []


def test_summary_cut_at_max_tokens_is_retried_shorter_then_flagged(settings):
    transport = SummaryFault(stop_reason="max_tokens")
    store = mongomock_store()
    memory = _memory(_client(transport), settings, store, budget=80)
    memory.check_retention = False
    turns = []
    for i in range(12):
        turns += [{"role": "user", "content": FILLER.format(i=i)}, {"role": "assistant", "content": "Try the trail."}]
    import_turns(memory, turns)
    transport.summary_bodies.clear()
    state = memory.rebuild()
    # rebuild halves its input until one exchange per call, then keeps the summary but says it was cut
    assert len(transport.summary_bodies) > 1
    assert transport.summary_bodies[-1].count("User:") == 1
    assert "max_tokens" in state["summary_warning"]


def test_rebuild_never_sends_the_whole_transcript_in_one_summary_call(settings):
    transport = SummaryFault()
    store = mongomock_store()
    memory = _memory(_client(transport), settings, store, budget=80)
    memory.pending_max_tokens = 120
    turns = [
        {"role": "user", "content": "My name is Maya and I live in Portland."},
        {"role": "assistant", "content": "Nice to meet you, Maya."},
    ]
    for i in range(20):
        turns += [{"role": "user", "content": FILLER.format(i=i)}, {"role": "assistant", "content": "Try the trail."}]
    import_turns(memory, turns)
    transport.summary_bodies.clear()
    state = memory.rebuild()
    chunks = [body.split("<new_turns>")[1] for body in transport.summary_bodies if "<must_keep>" not in body]
    assert len(chunks) >= 3
    assert all(count_text_tokens(chunk) <= 180 for chunk in chunks)  # 120 tokens of turns plus the labels
    assert "Portland" in state["summary"] and state["summary_covers"]["count"] + len(state["window"]) == 42
    assert check_consistency(store, "u1", "s1", budget=80) == []
