"""helpers.memory.budget: one context budget for window + summary + memories, allocated by evidence."""

from datetime import datetime, timezone

import pytest
from hypothesis import example, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from helpers.memory.budget import BudgetPolicy, plan, window_suffix
from helpers.offline import count_text_tokens
from helpers.retrieval import Hit
from helpers.retrieval.inject import format_block, pack_by_value

WHEN = datetime(2023, 5, 8, tzinfo=timezone.utc)


def window(n_exchanges, tokens=50):
    out = []
    for i in range(n_exchanges):
        out += [
            {"role": "user", "content": f"u{i}", "tokens": tokens, "seq": 2 * i + 1},
            {"role": "assistant", "content": f"a{i}", "tokens": tokens, "seq": 2 * i + 2},
        ]
    return out


def hit(i, sim, session="other", seq=None, words=12):
    text = f"Speaker: memory number {i} " + "word " * words
    return Hit(
        f"h{i}",
        "episode",
        text,
        sim,
        WHEN,
        {"session_id": session, "seq": i if seq is None else seq},
        WHEN,
        similarity=sim,
    )


def run(win, hits, budget, summary=0, policy=BudgetPolicy()):
    block = lambda h: count_text_tokens("\n\n" + format_block(h))  # noqa: E731
    pack = lambda h, t: pack_by_value(h, t, count_text_tokens)  # noqa: E731
    return plan(win, summary, hits, budget, session_id="s", block_tokens=block, pack=pack, policy=policy)


def test_the_last_exchange_is_always_sent_even_over_budget():
    sent, _, packed, split = run(window(3, tokens=400), [hit(1, 0.9)], 300)
    assert [m["seq"] for m in sent] == [5, 6] and packed == [] and split.window == 800


def test_strong_hits_take_most_of_a_long_history():
    sent, _, packed, split = run(window(20), [hit(i, 0.8 - i / 100, words=40) for i in range(40)], 2000)
    assert split.evidence == "strong" and split.memories > split.window
    assert split.window + split.memories + split.summary <= 2000 and sent[-1]["seq"] == 40


def test_weak_hits_leave_most_to_the_window_when_the_history_fits_it():
    # fewer remembered turns outside the window (10) than in it (40): the window is most of the history
    sent, _, packed, split = run(window(20), [hit(i, 0.2, words=40) for i in range(10)], 2000)
    assert split.evidence == "weak" and split.window > split.memories
    assert split.window + split.memories <= 2000


def test_weak_hits_still_get_most_of_a_long_history():
    # as many remembered turns outside the window as in it: the window shows a small part of what was said
    sent, _, packed, split = run(window(20), [hit(i, 0.2, words=40) for i in range(40)], 2000)
    assert split.evidence == "long history" and split.memories > split.window
    assert split.window + split.memories <= 2000 and sent[-1]["seq"] == 40
    sent, _, packed, split = run(
        window(20), [hit(i, 0.2, words=40) for i in range(40)], 2000, policy=BudgetPolicy(long_share=0.25)
    )
    assert split.evidence == "long history" and split.window > split.memories  # the knob is what decides


def test_a_line_said_twice_is_packed_once():
    twice = [
        hit(1, 0.9),
        Hit("h2", "episode", hit(1, 0.9).text, 0.8, WHEN, {"session_id": "o", "seq": 9}, WHEN, similarity=0.8),
        hit(3, 0.7),
    ]
    packed = pack_by_value(twice, 2000, count_text_tokens)
    assert [h.id for h in packed] == ["h1", "h3"]


def test_no_hits_gives_everything_to_window_and_summary():
    sent, summary_sent, packed, split = run(window(10), [], 2000, summary=150)
    assert len(sent) == 20 and summary_sent and packed == [] and split.summary == 150


def test_window_messages_are_never_sent_twice_but_other_sessions_with_the_same_seq_are():
    win = window(2)
    same = hit(1, 0.9, session="s", seq=4)  # this session's seq 4: in the window
    other = hit(2, 0.9, session="t", seq=4)  # another session's seq 4: a different message
    sent, _, packed, _ = run(win, [same, other], 2000)
    assert [h.id for h in packed] == ["h2"]


@hsettings(max_examples=40, deadline=None)
@given(st.integers(100, 3000), st.integers(1, 12), st.integers(0, 30), st.integers(0, 300))
@example(budget=186, exchanges=1, n_hits=2, summary=0)  # the block's separator once took it 1 token over
@example(budget=566, exchanges=1, n_hits=22, summary=0)
def test_everything_but_the_last_exchange_fits_the_budget(budget, exchanges, n_hits, summary):
    win = window(exchanges, tokens=40)
    _, summary_sent, packed, split = run(win, [hit(i, 0.9 - i / 50) for i in range(n_hits)], budget, summary)
    last = 80
    assert split.window + split.summary + split.memories <= max(budget, last)
    assert summary_sent == (split.summary > 0)


def test_window_suffix_is_whole_exchanges():
    assert [m["seq"] for m in window_suffix(window(4), 210)] == [5, 6, 7, 8]
    assert window_suffix([], 100) == []


def test_policy_rejects_shares_outside_0_1():
    with pytest.raises(ValueError, match="strong_share"):
        BudgetPolicy(strong_share=1.5)


def test_remembered_turns_not_the_candidate_list_measure_a_long_history():
    # a window of 40 messages and only 10 candidates (a capped search): counted from the candidates the history
    # looks short; memory holding 40 turns outside the window says it is long
    hits = [hit(i, 0.2, words=40) for i in range(10)]
    assert run(window(20), hits, 2000)[3].evidence == "weak"
    block = lambda h: count_text_tokens("\n\n" + format_block(h))  # noqa: E731
    pack = lambda h, t: pack_by_value(h, t, count_text_tokens)  # noqa: E731
    for remembered, evidence in ((40, "long history"), (39, "weak")):
        split = plan(window(20), 0, hits, 2000, session_id="s", block_tokens=block, pack=pack, remembered=remembered)[3]
        assert split.evidence == evidence
