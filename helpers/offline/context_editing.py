"""Plumbing: context editing offline: the `clear_tool_uses_20250919` strategy clears old tool results before the
model reads the request, and the response says what it cleared.

As the docs describe it (https://platform.claude.com/docs/en/build-with-claude/context-editing, beta header
`context-management-2025-06-27`; the request's fields are checked by helpers.offline.beta):

- `trigger`: clearing starts when the request exceeds it: `{"type": "input_tokens", "value": N}` (default 100,000)
  or `{"type": "tool_uses", "value": N}` (tool uses in the conversation);
- `keep` (default `{"type": "tool_uses", "value": 3}`): the newest tool uses are kept; the older ones are cleared,
  oldest first, each result replaced by placeholder text so the model knows it was removed;
- `clear_at_least` (`{"type": "input_tokens", "value": N}`): nothing is cleared unless at least that many tokens
  would be;
- `exclude_tools`: tool names whose uses are never cleared; `clear_tool_inputs` (true, or a list of tool names):
  the cleared uses' inputs are cleared too;
- the edit happens server-side: the client keeps and resends its full history; usage and count_tokens count the
  edited request (count_tokens adds `context_management.original_input_tokens`, the count before the edit); the
  response's `context_management.applied_edits` lists `{"type", "cleared_tool_uses", "cleared_input_tokens"}`
  (an empty list when the trigger was not reached).

Choices the docs leave open, stated: the placeholder's words are ours (the docs say only "placeholder text"); a
cleared input becomes `{}`; "exceeds" is strictly more than the trigger's value.
"""

from __future__ import annotations

from helpers.offline.beta import CLEAR_TOOL_USES, Behaviour, Reply
from helpers.offline.bpe import request_tokens

__all__ = ["ClearToolUses", "PLACEHOLDER", "DEFAULT_TRIGGER", "DEFAULT_KEEP", "APPLIED"]

PLACEHOLDER = "[tool result cleared by context editing to save context]"
DEFAULT_TRIGGER = {"type": "input_tokens", "value": 100_000}
DEFAULT_KEEP = 3
APPLIED = "_offline_applied_edits"  # where prepare leaves what it did for respond (a key no API field uses)
_TYPE = "clear_tool_uses_20250919"


def _edit(body: dict) -> dict:
    return next(e for e in body["context_management"]["edits"] if e.get("type") == _TYPE)


def _uses(messages: list[dict]) -> list[dict]:
    """Every tool_use block of the assistant's messages, oldest first."""
    return [
        b
        for m in messages
        if m["role"] == "assistant" and isinstance(m["content"], list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]


class ClearToolUses(Behaviour):
    """`clear_tool_uses_20250919` on the offline model (see the module docstring)."""

    feature = CLEAR_TOOL_USES

    def prepare(self, body: dict) -> dict:
        edit = _edit(body)
        trigger = edit.get("trigger") or DEFAULT_TRIGGER
        keep = int((edit.get("keep") or {"value": DEFAULT_KEEP})["value"])
        at_least = int((edit.get("clear_at_least") or {"value": 0})["value"])
        excluded = set(edit.get("exclude_tools") or [])
        inputs = edit.get("clear_tool_inputs") or False
        uses = _uses(body["messages"])
        before = request_tokens(body)
        size = len(uses) if trigger["type"] == "tool_uses" else before
        if size <= int(trigger["value"]):
            return {**body, APPLIED: []}
        clearable = [u for u in uses if u.get("name") not in excluded]
        doomed = {u["id"]: u.get("name") for u in clearable[: max(0, len(clearable) - keep)]}
        if not doomed:
            return {**body, APPLIED: []}

        def edited(block: dict) -> dict:
            if not isinstance(block, dict):
                return block
            if block.get("type") == "tool_result" and block.get("tool_use_id") in doomed:
                return {**block, "content": PLACEHOLDER}
            if block.get("type") == "tool_use" and block.get("id") in doomed:
                if inputs is True or (isinstance(inputs, list) and block.get("name") in inputs):
                    return {**block, "input": {}}
            return block

        messages = [
            {**m, "content": [edited(b) for b in m["content"]]} if isinstance(m["content"], list) else m
            for m in body["messages"]
        ]
        cleared = {**body, "messages": messages}
        saved = before - request_tokens(cleared)
        if saved < at_least:
            return {**body, APPLIED: []}  # clearing would free less than clear_at_least: nothing is cleared
        return {**cleared, APPLIED: [{"type": _TYPE, "cleared_tool_uses": len(doomed), "cleared_input_tokens": saved}]}

    def respond(self, body: dict, default: Reply) -> Reply:
        edits = default.extra.setdefault("context_management", {"applied_edits": []})["applied_edits"]
        edits.extend(body.get(APPLIED) or [])
        return default
