"""Plumbing: a reply as the Messages API streams it, in server-sent events.

https://platform.claude.com/docs/en/build-with-claude/streaming: `message_start` (the Message with empty content and
the input usage), a `ping`, then per content block `content_block_start`, its deltas (`text_delta`;
`input_json_delta` pieces of a tool_use input's JSON; `thinking_delta` and `signature_delta`) and
`content_block_stop`, then `message_delta` (stop_reason, stop_sequence, the output usage; with context editing its
`context_management`, with compaction the usage's `iterations`) and `message_stop`. A `compaction` block starts
empty and arrives in one `compaction_delta` (the compaction docs, "Streaming").
An error after the 200 (the `midstream` fault) is an `error` event, as the docs say, and the stream ends there.
"""

from __future__ import annotations

import json
import re

__all__ = ["sse_events", "encode", "error_event"]

_PIECE = re.compile(r"\S+\s*|\s+")  # text goes out a few words per delta, as a live stream does


def _chunks(text: str, words: int = 3) -> list[str]:
    parts = _PIECE.findall(text)
    return ["".join(parts[i : i + words]) for i in range(0, len(parts), words)] or [""]


def _start_block(block: dict) -> dict:
    kind = block["type"]
    if kind == "text":
        return {"type": "text", "text": ""}
    if kind == "tool_use":
        return {**block, "input": {}}
    if kind == "thinking":
        return {"type": "thinking", "thinking": "", "signature": ""}
    if kind == "compaction":
        return {"type": "compaction", "content": None}
    return block  # any other block arrives whole in its start event


def _deltas(block: dict) -> list[dict]:
    kind = block["type"]
    if kind == "text":
        return [{"type": "text_delta", "text": c} for c in _chunks(block["text"])]
    if kind == "tool_use":
        raw = json.dumps(block["input"], ensure_ascii=False)
        return [{"type": "input_json_delta", "partial_json": raw[i : i + 24]} for i in range(0, len(raw), 24)] or [
            {"type": "input_json_delta", "partial_json": ""}
        ]
    if kind == "thinking":
        out = (
            [{"type": "thinking_delta", "thinking": c} for c in _chunks(block["thinking"])] if block["thinking"] else []
        )
        return [*out, {"type": "signature_delta", "signature": block["signature"]}]
    if kind == "compaction":
        return [{"type": "compaction_delta", "content": block.get("content")}]
    return []


def sse_events(message: dict) -> list[tuple[str, dict]]:
    """The (event, data) pairs that stream `message` (a complete Message dict)."""
    usage = message["usage"]
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": 1},
    }
    events: list[tuple[str, dict]] = [
        ("message_start", {"type": "message_start", "message": start}),
        ("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(message["content"]):
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": _start_block(block)},
            )
        )
        for delta in _deltas(block):
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    delta_usage = {
        k: usage[k]
        for k in (
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
            "output_tokens",
            "iterations",
        )
        if k in usage
    }
    delta = {
        "type": "message_delta",
        "delta": {
            "stop_reason": message["stop_reason"],
            "stop_sequence": message.get("stop_sequence"),
            "stop_details": message.get("stop_details"),
        },
        "usage": delta_usage,
    }
    if message.get("context_management") is not None:
        delta["context_management"] = message["context_management"]
    events.append(("message_delta", delta))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def error_event(kind: str, message: str) -> tuple[str, dict]:
    return "error", {"type": "error", "error": {"type": kind, "message": message}}


def encode(events: list[tuple[str, dict]]) -> bytes:
    """The events as the bytes of a text/event-stream body."""
    return "".join(f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n" for name, data in events).encode()
