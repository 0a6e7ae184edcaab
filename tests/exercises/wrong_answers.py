"""Plausible wrong answers to every exercise, as a learner might write them: each must be caught by its check.

`WRONG["04.trim"]` lists functions with the exercise's signature that are wrong in one way each (drops the newest
exchange, splits an exchange, ...). tests/exercises/test_exercises.py runs every one through the exercise's check.
Add at least one for each exercise you register in helpers/exercises/lessonNN.py.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from helpers.memory import capstone


def chat_turn_sends_only_the_new_message(history, text, ask):
    reply = ask([{"role": "user", "content": text}])  # the goldfish of 01: the list is kept but never sent
    history += [{"role": "user", "content": text}, {"role": "assistant", "content": reply}]
    return reply


def chat_turn_forgets_the_reply(history, text, ask):
    history.append({"role": "user", "content": text})
    return ask(history)  # the reply is returned but never appended: two user messages in a row next time


def chat_turn_returns_nothing(history, text, ask):
    history.append({"role": "user", "content": text})
    history.append({"role": "assistant", "content": ask(history)})


WRONG: dict[str, list[Callable]] = {
    "02.chat_turn": [chat_turn_sends_only_the_new_message, chat_turn_forgets_the_reply, chat_turn_returns_nothing],
}


# 05: cosine ranking and RRF
def cosine_rank_without_normalising(query_vector, vectors):
    return list(np.argsort(-(np.asarray(vectors) @ query_vector), kind="stable"))  # a long vector wins on length


def cosine_rank_ascending(query_vector, vectors):
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return list(np.argsort(unit @ (query_vector / np.linalg.norm(query_vector)), kind="stable"))  # worst first


def rrf_adds_raw_ranks(rankings, k=60, weights=None):
    scores = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0) + rank  # the raw rank, not 1 / (k + rank)
    return sorted(scores, key=lambda item: scores[item])


def rrf_ignores_weights(rankings, k=60, weights=None):
    scores = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1 / (k + rank)
    return sorted(scores, key=lambda item: -scores[item])


def rrf_sorted_ascending(rankings, k=60, weights=None):
    weights = weights or [1.0] * len(rankings)
    scores = {}
    for ranking, weight in zip(rankings, weights):
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return sorted(scores, key=lambda item: scores[item])  # fewest points first


WRONG["05.cosine_rank"] = [cosine_rank_without_normalising, cosine_rank_ascending]
WRONG["05.rrf"] = [rrf_adds_raw_ranks, rrf_ignores_weights, rrf_sorted_ascending]


# 07: the capstone's read path and write path (wrong in one way each; the rest as helpers.memory.capstone)
def build_request_keeps_the_tokens_key(me, text):
    request = capstone.build_request(me, text)
    return {**request, "messages": [*me["window"], {"role": "user", "content": text}]}  # the API rejects "tokens"


def build_request_forgets_the_new_message(me, text):
    request = capstone.build_request(me, text)
    return {**request, "messages": request["messages"][:-1]}


def build_request_without_memories(me, text):
    return capstone.build_request({**me, "texts": [], "vectors": []}, text)  # the summary and window only


def turn_never_trims(me, text):
    budget, me["window_budget"] = me["window_budget"], 10**9
    try:
        return capstone.turn(me, text)  # the window grows without end; nothing reaches the summary
    finally:
        me["window_budget"] = budget


def turn_stores_no_memory(me, text):
    answer = capstone.turn(me, text)
    me["texts"].pop()  # the exchange is never remembered
    me["vectors"].pop()
    return answer


WRONG["07.build_request"] = [
    build_request_keeps_the_tokens_key,
    build_request_forgets_the_new_message,
    build_request_without_memories,
]
WRONG["07.turn"] = [turn_never_trims, turn_stores_no_memory]
