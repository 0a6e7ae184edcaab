"""Tests for helpers.memory.window: examples plus hypothesis properties of exchange-aware trimming."""

from __future__ import annotations

import copy
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.memory.window import stored_tokens, trim, window_tokens

PROPERTY = settings(max_examples=150, deadline=None)


# ---------------------------------------------------------------------------
# tiny builders (independent of helpers.conversation, so the tests do not trust it)


def msg(role, content, tokens, seq=0):
    return {"role": role, "content": content, "tokens": tokens, "seq": seq}


def plain(i, tokens=100):
    return [msg("user", f"question {i}", tokens), msg("assistant", f"answer {i}", tokens)]


def tool_exchange(i, tokens=100):
    return [
        msg("user", f"weather {i}?", tokens),
        msg(
            "assistant", [{"type": "tool_use", "id": f"toolu_{i}", "name": "weather", "input": {"city": "LA"}}], tokens
        ),
        msg("user", [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "sunny"}], tokens),
        msg("assistant", f"It is sunny ({i}).", tokens),
    ]


def blocks_of(message, kind):
    content = message["content"]
    return [b for b in content if b.get("type") == kind] if isinstance(content, list) else []


def result_ids(message):
    return {b["tool_use_id"] for b in blocks_of(message, "tool_result")}


def use_ids(message):
    return {b["id"] for b in blocks_of(message, "tool_use")}


def opens_exchange(message):
    return message["role"] == "user" and not blocks_of(message, "tool_result")


def same_objects(a, b):
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


# ---------------------------------------------------------------------------
# examples


@pytest.mark.parametrize(
    "budget, kept_exchanges",
    [(0, 1), (199, 1), (200, 1), (399, 1), (400, 2), (599, 2), (600, 3), (800, 4), (10_000, 4)],
)
def test_plain_chat_at_several_budgets(budget, kept_exchanges):
    exchanges = [plain(i) for i in range(4)]  # 200 tokens each
    messages = [m for ex in exchanges for m in ex]
    kept, dropped = trim(messages, budget)
    assert same_objects(kept, messages[-2 * kept_exchanges :])
    assert same_objects(dropped + kept, messages)
    assert window_tokens(kept) == 200 * kept_exchanges


def test_tool_use_and_tool_result_are_never_split():
    messages = plain(0) + tool_exchange(1) + plain(2)  # 200 + 400 + 200 tokens
    # 500 would fit the newest exchange plus the last three messages of the tool exchange;
    # message-level trimming would keep an orphaned tool_result. Whole exchanges: it is dropped.
    kept, dropped = trim(messages, 500)
    assert same_objects(kept, messages[-2:])
    assert same_objects(dropped, messages[:-2])
    kept, _ = trim(messages, 600)
    assert same_objects(kept, messages[2:])
    assert kept[0]["content"] == "weather 1?"


def test_huge_newest_exchange_is_kept_alone():
    messages = plain(0) + plain(1) + [msg("user", "paste of a long log", 5000), msg("assistant", "summary", 300)]
    kept, dropped = trim(messages, 1000)
    assert same_objects(kept, messages[-2:])
    assert window_tokens(kept) > 1000
    assert same_objects(dropped, messages[:-2])


def test_stops_at_first_exchange_that_does_not_fit():
    messages = plain(0, tokens=5) + plain(1, tokens=500) + plain(2, tokens=5) + plain(3, tokens=5)
    kept, dropped = trim(messages, 100)
    assert same_objects(kept, messages[-4:])  # the cheap oldest exchange is not pulled in past the big one
    assert same_objects(dropped, messages[:4])


def test_leading_assistant_greeting_is_dropped_before_any_exchange():
    greeting = msg("assistant", "Hi, I'm Scout.", 10)
    messages = [greeting] + plain(0)
    kept, dropped = trim(messages, 10_000)
    assert same_objects(kept, messages[1:]) and dropped == [greeting]
    kept, dropped = trim([greeting], 0)  # the only group is the newest group: kept
    assert kept == [greeting] and dropped == []


