"""Tests for helpers.conversation: text rendering, tool ids, exchange grouping, validation."""

from __future__ import annotations

import anthropic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.conversation import (
    group_exchanges,
    is_tool_result_turn,
    reply_text,
    starts_exchange,
    strip_meta,
    text_of,
    tool_result_ids,
    tool_use_ids,
    validate_messages,
)

TOOL_USE = {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "LA", "days": 2}}
TOOL_RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny, 24C"}


def user(content, **extra):
    return {"role": "user", "content": content, **extra}


def assistant(content, **extra):
    return {"role": "assistant", "content": content, **extra}


def tool_turns():
    """One tool round trip: ask, tool_use, tool_result, answer."""
    return [
        user("Weather in LA?"),
        assistant([{"type": "text", "text": "Checking."}, TOOL_USE]),
        user([TOOL_RESULT]),
        assistant("Sunny, 24C."),
    ]


# --- text_of -----------------------------------------------------------------


def test_text_of_plain_string_and_message():
    assert text_of("hello") == "hello"
    assert text_of(user("hello", tokens=3, seq=7)) == "hello"
    assert text_of(None) == ""


def test_text_of_text_blocks_joined_with_newlines():
    content = [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]
    assert text_of(content) == "one\ntwo"
    assert text_of(assistant(content)) == "one\ntwo"


def test_text_of_tool_use_block():
    assert text_of(TOOL_USE) == '[tool_use weather {"city": "LA", "days": 2}]'
    assert text_of(assistant([{"type": "text", "text": "Checking."}, TOOL_USE])) == (
        'Checking.\n[tool_use weather {"city": "LA", "days": 2}]'
    )


def test_text_of_tool_result_block_with_str_and_block_content():
    assert text_of(TOOL_RESULT) == "[tool_result toolu_1: sunny, 24C]"
    listed = {
        "type": "tool_result",
        "tool_use_id": "toolu_2",
        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
    }
    assert text_of(user([listed])) == "[tool_result toolu_2: a\nb]"
    failed = {"type": "tool_result", "tool_use_id": "toolu_3", "content": "timeout", "is_error": True}
    assert text_of(failed) == "[tool_result (error) toolu_3: timeout]"


def test_text_of_unknown_block_names_its_type():
    assert text_of([{"type": "image", "source": {}}]) == "[image]"


def test_text_of_rejects_other_types():
    with pytest.raises(TypeError):
        text_of(42)


# --- tool ids and turn kinds --------------------------------------------------


def test_tool_ids():
    ask, call, result, answer = tool_turns()
    assert tool_use_ids(call) == {"toolu_1"}
    assert tool_result_ids(result) == {"toolu_1"}
    assert tool_use_ids(answer) == set() and tool_result_ids(ask) == set()


def test_is_tool_result_turn():
    ask, call, result, answer = tool_turns()
    assert is_tool_result_turn(result)
    assert not is_tool_result_turn(ask)
    assert not is_tool_result_turn(call)
    assert not is_tool_result_turn(user([]))
    assert not is_tool_result_turn(user([{"type": "text", "text": "hi"}]))
    # the API allows text after the tool results; it is still part of the tool round trip
    assert is_tool_result_turn(user([TOOL_RESULT, {"type": "text", "text": "also"}]))
    assert starts_exchange(ask) and not starts_exchange(result) and not starts_exchange(answer)


# --- group_exchanges ----------------------------------------------------------


def test_group_plain_chat():
    msgs = [user("a"), assistant("b"), user("c"), assistant("d")]
    assert group_exchanges(msgs) == [msgs[:2], msgs[2:]]


def test_group_keeps_tool_round_trip_together():
    msgs = tool_turns() + [user("thanks"), assistant("welcome")]
    groups = group_exchanges(msgs)
    assert groups == [msgs[:4], msgs[4:]]


