"""Prompt caching in the offline model, one test per documented rule, through the real anthropic SDK.

The rules and the docs they come from: helpers/offline/cache.py. Every usage checked here also satisfies
input + cache write + cache read == count_tokens for the same request.
"""

import os

import anthropic
import pytest

from helpers.config import load_settings
from helpers.llm import get_client, offline_transport
from helpers.offline import MIN_CACHEABLE_TOKENS, SimClock, min_cacheable_tokens

MODEL = "claude-haiku-4-5"  # minimum cacheable prefix: 4096 tokens
LOW_MIN_MODEL = "claude-sonnet-4-6"  # minimum cacheable prefix: 1024 tokens
EPHEMERAL = {"type": "ephemeral"}
DOC = " ".join(f"Note {i}: the traveller keeps item {i} in locker {i * 7 % 97} on deck {i % 5}." for i in range(420))


@pytest.fixture
def clock():
    return SimClock()


@pytest.fixture
def client(clock):
    return get_client(load_settings({}), max_retries=0, clock=clock)


def system_blocks(text=DOC, **control):
    return [{"type": "text", "text": text, "cache_control": {**EPHEMERAL, **control}}]


def call(client, messages, model=MODEL, **kwargs):
    """Create a message; check the usage identity against count_tokens for the same request; return the usage."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    usage = client.messages.create(model=model, max_tokens=40, messages=messages, **kwargs).usage
    counted = client.messages.count_tokens(model=model, messages=messages, **kwargs).input_tokens
    assert usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens == counted
    return usage


def counts(usage):
    return usage.input_tokens, usage.cache_creation_input_tokens, usage.cache_read_input_tokens


def conversation(turns: int) -> list[dict]:
    """user/assistant messages, each a plain string (one block)."""
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} about the trip to Lisbon"}
        for i in range(turns)
    ]


def mark_last(messages: list[dict], **control) -> list[dict]:
    """A copy whose last message's last block carries a breakpoint (string content becomes one text block)."""
    out = [dict(m) for m in messages]
    content = out[-1]["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else [dict(b) for b in content]
    blocks[-1]["cache_control"] = {**EPHEMERAL, **control}
    out[-1]["content"] = blocks
    return out


def test_documented_minimums_and_the_doc_is_long_enough(client):
    assert (
        min_cacheable_tokens("claude-haiku-4-5"),
        min_cacheable_tokens("claude-haiku-4-5-20251001"),
        min_cacheable_tokens("claude-opus-4-5"),
        min_cacheable_tokens("claude-sonnet-4-5"),
        min_cacheable_tokens("claude-3-5-haiku-20241022"),
    ) == (4096, 4096, 4096, 1024, 2048)
    assert MIN_CACHEABLE_TOKENS[LOW_MIN_MODEL] == 1024
    doc = client.messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": DOC}]).input_tokens
    assert doc > 4096 + 200


# --- the rules -----------------------------------------------------------------------------------


def test_exact_prefix_is_written_then_read(client):
    first = call(client, "Which locker holds item 12?", system=system_blocks())
    second = call(client, "Which deck is item 40 on?", system=system_blocks())
    assert first.cache_read_input_tokens == 0 and first.cache_creation_input_tokens > 4096
    assert second.cache_creation_input_tokens == 0
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
    # what follows the breakpoint (the question) is the uncached input either way
    assert first.input_tokens < 30 and second.input_tokens < 30


def test_any_byte_changed_before_the_breakpoint_misses(client):
    call(client, "Which locker holds item 12?", system=system_blocks())
    changed = DOC.replace("Note 3:", "Note 3;", 1)  # one byte, early in the prefix
    miss = call(client, "Which locker holds item 12?", system=system_blocks(changed))
    assert miss.cache_read_input_tokens == 0 and miss.cache_creation_input_tokens > 4096
    # tools come before system: changing a tool invalidates the system breakpoint too
    tool = {"name": "lookup", "description": "Find an item.", "input_schema": {"type": "object", "properties": {}}}
    with_tool = call(client, "Which locker?", system=system_blocks(), tools=[tool])
    assert with_tool.cache_read_input_tokens == 0
    renamed = call(client, "Which locker?", system=system_blocks(), tools=[{**tool, "description": "Find an item!"}])
    assert renamed.cache_read_input_tokens == 0 and renamed.cache_creation_input_tokens > 4096
    again = call(client, "Which deck?", system=system_blocks(), tools=[{**tool, "description": "Find an item!"}])
    assert again.cache_read_input_tokens == renamed.cache_creation_input_tokens


def test_tool_choice_change_invalidates_messages_but_not_system(client):
    tool = {"name": "lookup", "description": "Find an item.", "input_schema": {"type": "object", "properties": {}}}
    messages = mark_last(conversation(3))
    first = call(client, messages, system=system_blocks(), tools=[tool], tool_choice={"type": "auto"})
    system_prefix = call(client, "x", system=system_blocks(), tools=[tool]).cache_read_input_tokens
    assert system_prefix > 4096
    other = call(client, messages, system=system_blocks(), tools=[tool], tool_choice={"type": "any"})
    assert other.cache_read_input_tokens == system_prefix
    assert other.cache_creation_input_tokens == first.cache_creation_input_tokens - system_prefix


def test_below_the_minimum_nothing_is_cached_and_nothing_fails(client):
    short = " ".join(DOC.split()[:1400])  # ~2,000 tokens: above Sonnet 4.6's 1,024, below Haiku 4.5's 4,096
    for _ in range(2):
        usage = call(client, "Which locker?", system=system_blocks(short))
        assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (0, 0)
        assert usage.cache_creation.ephemeral_5m_input_tokens == 0
    first = call(client, "Which locker?", model=LOW_MIN_MODEL, system=system_blocks(short))
    second = call(client, "Which deck?", model=LOW_MIN_MODEL, system=system_blocks(short))
    assert 1024 < first.cache_creation_input_tokens < 4096
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens


def test_five_minute_lifetime_expires_and_each_read_refreshes_it(client, clock):
    written = call(client, "q0", system=system_blocks()).cache_creation_input_tokens
    for _ in range(3):  # 3 x 299 s: far past 5 minutes in total, but every read restarts the lifetime
        clock.advance(299)
        assert counts(call(client, "q1", system=system_blocks()))[1:] == (0, written)
    clock.advance(300)  # exactly 5 minutes after the last read: gone
    assert counts(call(client, "q2", system=system_blocks()))[1:] == (written, 0)


def test_one_hour_lifetime_and_its_own_usage_field(client, clock):
    first = call(client, "q0", system=system_blocks(ttl="1h"))
    assert first.cache_creation.ephemeral_1h_input_tokens == first.cache_creation_input_tokens > 4096
    assert first.cache_creation.ephemeral_5m_input_tokens == 0
    clock.advance(3599)
    assert (
        call(client, "q1", system=system_blocks(ttl="1h")).cache_read_input_tokens == first.cache_creation_input_tokens
    )
    clock.advance(3600)
    assert call(client, "q2", system=system_blocks(ttl="1h")).cache_read_input_tokens == 0


def test_mixed_ttls_split_the_write_and_longer_ttls_must_come_first(client):
    messages = mark_last(conversation(3))
    usage = call(client, messages, system=system_blocks(ttl="1h"))
    one_hour, five_min = usage.cache_creation.ephemeral_1h_input_tokens, usage.cache_creation.ephemeral_5m_input_tokens
    assert one_hour > 4096 and 0 < five_min < 100 and one_hour + five_min == usage.cache_creation_input_tokens
    with pytest.raises(anthropic.BadRequestError) as info:
        call(client, mark_last(conversation(3), ttl="1h"), system=system_blocks())
    assert info.value.status_code == 400 and "1h" in str(info.value)


def test_more_than_four_breakpoints_is_the_apis_400(client):
    blocks = [{"type": "text", "text": f"part {i} " + DOC[:200], "cache_control": EPHEMERAL} for i in range(5)]
    with pytest.raises(anthropic.BadRequestError) as info:
        client.messages.create(model=MODEL, max_tokens=20, system=blocks, messages=[{"role": "user", "content": "hi"}])
    assert info.value.status_code == 400
    assert info.value.body["error"] == {
        "type": "invalid_request_error",
        "message": "A maximum of 4 blocks with cache_control may be provided. Found 5.",
    }
    with pytest.raises(anthropic.BadRequestError):  # count_tokens validates the same way
        client.messages.count_tokens(model=MODEL, system=blocks, messages=[{"role": "user", "content": "hi"}])
    call(client, "hi", system=blocks[:4])  # four is allowed
    with pytest.raises(anthropic.BadRequestError, match="Found 5"):  # the top-level marker takes a slot too
        call(client, "hi", system=blocks[:4], cache_control=EPHEMERAL)
    with pytest.raises(anthropic.BadRequestError, match="ttl"):
        call(client, "hi", system=system_blocks(ttl="10m"))


def test_usage_fields_add_up_to_count_tokens_in_every_shape(client):
    tool = {
        "name": "lookup",
        "description": DOC[:3000],
        "input_schema": {"type": "object", "properties": {}},
        "cache_control": EPHEMERAL,
    }
    tool_turn = [
        {"role": "user", "content": "Find item 7."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"i": 7}}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "locker 49"},
                {"type": "text", "text": "And item 8?", "cache_control": EPHEMERAL},
            ],
        },
    ]
    shapes = [
        {"system": system_blocks(), "messages": "plain question"},
        {"system": [{"type": "text", "text": "You help travellers."}, *system_blocks()], "messages": "two blocks"},
        {"tools": [tool], "system": DOC, "messages": mark_last(conversation(5))},
        {"tools": [tool], "system": system_blocks(), "messages": tool_turn},
        {"system": DOC, "messages": conversation(5), "cache_control": EPHEMERAL},
        {"system": DOC, "messages": conversation(5)},  # no breakpoint: the cache plays no part
    ]
    for shape in shapes * 2:  # the second pass reads what the first wrote
        usage = call(client, shape["messages"], **{k: v for k, v in shape.items() if k != "messages"})
        if shape is shapes[-1]:
            assert usage.cache_creation is None and counts(usage)[1:] == (0, 0)
        else:
            split = usage.cache_creation
            assert (
                split.ephemeral_5m_input_tokens + split.ephemeral_1h_input_tokens == usage.cache_creation_input_tokens
            )
    plain = {"model": MODEL, "system": DOC, "messages": [{"role": "user", "content": "hi"}]}
    marked = {**plain, "system": system_blocks(), "messages": mark_last(plain["messages"])}
    assert client.messages.count_tokens(**plain).input_tokens == client.messages.count_tokens(**marked).input_tokens


