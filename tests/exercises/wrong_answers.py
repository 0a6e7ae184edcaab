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


def path_prefix_only(path):
    return path.startswith("/memories")  # the reference handler's plain prefix test: /memoriesX and .. get through


def path_without_dot_names(path):
    return path == "/memories" or path.startswith("/memories/")  # right prefix, but ../../etc/passwd gets through


def str_replace_every_match(content, old, new):
    if old not in content:
        raise ValueError(f"{old!r} not found")
    return content.replace(old, new)  # two matches: both replaced, where the tool must refuse


def str_replace_silent_when_missing(content, old, new):
    if content.count(old) > 1:
        raise ValueError("ambiguous")
    return content.replace(old, new)  # no match: returns the text unchanged instead of refusing


WRONG: dict[str, list[Callable]] = {
    "02.chat_turn": [chat_turn_sends_only_the_new_message, chat_turn_forgets_the_reply, chat_turn_returns_nothing],
    "06.path": [path_prefix_only, path_without_dot_names],
    "06.str_replace": [str_replace_every_match, str_replace_silent_when_missing],
}


# --- 03.message_tokens ----------------------------------------------------------------------------------------------


def message_tokens_whole_context_on_each(messages, count):
    return [count(messages[: i + 1]) for i in range(len(messages))]  # the running total, stored on every message


def message_tokens_counts_each_alone(messages, count):
    return [count([m]) for m in messages]  # each alone, the fixed base counted again every time


def message_tokens_len_over_four(messages, count):
    return [round(len(m["content"]) / 4) for m in messages]  # an estimate: count is never asked


def message_tokens_base_on_the_first(messages, count):
    totals = [count(messages[: i + 1]) for i in range(len(messages))]
    return totals[:1] + [b - a for a, b in zip(totals, totals[1:])]  # the first message carries the fixed base


# --- 04.trim -------------------------------------------------------------------------------------------------------


def _exchanges(messages):
    groups = []
    for m in messages:
        if m["role"] == "user" or not groups:
            groups.append([])
        groups[-1].append(m)
    return groups


def trim_drops_the_newest_when_over_budget(messages, budget):
    kept, used = [], 0
    for group in reversed(_exchanges(messages)):
        size = sum(m["tokens"] for m in group)
        if used + size > budget:
            break
        kept, used = group + kept, used + size
    return kept, messages[: len(messages) - len(kept)]


def trim_splits_an_exchange(messages, budget):
    kept, used = [messages[-1]] if messages else [], messages[-1]["tokens"] if messages else 0
    for m in reversed(messages[:-1]):  # message by message: an answer can stay without its question
        if used + m["tokens"] > budget:
            break
        kept, used = [m] + kept, used + m["tokens"]
    return kept, messages[: len(messages) - len(kept)]


def trim_keeps_the_oldest(messages, budget):
    kept, used = [], 0
    for group in _exchanges(messages):
        size = sum(m["tokens"] for m in group)
        if kept and used + size > budget:
            break
        kept, used = kept + group, used + size
    return kept, messages[len(kept) :]


def trim_skips_what_does_not_fit(messages, budget):
    groups = _exchanges(messages)
    if not groups:
        return [], []
    keep, used = [groups[-1]], sum(m["tokens"] for m in groups[-1])
    for group in reversed(groups[:-1]):
        size = sum(m["tokens"] for m in group)
        if used + size <= budget:  # continues past an exchange that did not fit: a gap in the middle
            keep, used = [group] + keep, used + size
    kept = [m for group in keep for m in group]
    return kept, [m for m in messages if m not in kept]


# --- 04.merge ------------------------------------------------------------------------------------------------------


def _turns(dropped):
    return "\n".join(f"{'User' if m['role'] == 'user' else 'Assistant'}: {m['content']}" for m in dropped)


def merge_forgets_the_old_summary(old_summary, dropped, ask):
    body = f"<existing_summary>\n\n</existing_summary>\n<new_turns>\n{_turns(dropped)}\n</new_turns>"
    return ask([{"role": "user", "content": body}]).strip()  # the summary of the new turns only: the past is lost


def merge_appends_to_the_old_summary(old_summary, dropped, ask):
    body = f"<existing_summary>\n{old_summary}\n</existing_summary>\n<new_turns>\n{_turns(dropped)}\n</new_turns>"
    return old_summary + " " + ask([{"role": "user", "content": body}]).strip()  # grows every merge: not bounded


def merge_sends_the_turns_as_messages(old_summary, dropped, ask):
    return ask([{"role": "user", "content": old_summary}, *dropped]).strip()  # a chat to continue, not a merge


WRONG["03.message_tokens"] = [
    message_tokens_whole_context_on_each,
    message_tokens_counts_each_alone,
    message_tokens_len_over_four,
    message_tokens_base_on_the_first,
]
WRONG["04.trim"] = [
    trim_drops_the_newest_when_over_budget,
    trim_splits_an_exchange,
    trim_keeps_the_oldest,
    trim_skips_what_does_not_fit,
]
WRONG["04.merge"] = [
    merge_forgets_the_old_summary,
    merge_appends_to_the_old_summary,
    merge_sends_the_turns_as_messages,
]


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
