"""Structured model output through tool use: force a tool, validate its input against the schema. Taught in further/03_summary_internals, section 'The retention check'.

Every helper that needs data back from the model (fact extraction, fact reconciliation) offers one
tool with an `input_schema` and forces it with `tool_choice`. The reply's `tool_use` input is then
checked here, client-side, against that schema; anything else (text instead of a tool call, a missing
field, a wrong type) raises `ToolOutputError`. It subclasses `anthropic.APIError`, so callers that already
keep work pending on a failed model call (a summary merge, a background memory job) do the same here:
nothing is silently read as "no facts" or "no change".
"""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2

from helpers.conversation import reply_text

__all__ = ["ToolOutputError", "schema_errors", "call_tool"]


class ToolOutputError(anthropic.APIError):
    """The model did not call the forced tool, or its input does not match the tool's input_schema."""

    def __init__(self, tool: str, problem: str, received: Any = None):
        message = (
            f"the model's {tool!r} tool call was unusable: {problem}. Nothing was applied; the caller keeps "
            f"the work pending (check the model setting, or retry later)"
        )
        super().__init__(message, httpx2.Request("POST", "https://api.anthropic.com/v1/messages"), body=received)
        self.tool, self.problem, self.received = tool, problem, received


_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "number": (int, float), "null": type(None)}


def schema_errors(value: Any, schema: dict, path: str = "input") -> list[str]:
    """Where `value` breaks `schema` (the JSON-schema subset tool schemas use: type, properties, required,
    additionalProperties, items, minimum, minItems, maxItems, minLength, enum); [] when it conforms."""
    kind = schema.get("type")
    if kind == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            return [f"{path}: expected an integer, got {type(value).__name__}"]
    elif kind in _TYPES:
        if not isinstance(value, _TYPES[kind]) or (kind == "number" and isinstance(value, bool)):
            return [f"{path}: expected {kind}, got {type(value).__name__}"]
    errors: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        errors += [f"{path}.{key}: required" for key in schema.get("required", []) if key not in value]
        if schema.get("additionalProperties") is False:
            errors += [f"{path}.{key}: not allowed" for key in value if key not in props]
        for key, sub in props.items():
            if key in value:
                errors += schema_errors(value[key], sub, f"{path}.{key}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: more than {schema['maxItems']} items")
        if "items" in schema:
            for i, item in enumerate(value):
                errors += schema_errors(item, schema["items"], f"{path}[{i}]")
    if (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and "minimum" in schema
        and value < schema["minimum"]
    ):
        errors.append(f"{path}: {value} is below the minimum {schema['minimum']}")
    if isinstance(value, str) and len(value) < schema.get("minLength", 0):
        errors.append(f"{path}: shorter than {schema['minLength']} characters")
    return errors


def call_tool(
    client: anthropic.Anthropic,
    *,
    model: str,
    max_tokens: int,
    system: str,
    content: str,
    tool: dict,
    ledger=None,
    purpose: str = "tool",
) -> dict:
    """One forced tool call: returns the tool's validated input, or raises ToolOutputError (SDK errors pass through)."""
    reply = client.messages.create(
        model=model,
        max_tokens=max_tokens,
        system=system,
        tools=[tool],
        tool_choice={"type": "tool", "name": tool["name"]},
        messages=[{"role": "user", "content": content}],
    )
    if ledger is not None:
        ledger.record(purpose, reply.model, reply.usage)
    calls = [b for b in reply.content if b.type == "tool_use" and b.name == tool["name"]]
    if not calls:
        said = reply_text(reply)[:200]
        raise ToolOutputError(
            tool["name"],
            f"no tool call in the reply (stop_reason {getattr(reply, 'stop_reason', None)!r}; text {said!r})",
        )
    data = calls[0].input
    problems = schema_errors(data, tool["input_schema"])
    if problems:
        raise ToolOutputError(tool["name"], "; ".join(problems[:5]), data)
    return data
