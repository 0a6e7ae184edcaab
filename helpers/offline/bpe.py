"""Plumbing: token counting for the offline model: a local BPE plus the documented framing overheads."""

from __future__ import annotations

import json
from functools import lru_cache

__all__ = [
    "count_text_tokens",
    "truncate_to_tokens",
    "request_tokens",
    "content_text",
    "system_text",
    "block_text",
    "without_cache_control",
    "REQUEST_OVERHEAD",
    "MESSAGE_OVERHEAD",
    "SYSTEM_OVERHEAD",
    "BLOCK_OVERHEAD",
    "TOOL_OVERHEAD",
]

# Fixed framing costs of a request, in tokens (documented in 03_context_window_overflow):
REQUEST_OVERHEAD = 3  # every request, even with no system prompt
SYSTEM_OVERHEAD = 2  # added once when a system prompt is present
MESSAGE_OVERHEAD = 4  # each message (role marker and turn separators)
BLOCK_OVERHEAD = 3  # each tool_use / tool_result block
TOOL_OVERHEAD = 8  # each tool definition offered in `tools` (plus its JSON)


# ---------------------------------------------------------------------------- tokens


@lru_cache(maxsize=200_000)
def count_text_tokens(text: str) -> int:
    """Tokens in `text` by the local Claude-2 BPE vocabulary (anthropic-tokenizer): an offline count.

    Memoised: a long conversation resends the same messages every turn, and the BPE costs ~0.5 ms a text."""
    import anthropic_tokenizer

    return anthropic_tokenizer.count_tokens(text) if text else 0


def truncate_to_tokens(text: str, limit: int) -> str:
    """The first `limit` tokens of `text`."""
    import anthropic_tokenizer

    ids = anthropic_tokenizer.encode(text)
    return anthropic_tokenizer.decode(ids[:limit]) if len(ids) > limit else text


def without_cache_control(item):
    """`item` without its `cache_control` marker: a breakpoint is not content and costs no tokens."""
    if isinstance(item, dict) and "cache_control" in item:
        return {k: v for k, v in item.items() if k != "cache_control"}
    return item


def block_text(block) -> str:
    """The text of one content block, as the offline model reads and counts it."""
    if isinstance(block, str):
        return block
    kind = block.get("type")
    if kind == "text":
        return block.get("text", "")
    if kind == "tool_use":
        return f"{block.get('name', '')} {json.dumps(block.get('input', {}), sort_keys=True)}"
    if kind == "tool_result":
        inner = block.get("content", "")
        return inner if isinstance(inner, str) else "\n".join(block_text(b) for b in inner)
    return json.dumps(without_cache_control(block), sort_keys=True)


def content_text(content) -> str:
    """The text of a message's content (string or blocks)."""
    if isinstance(content, str):
        return content
    return "\n".join(block_text(b) for b in content)


def system_text(system) -> str:
    """The text of a system prompt (string or blocks)."""
    if not system:
        return ""
    return system if isinstance(system, str) else "\n".join(block_text(b) for b in system)


def request_tokens(body: dict) -> int:
    """Input tokens of a Messages API request body, as `usage` and `count_tokens` report them."""
    total = REQUEST_OVERHEAD
    system = system_text(body.get("system"))
    if system:
        total += SYSTEM_OVERHEAD + count_text_tokens(system)
    for message in body.get("messages", []):
        content = message.get("content", "")
        total += MESSAGE_OVERHEAD
        if isinstance(content, str):
            total += count_text_tokens(content)
        else:
            for block in content:
                extra = BLOCK_OVERHEAD if isinstance(block, dict) and block.get("type") != "text" else 0
                total += extra + count_text_tokens(block_text(block))
    for tool in body.get("tools") or []:
        total += TOOL_OVERHEAD + count_text_tokens(json.dumps(without_cache_control(tool), sort_keys=True))
    return total
