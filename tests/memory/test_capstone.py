"""Tests for helpers.memory.capstone: 07's small elephant (the package's answer to its two exercises) on a fake
client; its checks' cases are in helpers/exercises/lesson07.py (tests/exercises runs them)."""

from __future__ import annotations

from helpers.exercises.lesson07 import FLIGHT, TACOS, FakeClient, elephant, remembering
from helpers.memory.capstone import build_request, pack, trim_by_exchanges, turn, word_rank
from helpers.prompts import MEMORY_CLOSE, MEMORY_OPEN, SCOUT_PERSONA
from helpers.tokens import local_tokens


def msg(role: str, content: str, tokens: int) -> dict:
    return {"role": role, "content": content, "tokens": tokens}


def test_trim_keeps_whole_exchanges_and_always_the_newest():
    window = [msg("user", "a", 50), msg("assistant", "b", 50), msg("user", "c", 50), msg("assistant", "d", 50)]
    kept, dropped = trim_by_exchanges(window, 120)
    assert [m["content"] for m in kept] == ["c", "d"] and [m["content"] for m in dropped] == ["a", "b"]
    kept, dropped = trim_by_exchanges(window, 10)  # the newest stays even over budget
    assert [m["content"] for m in kept] == ["c", "d"]
    assert trim_by_exchanges([], 10) == ([], [])


def test_pack_and_word_rank():
    texts = ["User: our flight is DL1187", "User: I love tacos", "User: the flight lands at 9pm"]
    assert word_rank("Which flight?", texts)[-1] == 1
    assert pack(texts, local_tokens(texts[0])) == [texts[0]] and pack(texts, 0) == []
    chosen = pack(texts, local_tokens(texts[0]) + local_tokens(texts[1]))  # best first, skipping what no longer fits
    assert chosen == texts[:2] and sum(map(local_tokens, chosen)) <= local_tokens(texts[0]) + local_tokens(texts[1])


def test_build_request_sends_the_best_memory_in_its_tags_and_the_window_without_tokens():
    me = remembering(TACOS, FLIGHT, memories=local_tokens(FLIGHT) + 2, window=[msg("user", "Hi", 1)])
    request = build_request(me, "Which flight do we take home?")
    assert request["system"].startswith(SCOUT_PERSONA) and MEMORY_OPEN in request["system"]
    block = request["system"][request["system"].index(MEMORY_OPEN) :]
    assert "DL1187" in block and "tacos" not in block and block.endswith(MEMORY_CLOSE)
    assert request["messages"] == [
        {"role": "user", "content": "Hi"},
        {"role": "user", "content": "Which flight do we take home?"},
    ]


def test_turn_sends_the_request_keeps_the_window_in_budget_and_stores_every_exchange():
    client = FakeClient()
    me = elephant(client, window=16)
    for text in ["My sister Ines flies into LAX on Thursday.", "We sit in section 48, row K.", "What a trip!"]:
        assert turn(me, text).startswith("reply")
    assert sum(m["tokens"] for m in me["window"]) <= 16 and me["summary"].startswith("summary")
    assert len(me["texts"]) == len(me["vectors"]) == 3 and me["texts"][0].startswith("User: My sister Ines")
    assert [r["model"] for r in client.chats()] == ["chat-model"] * 3
