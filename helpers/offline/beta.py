"""Plumbing: the beta features the series uses (memory tool, context editing, compaction): their request rules, and
the hook through which a behaviour for them plugs into the offline model.

Requests come through `client.beta.messages.create / count_tokens / tool_runner`, which post to
`/v1/messages?beta=true` with an `anthropic-beta` header naming the betas. The rules (docs: memory tool
https://platform.claude.com/docs/en/agents-and-tools/tool-use/memory-tool, context editing
https://platform.claude.com/docs/en/build-with-claude/context-editing, compaction
https://platform.claude.com/docs/en/build-with-claude/compaction):

- `context_management.edits` with `clear_tool_uses_20250919` or `clear_thinking_20251015` needs the
  `context-management-2025-06-27` beta; with `compact_20260112`, the `compact-2026-01-12` beta.
- clear_tool_uses: `trigger` (input_tokens or tool_uses, value >= 1; default 100,000 input tokens), `keep` (tool
  uses, >= 0; default 3), `clear_at_least` (input tokens, >= 0), `exclude_tools` (names), `clear_tool_inputs`.
- clear_thinking: comes first among the edits, and needs thinking on; `keep` (thinking turns, >= 1, or "all").
- compact: `trigger` (input tokens, at least 50,000; default 150,000), `instructions`, `pause_after_compaction`;
  models from Claude Opus 4.6 on. A `compaction` block returned by the API may be sent back in later requests.
- each edit type at most once.
- the top-level `compaction` parameter (beta `compact-2026-09-04`: a compaction request) is not combined with
  `context_management`.

Behaviour is not here: what the model does with a memory tool, when it clears or compacts, is a `Behaviour`
registered on the OfflineModel (`OfflineModel(behaviours=[...])`). Without one, a request using these features is
answered like any other: a plain text reply, usage counted on the request as sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from helpers.offline import catalog
from helpers.offline.call import Call, refuse

__all__ = [
    "features_of",
    "context_management",
    "compaction_blocks",
    "compaction_request",
    "Behaviour",
    "Reply",
    "MEMORY",
    "COMPACTION_REQUEST",
    "CLEAR_TOOL_USES",
    "CLEAR_THINKING",
    "COMPACT",
    "BETA_FOR",
]

MEMORY, CLEAR_TOOL_USES, CLEAR_THINKING, COMPACT = "memory", "clear_tool_uses", "clear_thinking", "compact"
COMPACTION_REQUEST = "compaction_request"  # the top-level `compaction` parameter (beta compact-2026-09-04)
_EDITS = {
    "clear_tool_uses_20250919": CLEAR_TOOL_USES,
    "clear_thinking_20251015": CLEAR_THINKING,
    "compact_20260112": COMPACT,
}
BETA_FOR = {
    CLEAR_TOOL_USES: "context-management-2025-06-27",
    CLEAR_THINKING: "context-management-2025-06-27",
    COMPACT: "compact-2026-01-12",
}
MIN_COMPACT_TRIGGER = 50_000


def features_of(body: dict) -> frozenset:
    """The beta features a request uses: memory (the memory tool), clear_tool_uses, clear_thinking, compact."""
    found = set()
    if any(isinstance(t, dict) and t.get("type") == "memory_20250818" for t in body.get("tools") or []):
        found.add(MEMORY)
    edits = ((body.get("context_management") or {}).get("edits")) or []
    found |= {_EDITS[e["type"]] for e in edits if isinstance(e, dict) and e.get("type") in _EDITS}
    if body.get("compaction") is not None:
        found.add(COMPACTION_REQUEST)
    return frozenset(found)


def _compaction_supported(model_id: str) -> bool:
    """Compaction came with Claude Opus 4.6: every model since (the ones that take adaptive thinking) has it."""
    info = catalog.lookup(model_id)
    return bool(info and catalog.ADAPTIVE in info.thinking)


def context_management(call: Call) -> None:
    """context_management.edits: each edit's beta header, its ranges, clear_thinking first and with thinking on,
    compaction only on models that have it, each edit type once."""
    edits = (call.body.get("context_management") or {}).get("edits") or []
    seen = set()
    for k, edit in enumerate(edits):
        where = f"context_management.edits.{k}"
        kind = _EDITS[edit["type"]]
        if BETA_FOR[kind] not in call.betas:
            raise refuse(
                f"{where}: the '{edit['type']}' strategy requires the beta header 'anthropic-beta: {BETA_FOR[kind]}'"
            )
        if kind in seen:
            raise refuse(f"{where}: the '{edit['type']}' strategy may only be given once")
        seen.add(kind)
        trigger = edit.get("trigger")
        if kind == CLEAR_THINKING:
            if k != 0:
                raise refuse(f"{where}: clear_thinking_20251015 must be the first edit in context_management.edits")
            if not call.thinks:
                raise refuse(f"{where}: clear_thinking_20251015 requires thinking to be enabled")
            keep = edit.get("keep")
            if isinstance(keep, dict) and keep.get("type") == "thinking_turns" and int(keep["value"]) < 1:
                raise refuse(f"{where}.keep.value: Input should be greater than or equal to 1")
        if kind == CLEAR_TOOL_USES:
            if trigger is not None and int(trigger["value"]) < 1:
                raise refuse(f"{where}.trigger.value: Input should be greater than or equal to 1")
            for name in ("keep", "clear_at_least"):
                if edit.get(name) is not None and int(edit[name]["value"]) < 0:
                    raise refuse(f"{where}.{name}.value: Input should be greater than or equal to 0")
        if kind == COMPACT:
            if not _compaction_supported(call.model.id):
                raise refuse(f"{where}: compact_20260112 is not supported on {call.model.id}")
            if trigger is not None and int(trigger["value"]) < MIN_COMPACT_TRIGGER:
                raise refuse(f"{where}.trigger.value: Input should be greater than or equal to {MIN_COMPACT_TRIGGER}")


def compaction_request(call: Call) -> None:
    """The top-level `compaction` parameter (a compaction request: the reply is the summary's compaction block)
    needs the `compact-2026-09-04` beta and cannot be combined with `context_management`."""
    if call.body.get("compaction") is None:
        return
    if "compact-2026-09-04" not in call.betas:
        raise refuse("compaction: requires the beta header 'anthropic-beta: compact-2026-09-04'")
    if call.body.get("context_management") is not None:
        raise refuse("compaction: cannot be combined with context_management")


def compaction_blocks(call: Call) -> None:
    """A `compaction` block is one the API returned: only in assistant messages, its content never an empty
    string (null marks a failed compaction)."""
    for i, m in enumerate(call.messages):
        content = m["content"]
        for j, block in enumerate(content if isinstance(content, list) else []):
            if not isinstance(block, dict) or block.get("type") != "compaction":
                continue
            if m["role"] != "assistant":
                raise refuse(f"messages.{i}.content.{j}: `compaction` blocks can only be in `assistant` messages")
            if block.get("content") == "":
                raise refuse(f"messages.{i}.content.{j}.compaction.content: empty string content is not allowed")


# ---------------------------------------------------------------------------- the behaviour hook


@dataclass
class Reply:
    """What the offline model answers: content blocks, stop reason, extra top-level fields of the Message (e.g.
    `context_management` with the applied edits) and extra usage fields (e.g. `iterations`). `chat`: the last text
    block is a chat reply to the user, which the model pads to its `reply_tokens` and cuts to `max_tokens` after
    every behaviour has run (a tool call or a task's output is never padded)."""

    content: list[dict]
    stop_reason: str = "end_turn"
    extra: dict = field(default_factory=dict)
    usage: dict = field(default_factory=dict)
    chat: bool = False


class Behaviour:
    """A plug-in for a beta feature. Subclass it, set `feature` (MEMORY, CLEAR_TOOL_USES, CLEAR_THINKING, COMPACT
    or COMPACTION_REQUEST) and override what you need; register it with `OfflineModel(behaviours=[...])` or
    `model.behaviours.append(...)`. The offline model, for each request using the feature:

    1. `prepare(body)` -> the body the model reads and counts (e.g. old tool results cleared); default: as sent;
    2. answers that body as usual (the default Reply: a chat reply, or a task's output);
    3. `respond(body, default)` -> the Reply sent back (e.g. a memory-tool `tool_use` block, a compaction block,
       the `context_management` field); default: `default` unchanged.

    Both run after the contract's checks, so they see only valid requests; an exception they raise is a bug of
    the behaviour and surfaces as the API's 500 api_error.
    """

    feature: str = ""

    def applies(self, features: frozenset) -> bool:
        return self.feature in features

    def prepare(self, body: dict) -> dict:
        return body

    def respond(self, body: dict, default: Reply) -> Reply:
        return default
