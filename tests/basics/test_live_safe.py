"""Live-safe classroom mode (issue 22): replays stay offline with a key unless SIMULATE_LIVE=1, a per-process cap on
live calls, a clear message on 429/529, and the live-cost line every notebook prints from its offline ledger."""

from __future__ import annotations

import anthropic
import httpx2
import pytest

from helpers.config import ConfigError, describe, load_settings
from helpers.llm import (
    OFFLINE_USAGE,
    LiveCallLimit,
    LiveTransport,
    get_client,
    is_offline,
    live_calls,
    live_cost,
    offline_transport,
)
from helpers.memory import BoundedMemory, TurnError
from helpers.offline import OfflineModel, OfflineTransport
from helpers.sim.scripts import trip_script
from helpers.sim.simulate import simulation_client

DUMMY = "sk-dummy-never-sent"


class Counting(httpx2.BaseTransport):
    """Stands in for the network: counts what a live client sends, answers with the offline model or a status."""

    def __init__(self, statuses: list[int] | None = None):
        self.sent, self.statuses = 0, list(statuses or [])
        self.offline = OfflineTransport(OfflineModel(), faults="")

    def handle_request(self, request):
        self.sent += 1
        if self.statuses:
            status = self.statuses.pop(0)
            kind = "rate_limit_error" if status == 429 else "overloaded_error"
            return httpx2.Response(
                status,
                headers={"retry-after-ms": "1"},
                json={"type": "error", "error": {"type": kind, "message": kind}},
            )
        return self.offline.handle_request(request)


def _live(settings, transport, retries=0):
    http = anthropic.DefaultHttpxClient(transport=LiveTransport(settings.max_live_calls, retries, transport))
    return anthropic.Anthropic(api_key=DUMMY, max_retries=retries, http_client=http)


def _ask(client, text="hello"):
    return client.messages.create(model="claude-haiku-4-5", max_tokens=50, messages=[{"role": "user", "content": text}])


def test_settings_read_simulate_live_and_the_cap():
    s = load_settings({"ANTHROPIC_API_KEY": DUMMY})
    assert not s.simulate_live and s.max_live_calls == 300
    assert "replays offline" in describe(s)
    on = load_settings({"ANTHROPIC_API_KEY": DUMMY, "SIMULATE_LIVE": "1", "MAX_LIVE_CALLS": "40"})
    assert on.simulate_live and on.max_live_calls == 40 and "replays live too" in describe(on)
    with pytest.raises(ConfigError, match="SIMULATE_LIVE"):
        load_settings({"SIMULATE_LIVE": "maybe"})
    with pytest.raises(ConfigError, match="MAX_LIVE_CALLS"):
        load_settings({"MAX_LIVE_CALLS": "0"})


def test_replays_stay_offline_with_a_key_unless_simulate_live(monkeypatch, mock_store):
    sent = []
    monkeypatch.setattr(LiveTransport, "handle_request", lambda self, request: sent.append(request) or 1 / 0)
    keyed = load_settings({"ANTHROPIC_API_KEY": DUMMY})
    assert not is_offline(get_client(keyed))  # the chat client is live with a key
    replay = simulation_client(keyed)
    assert is_offline(replay)
    before = OFFLINE_USAGE["replay"]["calls"]
    memory = BoundedMemory(replay, keyed, store=mock_store, user_id="u", session_id="s", budget=120)
    for text in trip_script(6):
        memory.turn(text)
    assert sent == [] and OFFLINE_USAGE["replay"]["calls"] >= before + 6
    live = simulation_client(keyed.with_(simulate_live=True))
    assert not is_offline(live)
    with pytest.raises(anthropic.APIConnectionError):
        _ask(live.with_options(max_retries=0))
    assert len(sent) == 1  # SIMULATE_LIVE=1: the replay went to the (stubbed) network


def test_the_cap_stops_a_runaway_loop_with_a_clear_message():
    settings = load_settings({"ANTHROPIC_API_KEY": DUMMY, "MAX_LIVE_CALLS": str(live_calls() + 3)})
    net = Counting()
    client = _live(settings, net)
    for _ in range(3):
        _ask(client)
    with pytest.raises(LiveCallLimit, match=r"MAX_LIVE_CALLS=\d+ live API calls reached"):
        _ask(client)
    assert net.sent == 3  # the fourth never left


def test_the_cap_in_a_turn_is_a_clear_error_and_loses_nothing(mock_store):
    settings = load_settings({"ANTHROPIC_API_KEY": DUMMY, "MAX_LIVE_CALLS": str(live_calls() + 1)})
    client = _live(settings, Counting())
    memory = BoundedMemory(client, settings, store=mock_store, user_id="u", session_id="s", budget=300)
    _ask(client)  # the one call left
    with pytest.raises(TurnError, match="MAX_LIVE_CALLS") as err:
        memory.turn("My favorite color is teal.")
    assert "saved" in str(err.value)
    logs = mock_store.logs_for("u", "s")
    assert [(e["content"], e["status"]) for e in logs] == [("My favorite color is teal.", "unanswered")]


def test_429_and_529_are_retried_and_name_the_shared_key_limit(capsys):
    settings = load_settings({"ANTHROPIC_API_KEY": DUMMY})
    net = Counting(statuses=[429, 529])
    reply = _ask(_live(settings, net, retries=2))
    assert reply.content and net.sent == 3
    err = capsys.readouterr().err
    assert "rate limited (429)" in err and "overloaded (529)" in err and "shares one key" in err


def test_live_cost_reports_the_offline_ledger_by_role():
    settings = load_settings({"ANTHROPIC_API_KEY": ""})
    before = {role: dict(counter) for role, counter in OFFLINE_USAGE.items()}
    chat, replay = get_client(settings), simulation_client(settings)
    _ask(chat), _ask(replay), _ask(replay, "and again")
    chat.messages.count_tokens(model="claude-haiku-4-5", messages=[{"role": "user", "content": "hi"}])
    assert OFFLINE_USAGE["chat"]["calls"] - before["chat"].get("calls", 0) == 1
    assert OFFLINE_USAGE["chat"]["count_tokens"] - before["chat"].get("count_tokens", 0) == 1
    assert OFFLINE_USAGE["replay"]["calls"] - before["replay"].get("calls", 0) == 2
    sent = [body for path, body in offline_transport(chat).requests if path.endswith("/v1/messages")]
    assert len(sent) == 1
    line = live_cost(settings)
    assert f"{OFFLINE_USAGE['chat']['calls']:,} model calls" in line.splitlines()[0]
    assert "SIMULATE_LIVE=1" in line.splitlines()[1] and "$" in line and "claude-haiku-4-5" in line
