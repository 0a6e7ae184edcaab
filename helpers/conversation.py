"""Message and exchange types for Anthropic Messages-API dicts (text and content blocks). Taught in 02_history_list, section 'A list that holds the conversation'."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import anthropic

__all__ = [
    "chat_turn",
    "format_turns",
    "Message",
    "ROLES",
    "text_of",
    "reply_text",
    "is_tool_result_turn",
    "starts_exchange",
    "tool_use_ids",
    "tool_result_ids",
    "group_exchanges",
    "validate_messages",
    "strip_meta",
]

# A Messages-API message: {"role", "content"} plus optional stored keys such as "tokens" and "seq".
Message = dict[str, Any]

ROLES = ("user", "assistant")


def reply_text(message: anthropic.types.Message) -> str:
    """The text of a Messages API reply (`content[0].text`, joined if there are several text blocks)."""
    return "".join(block.text for block in message.content if getattr(block, "type", "") == "text")


def _blocks(message: Mapping[str, Any]) -> list:
    """The content blocks of a message ([] when the content is a plain string)."""
    content = message.get("content")
    return content if isinstance(content, list) else []


def _block_text(block: Any) -> str:
    """Render one content block as readable text."""
    if isinstance(block, str):
        return block
    if not isinstance(block, Mapping):
        return str(block)
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_use":
        payload = json.dumps(block.get("input", {}), ensure_ascii=False, default=str)
        return f"[tool_use {block.get('name', '?')} {payload}]"
    if kind == "tool_result":
        label = "tool_result (error)" if block.get("is_error") else "tool_result"
        return f"[{label} {block.get('tool_use_id', '?')}: {text_of(block.get('content', ''))}]"
    return f"[{kind}]"


def text_of(message_or_content: Any) -> str:
    """The readable text of a message, its content, or one block; tool blocks rendered inline. Taught in 02_history_list."""
    item = message_or_content
    if item is None:
        return ""
    if isinstance(item, str):
        return item
    if isinstance(item, Mapping):
        if "type" in item and "role" not in item:
            return _block_text(item)
        return text_of(item.get("content"))
    if isinstance(item, Sequence):
        return "\n".join(_block_text(block) for block in item)
    raise TypeError(f"text_of expects a message, a str or a list of content blocks, got {type(item).__name__}")


def is_tool_result_turn(message: Mapping[str, Any]) -> bool:
    """True for a user message carrying tool_result blocks (the API puts them first; text may follow). Taught in 02_history_list."""
    return message.get("role") == "user" and any(
        isinstance(b, Mapping) and b.get("type") == "tool_result" for b in _blocks(message)
    )


def starts_exchange(message: Mapping[str, Any]) -> bool:
    """True for a user turn that opens a new exchange (a user message that is not a tool result). Taught in 02_history_list."""
    return message.get("role") == "user" and not is_tool_result_turn(message)


def tool_use_ids(message: Mapping[str, Any]) -> set[str]:
    """The ids of the tool_use blocks in a message. Taught in 02_history_list."""
    return {b["id"] for b in _blocks(message) if isinstance(b, Mapping) and b.get("type") == "tool_use" and "id" in b}


def tool_result_ids(message: Mapping[str, Any]) -> set[str]:
    """The tool_use_ids answered by the tool_result blocks in a message. Taught in 02_history_list."""
    return {
        b["tool_use_id"]
        for b in _blocks(message)
        if isinstance(b, Mapping) and b.get("type") == "tool_result" and "tool_use_id" in b
    }


def group_exchanges(messages: Iterable[Message]) -> list[list[Message]]:
    """Split messages into exchanges: a user turn plus its replies, tool calls and tool results. Taught in 04_bounded_memory_mongodb.

    Anything before the first user turn (e.g. a leading assistant greeting) forms its own leading
    group. Concatenating the groups gives back the input: same objects, same order.
    """
    groups: list[list[Message]] = []
    for message in messages:
        if not groups or starts_exchange(message):
            groups.append([message])
        else:
            groups[-1].append(message)
    return groups


def _check_text(where: str, text: Any) -> None:
    """Raise if a text value is not a non-blank string."""
    if not isinstance(text, str):
        raise ValueError(f"{where}: text must be a str, got {type(text).__name__}")
    if not text.strip():
        raise ValueError(
            f"{where}: text is empty or whitespace-only; the API rejects blank text, so drop the message or give it text"
        )


def validate_messages(messages: Sequence[Message]) -> None:
    """Raise ValueError naming the first message the Messages API would reject. Taught in 02_history_list."""
    if not messages:
        raise ValueError("messages is empty; the Messages API needs at least one user message")
    previous: Mapping[str, Any] | None = None
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, Mapping):
            raise ValueError(f"{where}: expected a dict with 'role' and 'content', got {type(message).__name__}")
        role = message.get("role")
        if role not in ROLES:
            raise ValueError(f"{where}: unknown role {role!r}; use 'user' or 'assistant' (system text goes in system=)")
        if "content" not in message:
            raise ValueError(f"{where}: missing 'content'")
        content = message["content"]
        if isinstance(content, str):
            _check_text(where, content)
        elif isinstance(content, list):
            if not content:
                raise ValueError(f"{where}: content is an empty list; give it at least one block")
            for j, block in enumerate(content):
                _check_block(f"{where}.content[{j}]", role, block)
            answered = tool_result_ids(message)
            if answered:
                offered = (
                    tool_use_ids(previous) if previous is not None and previous.get("role") == "assistant" else set()
                )
                missing = sorted(answered - offered)
                if missing:
                    raise ValueError(
                        f"{where}: tool_result for {', '.join(missing)} has no matching tool_use in the "
                        f"immediately preceding assistant message; keep each tool_use and its tool_result together"
                    )
        else:
            raise ValueError(f"{where}: content must be a str or a list of blocks, got {type(content).__name__}")
        previous = message


def _check_block(where: str, role: str, block: Any) -> None:
    """Raise if one content block is malformed or sits in the wrong role."""
    if not isinstance(block, Mapping) or "type" not in block:
        raise ValueError(f"{where}: a content block must be a dict with a 'type'")
    kind = block["type"]
    if kind == "text":
        _check_text(where, block.get("text"))
    elif kind == "tool_use":
        if role != "assistant":
            raise ValueError(f"{where}: tool_use blocks belong in assistant messages, found in a {role} message")
        if not block.get("id") or not block.get("name"):
            raise ValueError(f"{where}: tool_use needs an 'id' and a 'name'")
    elif kind == "tool_result":
        if role != "user":
            raise ValueError(f"{where}: tool_result blocks belong in user messages, found in a {role} message")
        if not block.get("tool_use_id"):
            raise ValueError(f"{where}: tool_result needs a 'tool_use_id'")
        inner = block.get("content")
        if isinstance(inner, list):
            for k, part in enumerate(inner):
                if isinstance(part, Mapping) and part.get("type") == "text":
                    _check_text(f"{where}.content[{k}]", part.get("text"))


def strip_meta(message: Mapping[str, Any]) -> Message:
    """The message as the API accepts it: only 'role' and 'content' (stored keys like 'tokens' removed). Taught in 04_bounded_memory_mongodb."""
    return {"role": message["role"], "content": message["content"]}


def format_turns(messages: list[dict]) -> str:
    """Messages as plain `User: …` / `Assistant: …` lines (what the summariser and extractor read)."""
    lines = []
    for m in messages:
        who = "User" if m["role"] == "user" else "Assistant"
        lines.append(f"{who}: {' '.join(text_of(m).split())}")
    return "\n".join(lines)


def chat_turn(history: list[Message], text: str, ask: Callable[[list[Message]], str]) -> str:
    """One turn of the history list (02, the learner's first exercise): append the user's `text`, `ask` the model
    with the WHOLE list, append its reply as the assistant's message, and return the reply."""
    history.append({"role": "user", "content": text})
    reply = ask(history)
    history.append({"role": "assistant", "content": reply})
    return reply