def test_unanswered_user_turn_is_the_newest_exchange():
    messages = plain(0) + plain(1) + [msg("user", "and tomorrow?", 50)]
    kept, dropped = trim(messages, 250)
    assert same_objects(kept, messages[2:])


def test_empty_input_and_bad_budget():
    assert trim([], 100) == ([], [])
    with pytest.raises(ValueError, match="WINDOW_BUDGET_TOKENS"):
        trim(plain(0), -1)
    with pytest.raises(TypeError):
        trim(plain(0), 10.5)


def test_custom_tokens_of_and_missing_tokens():
    messages = [{"role": "user", "content": "abcd"}, {"role": "assistant", "content": "ef"}]
    assert window_tokens(messages, tokens_of=lambda m: len(m["content"])) == 6
    kept, dropped = trim(messages, 5, tokens_of=lambda m: len(m["content"]))
    assert same_objects(kept, messages)  # newest exchange kept even over budget
    with pytest.raises(KeyError, match="tokens_of"):
        stored_tokens(messages[0])
    with pytest.raises(ValueError, match="int >= 0"):
        trim(messages, 10, tokens_of=lambda m: -1)


def test_extra_keys_are_preserved_and_nothing_is_mutated():
    messages = plain(0) + tool_exchange(1) + plain(2)
    for seq, m in enumerate(messages):
        m["seq"] = seq
    before = copy.deepcopy(messages)
    kept, dropped = trim(messages, 300)
    assert messages == before
    assert [m["seq"] for m in dropped + kept] == list(range(len(messages)))
    assert all("tokens" in m for m in kept)


# ---------------------------------------------------------------------------
# properties over generated conversations


@st.composite
def conversations(draw):
    """A list of exchanges (lists of messages), optionally after a leading assistant-only group."""
    seq = itertools.count()
    tokens = st.integers(1, 500)

    def make(role, content):
        return {"role": role, "content": content, "tokens": draw(tokens), "seq": next(seq)}

    def text(s):
        return draw(st.sampled_from([s, [{"type": "text", "text": s}]]))

    groups = []
    if draw(st.booleans()):
        groups.append([make("assistant", text("Hi, I'm Scout. Ask me about LA."))])
    n = draw(st.integers(1, 8))
    for i in range(n):
        kind = draw(st.sampled_from(["plain", "tool", "unanswered"] if i == n - 1 else ["plain", "tool"]))
        ex = [make("user", text(f"question {i}"))]
        if kind == "tool":
            for r in range(draw(st.integers(1, 3))):
                ids = [f"toolu_{i}_{r}_{j}" for j in range(draw(st.integers(1, 3)))]
                preface = [{"type": "text", "text": "Let me check."}] if draw(st.booleans()) else []
                uses = [{"type": "tool_use", "id": t, "name": "lookup", "input": {"q": t}} for t in ids]
                ex.append(make("assistant", preface + uses))
                results = [
                    {
                        "type": "tool_result",
                        "tool_use_id": t,
                        "content": draw(st.sampled_from(["ok", [{"type": "text", "text": "ok"}]])),
                    }
                    for t in ids
                ]
                trailer = [{"type": "text", "text": "thanks"}] if draw(st.integers(0, 4)) == 0 else []
                ex.append(make("user", results + trailer))
        if kind != "unanswered":
            ex.append(make("assistant", text(f"answer {i}")))
        groups.append(ex)
    return groups


@st.composite
def cases(draw):
    """(groups, budget): budgets 0-3000, or exactly at/around the cost of some kept suffix (edge cases)."""
    groups = draw(conversations())
    suffix_costs = list(itertools.accumulate(sum(m["tokens"] for m in g) for g in reversed(groups)))
    exact = st.sampled_from(suffix_costs).flatmap(lambda c: st.sampled_from([c - 1, c, c + 1]).filter(lambda b: b >= 0))
    return groups, draw(st.one_of(st.integers(0, 3000), exact, exact))


def run(groups, budget):
    messages = [m for g in groups for m in g]
    kept, dropped = trim(messages, budget)
    return messages, kept, dropped