def test_group_leading_assistant_messages_form_their_own_group():
    msgs = [assistant("Hi, I'm Scout."), assistant("Ask me anything."), user("a"), assistant("b")]
    assert group_exchanges(msgs) == [msgs[:2], msgs[2:]]


def test_group_unanswered_and_consecutive_user_turns():
    msgs = [user("a"), user("b"), assistant("c"), user("d")]
    assert group_exchanges(msgs) == [[msgs[0]], msgs[1:3], [msgs[3]]]
    assert group_exchanges([]) == []


def test_group_returns_the_same_objects():
    msgs = tool_turns()
    flat = [m for g in group_exchanges(msgs) for m in g]
    assert all(a is b for a, b in zip(flat, msgs, strict=True))


@settings(max_examples=100, deadline=None)
@given(kinds=st.lists(st.sampled_from(["user", "assistant", "tool_result"]), max_size=20))
def test_group_concatenation_is_identity_and_boundaries_are_user_turns(kinds):
    make = {"user": lambda: user("q"), "assistant": lambda: assistant("a"), "tool_result": lambda: user([TOOL_RESULT])}
    msgs = [make[k]() for k in kinds]
    groups = group_exchanges(msgs)
    flat = [m for g in groups for m in g]
    assert len(flat) == len(msgs) and all(a is b for a, b in zip(flat, msgs))
    assert all(g for g in groups)
    for i, g in enumerate(groups):
        assert i == 0 or starts_exchange(g[0])
        assert not any(starts_exchange(m) for m in g[1:])


# --- validate_messages --------------------------------------------------------


def test_validate_accepts_good_conversations():
    validate_messages([user("hi")])
    validate_messages(tool_turns() + [user("thanks", tokens=2, seq=5)])
    validate_messages([user([{"type": "text", "text": "hi"}]), assistant("hello")])


@pytest.mark.parametrize(
    "messages, match",
    [
        ([], "empty"),
        ([{"role": "system", "content": "be nice"}], "unknown role 'system'"),
        ([{"content": "hi"}], "unknown role None"),
        ([user("   ")], r"messages\[0\].*whitespace"),
        ([user("")], "empty or whitespace"),
        ([user("hi"), assistant([{"type": "text", "text": "\n"}])], r"messages\[1\]\.content\[0\]"),
        ([user([])], "empty list"),
        ([user(None)], "str or a list"),
        ([{"role": "user"}], "missing 'content'"),
        ([user("hi"), assistant("no tools here"), user([TOOL_RESULT])], "toolu_1 has no matching tool_use"),
        ([user([TOOL_RESULT])], "no matching tool_use"),
        # the matching tool_use exists but not in the immediately preceding assistant message
        (tool_turns() + [user([TOOL_RESULT])], r"messages\[4\].*immediately preceding"),
        ([user("hi"), assistant([TOOL_RESULT])], "belong in user messages"),
        ([user([TOOL_USE])], "belong in assistant messages"),
        ([user([{"text": "no type"}])], "'type'"),
    ],
)
def test_validate_rejects(messages, match):
    with pytest.raises(ValueError, match=match):
        validate_messages(messages)


# --- strip_meta ---------------------------------------------------------------


def test_strip_meta_keeps_only_role_and_content():
    stored = user("hi", tokens=3, seq=9, _id="x")
    assert strip_meta(stored) == {"role": "user", "content": "hi"}
    assert stored == user("hi", tokens=3, seq=9, _id="x")  # the stored message is untouched


def test_reply_text_joins_the_text_blocks_of_a_reply_and_skips_tool_use():
    reply = anthropic.types.Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
            "content": [{"type": "text", "text": "It is "}, TOOL_USE, {"type": "text", "text": "sunny."}],
        }
    )
    assert reply_text(reply) == "It is sunny."


def test_reply_text_is_one_function_everywhere():
    from helpers import memory
    from helpers.memory import structured, summary

    assert memory.reply_text is summary.reply_text is structured.reply_text is reply_text