def test_lookback_finds_an_earlier_write_within_twenty_positions(client):
    history = conversation(3)
    written = call(client, mark_last(history), system=DOC).cache_creation_input_tokens

    def grown(new_blocks: int) -> list[dict]:  # one assistant message + a user message of new_blocks - 1 blocks
        blocks = [{"type": "text", "text": f"detail {i} of {new_blocks}"} for i in range(new_blocks - 1)]
        return mark_last(history + [{"role": "assistant", "content": "noted"}, {"role": "user", "content": blocks}])

    near = call(client, grown(19), system=DOC)  # the old write is the 20th position counting the breakpoint
    assert near.cache_read_input_tokens == written
    far = call(client, grown(20), system=DOC)  # the 21st: out of the window, a full write
    assert far.cache_read_input_tokens == 0 and far.cache_creation_input_tokens > written
    # a second breakpoint nearer the old write lets the lookback resume from there
    far2 = grown(21)
    far2[len(history) - 1] = mark_last(history)[-1]
    assert call(client, far2, system=DOC).cache_read_input_tokens == written


def test_a_run_of_tool_blocks_is_one_lookback_position(client):
    history = conversation(3)
    tool = {"name": "lookup", "description": "Find.", "input_schema": {"type": "object", "properties": {}}}
    written = call(client, mark_last(history), system=DOC, tools=[tool]).cache_creation_input_tokens
    uses = [{"type": "tool_use", "id": f"toolu_{i}", "name": "lookup", "input": {"i": i}} for i in range(25)]
    results = [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": f"locker {i}"} for i in range(25)]
    messages = history + [
        {"role": "assistant", "content": uses},
        {"role": "user", "content": results + [{"type": "text", "text": "Thanks."}]},
    ]
    # 51 new blocks but 3 positions (the tool_use run, the tool_result run, the text): the write is within reach
    assert call(client, mark_last(messages), system=DOC, tools=[tool]).cache_read_input_tokens == written


def test_a_growing_conversation_with_a_breakpoint_on_the_last_message_reads_each_turn(client):
    """The usual multi-turn pattern: the previous turn's marked message is plain history in the next request."""
    messages = conversation(1)
    previous = 0
    for turn in range(4):
        usage = call(client, mark_last(messages), system=DOC)
        assert usage.cache_read_input_tokens == previous
        previous = usage.cache_read_input_tokens + usage.cache_creation_input_tokens
        messages = messages + [
            {"role": "assistant", "content": f"reply {turn}"},
            {"role": "user", "content": f"question {turn}"},
        ]
    auto = call(client, messages, system=DOC, cache_control=EPHEMERAL)  # top-level: same effect
    assert auto.cache_read_input_tokens == previous


def test_the_cache_belongs_to_one_model_instance_and_one_model_name(client, clock):
    written = call(client, "q", system=system_blocks()).cache_creation_input_tokens
    other_client = get_client(load_settings({}), max_retries=0, clock=clock)
    assert call(other_client, "q", system=system_blocks()).cache_read_input_tokens == 0
    assert call(client, "q", model="claude-opus-4-6", system=system_blocks()).cache_read_input_tokens == 0
    assert call(client, "q", system=system_blocks()).cache_read_input_tokens == written
    model = offline_transport(client).model
    assert model.clock is clock and len(model.cache) == 2


@pytest.mark.live
def test_live_api_reports_a_cache_write_then_a_read():
    if not os.environ.get("ANTHROPIC_API_KEY"):
        pytest.skip("needs ANTHROPIC_API_KEY (live test)")
    client = get_client()
    model = load_settings().chat_model
    system = system_blocks(DOC + f" Run {os.getpid()}.")  # a prefix no earlier run has cached
    first = client.messages.create(
        model=model, max_tokens=20, system=system, messages=[{"role": "user", "content": "Which locker holds item 12?"}]
    ).usage
    second = client.messages.create(
        model=model, max_tokens=20, system=system, messages=[{"role": "user", "content": "Which deck is item 40 on?"}]
    ).usage
    assert first.cache_creation_input_tokens > 0 and not first.cache_read_input_tokens
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
