"""Plumbing: token counting for the offline model: a local BPE plus the documented framing overheads."""

from __future__ import annotations

import json
from functools import lru_cache

from helpers.offline.catalog import lookup
from helpers.offline.media import URL_IMAGE_SIZE, decode_base64, image_tokens, pdf_facts, sniff_image

__all__ = [
    "count_text_tokens",
    "block_tokens",
    "continued_turn",
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
    """The text of one content block, as the offline model reads (and, for tool calls and other blocks, counts) it:
    an image or a thinking block has none; a document, its text (a PDF's, read from the file)."""
    if isinstance(block, str):
        return block
    kind = block.get("type")
    if kind == "text":
        return block.get("text", "")
    if kind in ("image", "thinking", "redacted_thinking"):
        return ""
    if kind == "tool_use":
        return f"{block.get('name', '')} {json.dumps(block.get('input', {}), sort_keys=True)}"
    if kind in ("tool_result", "search_result"):
        inner = block.get("content", "")
        return inner if isinstance(inner, str) else "\n".join(block_text(b) for b in inner or [])
    if kind == "document":
        return _document_text(block.get("source") or {})
    if kind == "compaction":
        return block.get("content") or ""
    return json.dumps(without_cache_control(block), sort_keys=True)


def _document_text(source: dict) -> str:
    kind = source.get("type")
    if kind == "text":
        return source.get("data", "")
    if kind == "content":
        inner = source.get("content")
        return inner if isinstance(inner, str) else "\n".join(block_text(b) for b in inner or [])
    if kind == "base64":
        return _pdf_text(source.get("data", ""))
    return ""


@lru_cache(maxsize=64)
def _pdf_text(data: str) -> str:
    raw = decode_base64(data)
    facts = pdf_facts(raw) if raw else None
    return facts.text if facts else ""


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
    """Input tokens of a Messages API request body, as `usage` and `count_tokens` report them: the framing
    overheads, the system prompt, every message's blocks (block_tokens) and every tool definition."""
    info = lookup(body.get("model"))
    high_res = bool(info and info.high_res)
    total = REQUEST_OVERHEAD
    system = system_text(body.get("system"))
    if system:
        total += SYSTEM_OVERHEAD + count_text_tokens(system)
    messages = body.get("messages") or []
    live = continued_turn(messages)
    for i, message in enumerate(messages):
        content = message.get("content", "")
        total += MESSAGE_OVERHEAD
        if isinstance(content, str):
            total += count_text_tokens(content)
        else:
            total += sum(block_tokens(b, high_res=high_res, thinking_counts=i == live) for b in content)
    for tool in body.get("tools") or []:
        total += TOOL_OVERHEAD + count_text_tokens(json.dumps(without_cache_control(tool), sort_keys=True))
    return total


# ---------------------------------------------------------------------------- images, documents, thinking


@lru_cache(maxsize=256)
def _image_size(data: str) -> tuple[int, int]:
    raw = decode_base64(data)
    facts = sniff_image(raw) if raw else None
    return (facts.width, facts.height) if facts else URL_IMAGE_SIZE


@lru_cache(maxsize=64)
def _pdf_tokens(data: str, high_res: bool) -> int:
    raw = decode_base64(data)
    facts = pdf_facts(raw) if raw else None
    if facts is None:
        return 0
    return count_text_tokens(facts.text) + facts.pages * image_tokens(*facts.page_size, high_res=high_res)


def _source_tokens(block: dict, high_res: bool) -> int:
    """Tokens of an image or document block's source (a URL or a file the offline model cannot read counts as one
    full-size image or page)."""
    source = block.get("source") or {}
    kind = source.get("type")
    if block.get("type") == "image":
        size = _image_size(source["data"]) if kind == "base64" else URL_IMAGE_SIZE
        return image_tokens(*size, high_res=high_res)
    extra = count_text_tokens("\n".join(str(block.get(k) or "") for k in ("title", "context")).strip())
    if kind == "base64":
        return extra + _pdf_tokens(source["data"], high_res)
    if kind == "text":
        return extra + count_text_tokens(source.get("data", ""))
    if kind == "content":
        inner = source.get("content")
        if isinstance(inner, str):
            return extra + count_text_tokens(inner)
        return extra + sum(block_tokens(b, high_res=high_res) for b in inner or [])
    return extra + image_tokens(*URL_IMAGE_SIZE, high_res=high_res)


def block_tokens(block, *, high_res: bool = False, thinking_counts: bool = True) -> int:
    """Tokens of one content block: text by the BPE; a tool call or result, an image (by its pixel size), a document
    (by its text, and a PDF's pages as images), a thinking block (only in the turn being continued: earlier turns'
    thinking is dropped from the context) or any other block, plus BLOCK_OVERHEAD."""
    if isinstance(block, str):
        return count_text_tokens(block)
    kind = block.get("type")
    if kind == "text":
        return count_text_tokens(block.get("text", ""))
    if kind in ("thinking", "redacted_thinking"):
        if not thinking_counts:
            return 0
        return BLOCK_OVERHEAD + count_text_tokens(block.get("thinking") or block.get("data") or "")
    if kind in ("image", "document"):
        return BLOCK_OVERHEAD + _source_tokens(block, high_res)
    if kind == "tool_result" and isinstance(block.get("content"), list):
        inner = block["content"]
        text = "\n".join(b.get("text", "") for b in inner if isinstance(b, dict) and b.get("type") == "text")
        media = sum(
            block_tokens(b, high_res=high_res) for b in inner if isinstance(b, dict) and b.get("type") != "text"
        )
        return BLOCK_OVERHEAD + count_text_tokens(text) + media
    return BLOCK_OVERHEAD + count_text_tokens(block_text(block))


def continued_turn(messages: list) -> int | None:
    """The index of the assistant message the reply continues (a final assistant message, or the one whose tool
    calls the final user message answers), whose thinking blocks count; None when there is none."""
    if not messages:
        return None
    if messages[-1].get("role") == "assistant":
        return len(messages) - 1
    last = messages[-1].get("content")
    if (
        len(messages) > 1
        and messages[-2].get("role") == "assistant"
        and isinstance(last, list)
        and last
        and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in last)
    ):
        return len(messages) - 2
    return None
