"""Server-side compaction offline (`compact_20260112`), through the real SDK, as the docs describe it:
https://platform.claude.com/docs/en/build-with-claude/compaction (beta `compact-2026-01-12`; trigger in input tokens,
at least 50,000; the response starts with a `compaction` block that replaces everything before it; the client
sends it back and the API ignores what came before it; `usage.iterations` lists the compaction step and the
message; `pause_after_compaction` stops with stop_reason "compaction"; only on models that have it)."""

from __future__ import annotations

import os

import anthropic
import pytest

from helpers.config import load_settings
from helpers.llm import get_client

MODEL = "claude-opus-4-6"
BETA = "compact-2026-01-12"
TRIGGER = 50_000
FILLER = "We talked about the weather and the trains for a while. " * 90  # ~1,000 tokens a message


def long_chat(turns: int) -> list[dict]:
    messages = [{"role": "user", "content": "I live in Lisbon and my favourite tea is genmaicha. " + FILLER}]
    for k in range(turns):
        messages.append({"role": "assistant", "content": f"Noted, part {k}. " + FILLER})
        messages.append({"role": "user", "content": f"Tell me more, part {k}. " + FILLER})
    messages[-1] = {"role": "user", "content": "Where do I live?"}
    return messages


def create(messages: list[dict], **edit):
    client = get_client(load_settings({}), max_retries=0)
    cm = {"edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": TRIGGER}, **edit}]}
    return client, client.beta.messages.create(
        model=MODEL, max_tokens=300, betas=[BETA], messages=messages, context_management=cm
    )


@pytest.fixture(scope="module")
def compacted():
    messages = long_chat(30)
    return messages, create(messages)[1]


def test_a_short_chat_is_not_compacted():
    _, reply = create(long_chat(2))
    assert [b.type for b in reply.content] == ["text"]
    # the compaction beta is on: the usage lists the one sampling iteration, nothing compacted (issue 40)
    (only,) = reply.usage.iterations
    assert only.type == "message" and only.input_tokens == reply.usage.input_tokens


def test_past_the_trigger_a_compaction_block_comes_first_and_the_reply_continues_from_it(compacted):
    messages, reply = compacted
    block, text = reply.content[0], reply.content[-1]
    assert block.type == "compaction" and "Lisbon" in block.content and text.type == "text"
    assert reply.stop_reason == "end_turn" and "Lisbon" in text.text  # answered from the summary
    step, message = reply.usage.iterations
    assert step.type == "compaction" and step.input_tokens >= TRIGGER and step.output_tokens > 0
    assert message.type == "message" and message.input_tokens == reply.usage.input_tokens < TRIGGER


def test_the_block_sent_back_replaces_everything_before_it(compacted):
    messages, reply = compacted
    client = get_client(load_settings({}), max_retries=0)
    follow = [*messages, {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]}]
    follow.append({"role": "user", "content": "And my favourite tea?"})
    cm = {"edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": TRIGGER}}]}
    counted = client.beta.messages.count_tokens(model=MODEL, betas=[BETA], messages=follow, context_management=cm)
    assert counted.input_tokens < 2_000  # the 60,000 tokens before the block are not read
    again = client.beta.messages.create(
        model=MODEL, max_tokens=300, betas=[BETA], messages=follow, context_management=cm
    )
    assert again.usage.input_tokens == counted.input_tokens and again.content[0].type == "text"
    assert "genmaicha" in again.content[-1].text


def test_pause_after_compaction_returns_the_block_alone():
    _, reply = create(long_chat(30), pause_after_compaction=True)
    assert [b.type for b in reply.content] == ["compaction"] and reply.stop_reason == "compaction"


def test_what_the_api_refuses():
    with pytest.raises(anthropic.BadRequestError, match="greater than or equal to 50000"):
        create(long_chat(1), trigger={"type": "input_tokens", "value": 1_000})
    client = get_client(load_settings({}), max_retries=0)
    with pytest.raises(anthropic.BadRequestError, match="not supported on claude-haiku-4-5"):
        client.beta.messages.create(
            model="claude-haiku-4-5",
            max_tokens=20,
            betas=[BETA],
            messages=long_chat(1),
            context_management={"edits": [{"type": "compact_20260112"}]},
        )


@pytest.mark.live
@pytest.mark.skipif(not os.environ.get("ANTHROPIC_API_KEY"), reason="needs ANTHROPIC_API_KEY (live test)")
def test_live_the_api_compacts_the_same_chat():
    """The live twin (GTE_LIVE_TESTS=1 with a key; about 60,000 input tokens on claude-opus-4-6)."""
    client = get_client(load_settings())
    cm = {"edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": TRIGGER}}]}
    reply = client.beta.messages.create(
        model=MODEL, max_tokens=300, betas=[BETA], messages=long_chat(30), context_management=cm
    )
    assert reply.content[0].type == "compaction" and reply.content[0].content
    assert [step.type for step in reply.usage.iterations] == ["compaction", "message"]
