"""Plumbing: the contract's rules on `messages`: roles and order, empty content, prefill, tool_use/tool_result pairing.

Each function is one rule of the table in helpers.offline.contract, which names its source.
"""

from __future__ import annotations

import re

from helpers.offline.call import Call, blocks_of, refuse

__all__ = [
    "first_message_user",
    "system_role_supported",
    "content_not_empty",
    "text_not_blank",
    "prefill",
    "blocks_in_their_role",
    "tool_use_ids",
    "tool_results_answer_tool_uses",
    "version_2026_blocks",
]

_TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
_USE_KINDS = ("tool_use",)  # client tool calls: answered by the application's tool_result
_ASSISTANT_ONLY = ("tool_use", "server_tool_use", "thinking", "redacted_thinking")


def final_assistant(call: Call) -> dict | None:
    last = call.messages[-1]
    return last if last.get("role") == "assistant" else None


def first_message_user(call: Call) -> None:
    """The conversation opens with a user turn (a mid-conversation system message does not count)."""
    for m in call.messages:
        if m["role"] == "system":
            continue
        if m["role"] != "user":
            raise refuse('messages: first message must use the "user" role')
        return


def system_role_supported(call: Call) -> None:
    """A `{"role": "system"}` message inside `messages` only on models that take mid-conversation system messages."""
    for i, m in enumerate(call.messages):
        if m["role"] == "system" and not call.model.mid_system:
            raise refuse(f"messages.{i}.role: role 'system' is not supported on this model")


def content_not_empty(call: Call) -> None:
    """Every message has content, except an optional final assistant message."""
    last = len(call.messages) - 1
    for i, m in enumerate(call.messages):
        if not m["content"] and not (i == last and m["role"] == "assistant"):
            raise refuse(
                f"messages.{i}: all messages must have non-empty content except for the optional final assistant "
                "message"
            )


def _texts(blocks: list):
    """(index, text) of the text blocks among `blocks`, and of those nested in tool_result / search_result blocks."""
    for j, block in enumerate(blocks):
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            yield j, block.get("text", "")
        inner = block.get("content")
        if block.get("type") in ("tool_result", "search_result") and isinstance(inner, list):
            for sub in inner:
                if isinstance(sub, dict) and sub.get("type") == "text":
                    yield j, sub.get("text", "")


def text_not_blank(call: Call) -> None:
    """Text blocks are not empty, and hold non-whitespace text (a final assistant message may end in whitespace
    only as far as the prefill rule allows), in `messages` and in `system`."""
    system = call.body.get("system")
    if isinstance(system, list):
        for _, text in _texts(system):
            if text == "":
                raise refuse("system: text content blocks must be non-empty")
            if not text.strip():
                raise refuse("system: text content blocks must contain non-whitespace text")
    last = len(call.messages) - 1
    for i, m in enumerate(call.messages):
        final_assistant = i == last and m["role"] == "assistant"
        content = m["content"]
        if isinstance(content, str):
            if content and not content.strip() and not final_assistant:
                raise refuse(f"messages.{i}: text content blocks must contain non-whitespace text")
            continue
        for j, text in _texts(content):
            if text == "":
                raise refuse(f"messages.{i}.content.{j}: text content blocks must be non-empty")
            if not text.strip() and not final_assistant:
                raise refuse(f"messages.{i}.content.{j}: text content blocks must contain non-whitespace text")


def prefill(call: Call) -> None:
    """A final assistant message is a prefill: refused by models from the 4.6 generation on; elsewhere its text
    may not end in whitespace."""
    last = final_assistant(call)
    if last is None:
        return
    if not call.model.prefill and last["content"]:
        raise refuse(
            "This model does not support assistant message prefill. The conversation must end with a user message."
        )
    blocks = blocks_of(last["content"])
    if blocks and isinstance(blocks[-1], dict) and blocks[-1].get("type") == "text":
        text = blocks[-1].get("text", "")
        if text and text != text.rstrip():
            raise refuse("messages: final assistant content cannot end with trailing whitespace")


