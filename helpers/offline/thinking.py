"""Plumbing: the offline stand-in's thinking block: what it looked up in the request and why, said as the stand-in.

With thinking on, the API returns a thinking block before the reply. Its `display` decides what the block holds
(docs: https://platform.claude.com/docs/en/build-with-claude/extended-thinking, "Summarized thinking";
https://platform.claude.com/docs/en/about-claude/models/whats-new-claude-4-7#thinking-content-omitted-by-default):
"summarized", the default up to Claude Opus 4.6, Sonnet 4.6 and Haiku 4.5, gives a summary of the thinking;
"omitted", the default from Claude Opus 4.7 on, an empty `thinking` with only the signature. The stand-in does not
reason; its summary says so and names what it did: which lines of the request it found closest to the question, or
which tool or schema fixed the reply's form. Streamed as `thinking_delta` pieces, then one `signature_delta`.
"""

from __future__ import annotations

from helpers.offline.quote import closest_line

__all__ = ["display_of", "thinking_summary"]


def display_of(body: dict, default: str) -> str:
    """The request's `thinking.display`, or the model's default ("summarized" or "omitted")."""
    thinking = body.get("thinking")
    shown = thinking.get("display") if isinstance(thinking, dict) else None
    return shown or default


def thinking_summary(system: str, turns: list[tuple[str, str]], reply_content: list[dict]) -> str:
    """An honest summary of what the stand-in did for this request (it never pretends to have reasoned)."""
    last = next((text for role, text in reversed(turns) if role == "user"), "")
    users = sum(1 for role, _ in turns if role == "user")
    parts = [
        "I am the offline stand-in model, not a real model: I do not reason, I look things up in the request. "
        f"It holds {len(turns)} messages ({users} from the user) and a system prompt of {len(system.split())} words."
    ]
    calls = [b for b in reply_content if b.get("type") == "tool_use"]
    if calls:
        parts.append(
            f"The request has me call the tool {calls[0]['name']}, so I filled its input from its schema and the "
            "conversation's lines."
        )
    line = closest_line(last, system, [*turns[:-1], ("user", last)]) if last.strip() else None
    if line:
        parts.append(f'The line of the request closest to the last message is: "{line}".')
    elif last.strip():
        parts.append("No line of the request is close to the last message.")
    return " ".join(parts)
