"""Memory tool and platform context management. Taught in further/07_platform_memory, section 'Compaction that fires'.

Three pieces the going-further notebook runs, each as the docs describe it:

- `long_transcript(texts)` and `compaction_request(...)`: a long chat built from a script of user messages (a
  transcript: the user's turns, Scout's replies elided), sent with `compact_20260112` so a request past the trigger is compacted
  (https://platform.claude.com/docs/en/build-with-claude/compaction-threshold, beta `compact-2026-01-12`; models
  from claude-sonnet-4-6 and claude-opus-4-6 on, not claude-haiku-4-5);
- `EditedConversation`: one conversation with the memory tool and `clear_tool_uses_20250919`
  (https://platform.claude.com/docs/en/build-with-claude/context-editing, beta `context-management-2025-06-27`): the
  application keeps and resends the whole history, tool traffic included; past the trigger the API clears the old
  tool results, and what the model still needs it reads again from its files;
- `PinnedProfile`: memory pinned in context: the model edits its small profile (its `/memories` files) with the
  memory tool, and the application pins those files into the system prompt every turn, labelled, as `view` shows
  them (the "core memory" block of Letta / MemGPT), against the memory tool alone, where the model reads its files
  on demand with `view`. A pinned file is capped at `PIN_LIMIT` characters: a block in every request must stay small.
"""

from __future__ import annotations

from typing import Any

import anthropic

from helpers.config import Settings
from helpers.memory_tool.backend import MongoMemoryTool
from helpers.memory_tool.loop import ToolLoop, run_tool_loop
from helpers.prompts import MEMORY_TOOL_GUIDANCE, SCOUT_PERSONA, neutralise_tags

__all__ = [
    "COMPACTION_MODEL",
    "COMPACT_BETA",
    "EDITING_BETA",
    "ELIDED",
    "PIN_LIMIT",
    "long_transcript",
    "compaction_request",
    "EditedConversation",
    "PinnedProfile",
]

COMPACTION_MODEL = "claude-sonnet-4-6"  # has compact_20260112; the series' default, claude-haiku-4-5, does not
COMPACT_BETA = "compact-2026-01-12"
EDITING_BETA = "context-management-2025-06-27"
ELIDED = "(Scout's reply, elided from this transcript)"
PIN_LIMIT = 2_000  # characters of one pinned file: a block in every request stays small


def long_transcript(texts: list[str]) -> list[dict]:
    """User messages (a scripted chat's) as a conversation, each followed by an elided assistant reply."""
    messages: list[dict] = []
    for text in texts:
        messages += [{"role": "user", "content": text}, {"role": "assistant", "content": ELIDED}]
    return messages


def compaction_request(messages: list[dict], *, trigger: int = 50_000, model: str = COMPACTION_MODEL) -> dict:
    """A request with server-side compaction at `trigger` input tokens (50,000 is the documented minimum)."""
    edit = {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": trigger}}
    return {
        "model": model,
        "system": SCOUT_PERSONA,
        "messages": messages,
        "betas": [COMPACT_BETA],
        "context_management": {"edits": [edit]},
    }


def _sent(block: Any) -> dict:
    out = block.to_dict(exclude_none=True)
    out.pop("parsed_output", None)
    return out


class EditedConversation:
    """One conversation: the memory tool plus context editing (`edit`, a `clear_tool_uses_20250919` entry)."""

    def __init__(
        self, client: anthropic.Anthropic, settings: Settings, tool: MongoMemoryTool, *, edit: dict,
        max_tokens: int = 400,
    ):  # fmt: skip
        self.client, self.settings, self.tool, self.edit, self.max_tokens = client, settings, tool, edit, max_tokens
        self.messages: list[dict] = []  # the whole history, tool uses and results included: the API edits its copy
        self.applied: list[list[dict]] = []  # per turn: the edits the API applied to each of its requests
        self.reads: list[list[tuple[dict, str]]] = []  # per turn: (command, result) of every command it ran

    def turn(self, text: str) -> ToolLoop:
        self.tool.reset()
        request = {
            "model": self.settings.chat_model,
            "max_tokens": self.max_tokens,
            "system": f"{SCOUT_PERSONA}\n\n{MEMORY_TOOL_GUIDANCE}",
            "messages": [*self.messages, {"role": "user", "content": text}],
            "tools": [self.tool.to_dict()],
            "betas": [EDITING_BETA],
            "context_management": {"edits": [self.edit]},
        }
        loop = run_tool_loop(self.client, request, self.tool)
        final = {"role": "assistant", "content": [_sent(b) for b in loop.final.content]}
        self.messages = [*loop.final_request["messages"], final]
        self.applied.append([e.to_dict() for m in loop.messages for e in (m.context_management or _NO).applied_edits])
        self.reads.append(_commands_and_results(loop.final_request["messages"][len(request["messages"]) :]))
        return loop


class _NoEdits:
    applied_edits: list = []


_NO = _NoEdits()


def _commands_and_results(messages: list[dict]) -> list[tuple[dict, str]]:
    """(tool input, result text) of every tool use in `messages` (one turn's tool traffic)."""
    uses = {b["id"]: b["input"] for m in messages for b in m["content"] if b.get("type") == "tool_use"}
    out = []
    for m in messages:
        for b in m["content"]:
            if b.get("type") == "tool_result":
                content = b.get("content")
                text = content if isinstance(content, str) else "".join(c.get("text", "") for c in content or [])
                out.append((uses.get(b["tool_use_id"], {}), text))
    return out


class PinnedProfile:
    """Memory pinned in context: each turn the application reads the user's memory files and pins them, labelled, in
    the system prompt; the model edits them with the memory tool. `pinned=False`: the memory tool alone."""

    def __init__(self, client: anthropic.Anthropic, settings: Settings, tool: MongoMemoryTool, *, pinned: bool = True):
        self.client, self.settings, self.tool, self.pinned = client, settings, tool, pinned
        self.turns: list[dict] = []  # per turn: requests, tool calls, input tokens per request

    def system_prompt(self) -> str:
        base = f"{SCOUT_PERSONA}\n\n{MEMORY_TOOL_GUIDANCE}"
        if not self.pinned:
            return base
        blocks = []
        for file in self.tool.files():
            text = self.tool.read(file.path)[:PIN_LIMIT]
            numbered = "".join(f"{n:6}\t{line}\n" for n, line in enumerate(text.splitlines(), 1))
            blocks.append(f'<memory_file path="{file.path}">\n{neutralise_tags(numbered)}</memory_file>')
        return "\n\n".join([base, *blocks])

    def turn(self, text: str) -> ToolLoop:
        self.tool.reset()
        request = {
            "model": self.settings.chat_model,
            "max_tokens": 400,
            "system": self.system_prompt(),
            "messages": [{"role": "user", "content": text}],
            "tools": [self.tool.to_dict()],
        }
        loop = run_tool_loop(self.client, request, self.tool)
        tokens = [m.usage.input_tokens for m in loop.messages]
        self.turns.append({"requests": len(loop.messages), "tool_calls": len(self.tool.commands), "input": tokens})
        return loop