def blocks_in_their_role(call: Call) -> None:
    """tool_use, server_tool_use and thinking blocks are the assistant's; tool_result blocks the user's."""
    if not call.kinds & {*_ASSISTANT_ONLY, "tool_result"}:
        return
    for i, m in enumerate(call.messages):
        for j, block in enumerate(call.blocks[i]):
            kind = block.get("type") if isinstance(block, dict) else None
            if m["role"] == "user" and kind in _ASSISTANT_ONLY:
                raise refuse(f"messages.{i}.content.{j}: `{kind}` blocks can only be in `assistant` messages")
            if m["role"] == "assistant" and kind == "tool_result":
                raise refuse(f"messages.{i}.content.{j}: `tool_result` blocks can only be in `user` messages")


def tool_use_ids(call: Call) -> None:
    """tool_use ids match ^[a-zA-Z0-9_-]+$ and are unique in the conversation."""
    if not call.kinds & {"tool_use", "server_tool_use"}:
        return
    seen = set()
    for i, blocks in enumerate(call.blocks):
        for j, block in enumerate(blocks):
            if isinstance(block, dict) and block.get("type") in ("tool_use", "server_tool_use"):
                tid = block["id"]
                if not _TOOL_ID.match(tid):
                    raise refuse(
                        f"messages.{i}.content.{j}.{block['type']}.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
                    )
                if tid in seen:
                    raise refuse(f"messages.{i}.content.{j}: `tool_use` ids must be unique")
                seen.add(tid)


def _tool_uses(message: dict | None) -> list[str]:
    if message is None or message["role"] != "assistant":
        return []
    return [b["id"] for b in blocks_of(message["content"]) if isinstance(b, dict) and b.get("type") in _USE_KINDS]


def tool_results_answer_tool_uses(call: Call) -> None:
    """Each tool_result answers a tool_use of the message just before, and comes first in its message; each
    tool_use is answered by a tool_result in the next message."""
    if not call.kinds & {"tool_use", "tool_result"}:
        return
    msgs = call.messages
    for i, m in enumerate(msgs):
        asked = _tool_uses(msgs[i - 1] if i else None)
        if m["role"] == "user":
            seen_other = False
            for j, b in enumerate(blocks_of(m["content"])):
                if not (isinstance(b, dict) and b.get("type") == "tool_result"):
                    seen_other = True
                    continue
                if b["tool_use_id"] not in asked:
                    raise refuse(
                        f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                        f"{b['tool_use_id']}. Each `tool_result` block must have a corresponding `tool_use` block in "
                        "the previous message."
                    )
                if seen_other:
                    raise refuse(
                        f"messages.{i}.content.{j}: `tool_result` blocks must come first in the user "
                        "message content, before any other content"
                    )
        if asked:
            answered = {
                b.get("tool_use_id")
                for b in blocks_of(m["content"])
                if m["role"] == "user" and isinstance(b, dict) and b.get("type") == "tool_result"
            }
            missing = [t for t in asked if t not in answered]
            if missing:
                raise refuse(
                    f"messages.{i - 1}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                    f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block in "
                    "the next message."
                )


def version_2026_blocks(call: Call) -> None:
    """API version 2026-10-21: no document block directly in an assistant message, no citations on a user text
    block (directly or inside a search_result)."""
    if call.version != "2026-10-21" or not call.kinds & {"document", "text", "search_result"}:
        return
    for i, m in enumerate(call.messages):
        if isinstance(m["content"], str):  # plain text: no document, no citations
            continue
        for j, b in enumerate(call.blocks[i]):
            if not isinstance(b, dict):
                continue
            if m["role"] == "assistant" and b.get("type") == "document":
                raise refuse(f"messages.{i}.content.{j}: document blocks are not allowed in assistant messages")
            inner = b.get("content") if b.get("type") == "search_result" else [b]
            for t in inner if isinstance(inner, list) else []:
                if m["role"] == "user" and isinstance(t, dict) and t.get("type") == "text" and t.get("citations"):
                    raise refuse(f"messages.{i}.content.{j}: text blocks in user messages cannot have citations")
