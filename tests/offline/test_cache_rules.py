"""Prompt-caching rules of issue 30, offline, through the real SDK (https://platform.claude.com/docs/en/build-with-
claude/prompt-caching): an alias and its dated id share one cache; adding an image or changing output_config
invalidates the cached messages (system and tools stay); every model the pricing table knows has its documented
minimum; a top-level 1-hour marker over an explicit 5-minute one on the last block is the API's 400."""

from __future__ import annotations

import base64
import io

import anthropic
import pytest
from PIL import Image

from helpers.config import load_settings
from helpers.llm import get_client
from helpers.offline import SimClock, catalog
from helpers.offline.cache import min_cacheable_tokens
from helpers.pricing import PRICES

DOC = "Locker 12 holds the spare lantern and a coil of rope for the harbour crew. " * 140  # ~2.2K tokens
SONNET = "claude-sonnet-4-6"  # minimum cacheable prefix 1,024 tokens


def png() -> str:
    buf = io.BytesIO()
    Image.new("RGB", (40, 40), (0, 0, 0)).save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


@pytest.fixture
def client():
    return get_client(load_settings({}), max_retries=0, clock=SimClock())


def ask(client, model=SONNET, content=None, **extra):
    messages = [
        {
            "role": "user",
            "content": content
            or [
                {"type": "text", "text": DOC, "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "Where is the lantern?"},
            ],
        }
    ]
    return client.messages.create(
        model=model,
        max_tokens=20,
        system=[{"type": "text", "text": DOC, "cache_control": {"type": "ephemeral"}}],
        messages=messages,
        **extra,
    ).usage


def test_an_alias_and_its_dated_id_share_one_cache(client):
    doc = DOC * 2  # over haiku 4.5's 4,096-token minimum
    first = client.messages.create(
        model="claude-haiku-4-5",
        max_tokens=10,
        system=[{"type": "text", "text": doc, "cache_control": {"type": "ephemeral"}}],
        messages=[{"role": "user", "content": "q"}],
    )
    again = client.messages.create(
        model="claude-haiku-4-5-20251001",
        max_tokens=10,
        system=[{"type": "text", "text": doc, "cache_control": {"type": "ephemeral"}}],
        messages=[{"role": "user", "content": "q"}],
    )
    assert first.usage.cache_creation_input_tokens > 0
    assert again.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens


def test_adding_an_image_invalidates_the_messages_but_not_the_system(client):
    written = ask(client)
    assert written.cache_creation_input_tokens > 0
    with_image = [
        {"type": "text", "text": DOC, "cache_control": {"type": "ephemeral"}},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png()}},
        {"type": "text", "text": "Where is the lantern?"},
    ]
    after = ask(client, content=with_image)
    system_only = ask(client, content=[{"type": "text", "text": "x"}])  # how much the system prefix alone is
    assert after.cache_read_input_tokens == system_only.cache_read_input_tokens > 0
    assert after.cache_creation_input_tokens > 0  # the messages are written again


def test_changing_output_config_invalidates_the_messages(client):
    ask(client, model="claude-opus-4-7", output_config={"effort": "low"})
    other = ask(client, model="claude-opus-4-7", output_config={"effort": "high"})
    same = ask(client, model="claude-opus-4-7", output_config={"effort": "high"})
    assert 0 < other.cache_read_input_tokens < same.cache_read_input_tokens  # only the system prefix was read


def test_every_priced_model_has_its_documented_minimum():
    for name in PRICES:
        info = catalog.lookup(name)
        assert info is not None, f"{name} is priced but not in the catalog"
        assert min_cacheable_tokens(name) == info.min_cache
    assert [min_cacheable_tokens(m) for m in ("claude-opus-4-7", "claude-opus-5", "claude-haiku-4-5", SONNET)] == [
        2048,
        512,
        4096,
        1024,
    ]
    assert min_cacheable_tokens("claude-haiku-4-5-20251001") == min_cacheable_tokens("claude-haiku-4-5")


def test_a_top_level_1h_marker_over_an_explicit_5m_last_block_is_refused(client):
    with pytest.raises(anthropic.BadRequestError, match="1h"):
        client.messages.create(
            model=SONNET,
            max_tokens=10,
            cache_control={"type": "ephemeral", "ttl": "1h"},
            messages=[
                {"role": "user", "content": [{"type": "text", "text": "q", "cache_control": {"type": "ephemeral"}}]}
            ],
        )
    ok = client.messages.create(
        model=SONNET,
        max_tokens=10,
        cache_control={"type": "ephemeral"},
        messages=[
            {
                "role": "user",
                "content": [{"type": "text", "text": "q", "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
            }
        ],
    )
    assert ok.stop_reason in ("end_turn", "max_tokens")
