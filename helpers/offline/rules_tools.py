"""Plumbing: the contract's rules on tools and tool_choice, and on thinking.

Each function is one rule of the table in helpers.offline.contract, which names its source.
"""

from __future__ import annotations

import hashlib
import re

from helpers.offline.call import Call, blocks_of, refuse

__all__ = [
    "tool_names",
    "custom_tool_schema",
    "tool_choice_needs_tools",
    "forced_tool_supported",
    "thinking_type_supported",
    "thinking_budget",
    "thinking_with_forced_tool",
    "thinking_sampling",
    "thinking_turn_starts_with_thinking",
    "offline_signature",
]

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
MIN_BUDGET = 1024


def _name(tool: dict) -> str | None:
    return tool.get("name")


def tool_names(call: Call) -> None:
    """A custom tool's name matches ^[a-zA-Z0-9_-]{1,128}$; tool names are unique."""
    seen = set()
    for i, tool in enumerate(call.tools):
        name = _name(tool)
        if tool.get("type") in (None, "custom") and not _NAME.match(name):
            raise refuse(f"tools.{i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'")
        if name is None:
            continue
        if name in seen:
            raise refuse("tools: Tool names must be unique.")
        seen.add(name)


def custom_tool_schema(call: Call) -> None:
    """A custom tool's input_schema is a JSON Schema object: `"type": "object"`."""
    for i, tool in enumerate(call.tools):
        if tool.get("type") in (None, "custom") and tool["input_schema"].get("type") != "object":
            raise refuse(f"tools.{i}.custom.input_schema.type: Input should be 'object'")


def tool_choice_needs_tools(call: Call) -> None:
    """`tool_choice` (other than "none") names a tool that `tools` offers, and only when tools are offered."""
    choice = call.body.get("tool_choice")
    if not choice or choice.get("type") == "none":
        return
    if not call.tools:
        raise refuse("tool_choice: tool_choice may only be specified while providing tools")
    if choice["type"] == "tool" and choice["name"] not in {_name(t) for t in call.tools}:
        raise refuse(f"tool_choice.tool.name: Tool '{choice['name']}' not found in provided tools")


def forced_tool_supported(call: Call) -> None:
    """Forcing a tool (tool_choice "any" or "tool") is refused by models that dropped it (Sonnet 5.5, Opus 5.5,
    Fable 5.1)."""
    if call.forced_tool and not call.model.forced_tool:
        raise refuse(f'tool_choice: forced tool use is not supported on {call.model.id}; use "auto" or "none"')


def thinking_type_supported(call: Call) -> None:
    """The thinking type is one the model takes: manual budgets (enabled) end with Opus 4.7, adaptive starts with
    the 4.6 generation, always-on models cannot disable it."""
    kind = call.thinking
    if kind is None or kind in call.model.thinking:
        return
    if kind == "enabled":
        raise refuse(
            f"thinking.type.enabled is not supported for {call.model.id}. Use thinking.type.adaptive and "
            "output_config.effort to control thinking behavior."
        )
    if kind == "adaptive":
        raise refuse(
            f"thinking.type.adaptive is not supported for {call.model.id}. Use thinking.type.enabled with "
            "budget_tokens."
        )
    raise refuse(f"thinking.type.disabled is not supported for {call.model.id}: its thinking is always on")


def thinking_budget(call: Call) -> None:
    """budget_tokens >= 1024 and below max_tokens (thinking tokens count toward max_tokens)."""
    if call.thinking != "enabled":
        return
    budget = int(float(call.body["thinking"]["budget_tokens"]))
    if budget < MIN_BUDGET:
        raise refuse(f"thinking.enabled.budget_tokens: Input should be greater than or equal to {MIN_BUDGET}")
    if call.endpoint == "create" and int(float(call.body["max_tokens"])) <= budget:
        raise refuse(
            "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at "
            "https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size"
        )


def thinking_with_forced_tool(call: Call) -> None:
    """Thinking is incompatible with a forced tool choice."""
    if call.thinks and call.forced_tool:
        raise refuse("Thinking may not be enabled when tool_choice forces tool use.")


def thinking_sampling(call: Call) -> None:
    """API 2023-06-01 with thinking: temperature only 1, no top_k, top_p within [0.95, 1]."""
    if call.version != "2023-06-01" or not call.thinks:
        return
    body = call.body
    if "temperature" in body and float(body["temperature"]) != 1:
        raise refuse(
            "`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation "
            "at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility"
        )
    if "top_k" in body:
        raise refuse(
            "`top_k` must be unset when thinking is enabled. Please consult our documentation at "
            "https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility"
        )
    if "top_p" in body and not 0.95 <= float(body["top_p"]) <= 1:
        raise refuse(
            "`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled. Please "
            "consult our documentation at https://docs.claude.com/en/docs/build-with-claude/"
            "extended-thinking#feature-compatibility"
        )


def offline_signature(thinking: str) -> str:
    """The signature the offline model puts on its own thinking blocks (and checks when they come back)."""
    return "offline-" + hashlib.sha256(f"offline-thinking\x00{thinking}".encode()).hexdigest()[:40]


def thinking_turn_starts_with_thinking(call: Call) -> None:
    """With thinking on, the assistant turn being continued (a final assistant message, or the one whose tool calls
    the last user message answers) starts with a thinking block, whose signature must be valid."""
    if not call.thinks or not call.messages:
        return
    msgs = call.messages
    at = None
    if msgs[-1]["role"] == "assistant":
        at = len(msgs) - 1
    elif len(msgs) > 1 and msgs[-2]["role"] == "assistant":
        last = blocks_of(msgs[-1]["content"])
        if last and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in last):
            at = len(msgs) - 2
    if at is None:
        return
    blocks = blocks_of(msgs[at]["content"])
    first = blocks[0] if blocks else {}
    kind = first.get("type") if isinstance(first, dict) else None
    if kind not in ("thinking", "redacted_thinking"):
        raise refuse(
            f"messages.{at}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{kind}`. When "
            "`thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the "
            "lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from "
            "previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at "
            "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
        )
    if kind == "thinking" and first["signature"] != offline_signature(first["thinking"]):
        raise refuse(f"messages.{at}.content.0: Invalid `signature` in `thinking` block")
