"""helpers.llm.get_client: a real anthropic.Anthropic, live or offline."""

import anthropic
import httpx2
import pytest

from helpers.config import load_settings
from helpers.llm import get_client, is_offline, mode_line, offline_transport


def test_offline_client_is_the_real_sdk_class():
    client = get_client(load_settings({}))
    assert type(client) is anthropic.Anthropic
    assert is_offline(client)
    assert isinstance(client._client, httpx2.Client)
    assert "offline" in mode_line(client)


def test_live_client_when_key_is_set():
    client = get_client(load_settings({"ANTHROPIC_API_KEY": "sk-ant-test"}))
    assert type(client) is anthropic.Anthropic
    assert not is_offline(client)
    assert client.api_key == "sk-ant-test"
    assert "live" in mode_line(client)


def test_offline_replies_are_sdk_types_and_never_touch_the_network(monkeypatch):
    def no_network(*a, **k):
        raise AssertionError("network used")

    monkeypatch.setattr(httpx2.HTTPTransport, "handle_request", no_network)
    client = get_client(load_settings({}))
    message = client.messages.create(
        model="claude-haiku-4-5", max_tokens=50, messages=[{"role": "user", "content": "hello"}]
    )
    assert isinstance(message, anthropic.types.Message)
    assert message.content[0].type == "text" and message.usage.input_tokens > 0
    count = client.messages.count_tokens(model="claude-haiku-4-5", messages=[{"role": "user", "content": "hello"}])
    assert isinstance(count, anthropic.types.MessageTokensCount)


def test_context_window_and_faults_are_configurable(monkeypatch):
    client = get_client(load_settings({}), context_window=20)
    assert offline_transport(client).model.context_window == 20
    monkeypatch.setenv("GTE_OFFLINE_FAULTS", "529")
    client = get_client(load_settings({}), max_retries=0)
    with pytest.raises(anthropic.InternalServerError):
        client.messages.create(model="claude-haiku-4-5", max_tokens=5, messages=[{"role": "user", "content": "hi"}])


@pytest.mark.live
def test_live_api_round_trip():
    import os

    if not os.environ.get("ANTHROPIC_API_KEY"):
        pytest.skip("needs ANTHROPIC_API_KEY (live test)")
    client = get_client()
    message = client.messages.create(
        model=load_settings().chat_model, max_tokens=20, messages=[{"role": "user", "content": "Say hi."}]
    )
    assert message.usage.input_tokens > 0
