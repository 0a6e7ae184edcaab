"""The offline model's memory-tool policy (helpers/offline/memory_policy.py) step by step: each reply is decided from
the request alone, so each rule can be checked on a hand-built turn (the end-to-end flow through the SDK's tool
runner and MongoDB is tests/memory_tool/test_memory_tool_offline.py)."""

from __future__ import annotations

from helpers.offline import MemoryPolicy, Reply
from helpers.offline.memory_policy import OWN_FILE, listed_files

TOOL = {"type": "memory_20250818", "name": "memory"}
DEFAULT = Reply([{"type": "text", "text": "plain reply"}])
LISTING = "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n"


def turn(said: str, *steps: tuple[dict, str, bool], **body) -> dict:
    """A request: the user's message, then (command, result, is_error) exchanges of this turn."""
    messages = [{"role": "user", "content": said}]
    for k, (params, result, error) in enumerate(steps):
        messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k}", "name": "memory", "input": params}]})  # fmt: skip
        block = {"type": "tool_result", "tool_use_id": f"t{k}", "content": result}
        messages.append({"role": "user", "content": [{**block, "is_error": True} if error else block]})
    return {"model": "claude-haiku-4-5", "max_tokens": 300, "tools": [TOOL], "messages": messages, **body}


def commands(reply: Reply) -> list[dict]:
    return [b["input"] for b in reply.content if b["type"] == "tool_use"]


ROOT_VIEW = ({"command": "view", "path": "/memories"}, LISTING + "40B\t/memories\n40B\t/memories/user.md", False)


def test_it_views_the_directory_first_then_reads_every_listed_file():
    first = MemoryPolicy().respond(turn("What is my favourite tea?"), DEFAULT)
    assert first.stop_reason == "tool_use" and commands(first) == [{"command": "view", "path": "/memories"}]
    second = MemoryPolicy().respond(turn("What is my favourite tea?", ROOT_VIEW), DEFAULT)
    assert commands(second) == [{"command": "view", "path": OWN_FILE}]
    assert listed_files(ROOT_VIEW[1]) == [OWN_FILE]


def test_a_cut_view_is_paged_on_with_view_range():
    cut = "Here's the content of /memories/user.md with line numbers:\n     1\tThe user likes tea.\n"
    cut += "[... 2 more lines not shown (20 characters); view them with view_range [2, -1]]"
    reply = MemoryPolicy().respond(turn("What do I drink?", ROOT_VIEW, ({"command": "view", "path": OWN_FILE}, cut, False)), DEFAULT)  # fmt: skip
    assert commands(reply) == [{"command": "view", "path": OWN_FILE, "view_range": [2, -1]}]


def test_a_tool_error_is_not_retried_the_model_answers():
    reply = MemoryPolicy().respond(turn("I live in Lisbon.", ({"command": "view", "path": "/memories"}, "database down", True)), DEFAULT)  # fmt: skip
    assert reply.stop_reason == "end_turn" and reply.chat and not commands(reply)


def test_with_tool_choice_none_it_answers_at_once_and_a_forced_other_tool_is_not_its_step():
    none = MemoryPolicy().respond(turn("I live in Lisbon.", tool_choice={"type": "none"}), DEFAULT)
    assert none.stop_reason == "end_turn" and not commands(none)
    forced = turn("I live in Lisbon.", tool_choice={"type": "tool", "name": "other"})
    assert MemoryPolicy().respond(forced, DEFAULT) is DEFAULT


def test_small_talk_reads_nothing_and_writes_nothing():
    reply = MemoryPolicy().respond(turn("Hello there.", ROOT_VIEW), DEFAULT)
    assert reply.stop_reason == "end_turn" and not commands(reply)
