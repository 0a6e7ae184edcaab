"""Plausible wrong answers to every exercise, as a learner might write them: each must be caught by its check.

`WRONG["04.trim"]` lists functions with the exercise's signature that are wrong in one way each (drops the newest
exchange, splits an exchange, ...). tests/exercises/test_exercises.py runs every one through the exercise's check.
Add at least one for each exercise you register in helpers/exercises/lessonNN.py.
"""

from __future__ import annotations

from collections.abc import Callable


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