def first_kept_group(groups, dropped):
    """Index of the group that starts `kept`, or None when trim cut inside a group."""
    boundaries = list(itertools.accumulate([0] + [len(g) for g in groups]))
    return boundaries.index(len(dropped)) if len(dropped) in boundaries else None


def has_leading_group(groups):
    return not opens_exchange(groups[0][0])


@PROPERTY
@given(case=cases())
def test_property_dropped_then_kept_is_the_input(case):
    groups, budget = case
    messages, kept, dropped = run(groups, budget)
    assert same_objects(dropped + kept, messages)


@PROPERTY
@given(case=cases())
def test_property_never_splits_an_exchange(case):
    groups, budget = case
    _, _, dropped = run(groups, budget)
    assert first_kept_group(groups, dropped) is not None


@PROPERTY
@given(case=cases())
def test_property_never_orphans_a_tool_result(case):
    groups, budget = case
    _, kept, _ = run(groups, budget)
    for i, m in enumerate(kept):
        if result_ids(m):
            assert i > 0 and kept[i - 1]["role"] == "assistant"
            assert result_ids(m) <= use_ids(kept[i - 1])
        if use_ids(m):  # and no tool_use is left without its result
            assert i + 1 < len(kept) and use_ids(m) <= result_ids(kept[i + 1])


@PROPERTY
@given(case=cases())
def test_property_newest_exchange_always_kept(case):
    groups, budget = case
    _, kept, _ = run(groups, budget)
    newest = groups[-1]
    assert same_objects(kept[-len(newest) :], newest)


@PROPERTY
@given(case=cases())
def test_property_within_budget_unless_only_newest_exchange(case):
    groups, budget = case
    _, kept, _ = run(groups, budget)
    assert sum(m["tokens"] for m in kept) <= budget or same_objects(kept, groups[-1])


@PROPERTY
@given(case=cases())
def test_property_kept_is_maximal(case):
    groups, budget = case
    _, kept, dropped = run(groups, budget)
    k = first_kept_group(groups, dropped)
    oldest_allowed = 1 if has_leading_group(groups) and len(groups) > 1 else 0
    if k is not None and k > oldest_allowed:
        older = groups[k - 1]
        assert sum(m["tokens"] for m in kept + older) > budget


@PROPERTY
@given(case=cases())
def test_property_starts_with_a_user_turn(case):
    groups, budget = case
    _, kept, _ = run(groups, budget)
    assert kept and opens_exchange(kept[0])


def _msgs(*sizes):
    roles = ["user", "assistant"]
    return [{"role": roles[i % 2], "content": str(i), "tokens": n} for i, n in enumerate(sizes)]


def test_trim_in_chunks_keeps_everything_until_the_high_mark_then_cuts_to_the_low_mark():
    from helpers.memory.window import trim_in_chunks

    under = _msgs(100, 100, 100, 100)  # 400 tokens
    assert trim_in_chunks(under, 400, 200) == (under, [])
    over = _msgs(100, 100, 100, 100, 100, 100)  # 600 tokens > 400: cut to 200, whole exchanges
    kept, dropped = trim_in_chunks(over, 400, 200)
    assert [m["content"] for m in kept] == ["4", "5"] and dropped + kept == over
    assert trim_in_chunks(over, 600, 200) == (over, [])
    with pytest.raises(ValueError, match="low"):
        trim_in_chunks(over, 400, 500)


def test_trim_in_chunks_prefix_stays_identical_between_cuts():
    from helpers.memory.window import trim_in_chunks

    window, cuts = [], 0
    for i in range(30):
        grown = window + _msgs(30, 70)
        for m, n in zip(grown[-2:], range(2)):
            m["content"] = f"{i}-{n}"
        kept, dropped = trim_in_chunks(grown, 500, 250)
        if dropped:
            cuts += 1
        else:
            assert kept[: len(window)] == window  # no cut: the old window is an exact prefix
        assert sum(m["tokens"] for m in kept) <= 500
        window = kept
    assert 0 < cuts < 30 // 2  # a cut every few turns, not every turn
