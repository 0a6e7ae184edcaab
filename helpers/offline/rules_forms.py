"""Plumbing: the contract's rules for a reply whose form the request fixes: tool schemas, strict tools, structured
outputs and the `max_tokens: 0` pre-warm (each in helpers.offline.contract's RULES with its docs URL).

- every custom tool's `input_schema` and `output_config.format.schema` is a JSON Schema (checked with the
  `jsonschema` package's own meta-schema check), and each of a tool's `input_examples` is valid against it;
- at most 20 tools are `strict`; not every tool is deferred (`defer_loading`);
- structured outputs (`output_config.format`) cannot continue a prefilled assistant message;
- `max_tokens: 0` (a cache pre-warm) generates nothing, so it cannot stream, fix a format or force a tool;
- a mid-conversation system message sits right after a user turn and before an assistant turn (or last);
- where a model lets thinking be disabled only up to an effort level, not above it.
"""

from __future__ import annotations

import functools
import sys
from types import ModuleType

from helpers.offline.call import Call, refuse
from helpers.offline.rules_messages import final_assistant

__all__ = [
    "schemas_valid",
    "input_examples_valid",
    "strict_tool_count",
    "not_all_deferred",
    "format_without_prefill",
    "prewarm_generates_nothing",
    "system_message_placement",
    "thinking_disabled_at_effort",
    "MAX_STRICT_TOOLS",
    "jsonschema_module",
]


@functools.cache
def jsonschema_module() -> ModuleType:
    """The `jsonschema` package, imported on first use and without its optional IRI format checker: that checker's
    package (rfc3987_syntax, installed for Jupyter) builds a grammar at import, over a second in every process that
    checks a schema, and no rule here checks the `iri` format."""
    if "jsonschema" in sys.modules:
        return sys.modules["jsonschema"]
    block = "rfc3987_syntax" not in sys.modules
    if block:
        sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]  # jsonschema skips the checker on ImportError
    try:
        import jsonschema
    finally:
        if block:
            del sys.modules["rfc3987_syntax"]  # a later import of rfc3987_syntax elsewhere works as usual
    return jsonschema


MAX_STRICT_TOOLS = 20


def _format(call: Call) -> dict | None:
    fmt = (call.body.get("output_config") or {}).get("format")
    return fmt if isinstance(fmt, dict) else None


def _schema_error(schema) -> str | None:
    jsonschema = jsonschema_module()
    try:
        jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator).check_schema(schema)
    except jsonschema.SchemaError as exc:
        return exc.message
    except Exception as exc:  # noqa: BLE001 - any schema the validator cannot even read is invalid
        return str(exc)
    return None


def schemas_valid(call: Call) -> None:
    """A custom tool's `input_schema` and the structured-outputs schema are valid JSON Schema."""
    for i, tool in enumerate(call.tools):
        if isinstance(tool, dict) and tool.get("type") in (None, "custom") and "input_schema" in tool:
            error = _schema_error(tool["input_schema"])
            if error:
                raise refuse(f"tools.{i}.custom.input_schema: JSON schema is invalid: {error}")
    fmt = _format(call)
    if fmt and fmt.get("type") == "json_schema":
        error = _schema_error(fmt.get("schema"))
        if error:
            raise refuse(f"output_config.format.schema: JSON schema is invalid: {error}")


def input_examples_valid(call: Call) -> None:
    """Each of a tool's `input_examples` is valid against the tool's `input_schema`."""
    for i, tool in enumerate(call.tools):
        for j, example in enumerate(tool.get("input_examples") or [] if isinstance(tool, dict) else []):
            jsonschema = jsonschema_module()
            try:
                jsonschema.validate(example, tool.get("input_schema") or {})
            except jsonschema.ValidationError as exc:
                raise refuse(
                    f"tools.{i}.custom.input_examples.{j}: example does not match the tool's input_schema: "
                    f"{exc.message}"
                ) from None


def strict_tool_count(call: Call) -> None:
    """At most 20 strict tools in one request."""
    strict = sum(1 for t in call.tools if isinstance(t, dict) and t.get("strict") is True)
    if strict > MAX_STRICT_TOOLS:
        raise refuse(f"tools: at most {MAX_STRICT_TOOLS} tools may set strict: true, got {strict}")


def not_all_deferred(call: Call) -> None:
    """At least one tool is loaded up front: a request whose every tool sets `defer_loading` is refused."""
    tools = [t for t in call.tools if isinstance(t, dict)]
    if tools and all(t.get("defer_loading") is True for t in tools):
        raise refuse("tools: at least one tool must not set defer_loading: true")


def format_without_prefill(call: Call) -> None:
    """Structured outputs (`output_config.format`) do not continue a prefilled assistant message."""
    last = final_assistant(call)
    if _format(call) and last is not None and last.get("content"):
        raise refuse("output_config.format: structured outputs cannot be used with a prefilled assistant message")


def prewarm_generates_nothing(call: Call) -> None:
    """`max_tokens: 0` (a cache pre-warm) is refused with `stream`, `output_config.format` or a forced tool_choice."""
    try:
        zero = int(float(call.body.get("max_tokens", 1))) == 0
    except (TypeError, ValueError):
        return
    if not zero:
        return
    for field, used in (
        ("stream", bool(call.body.get("stream"))),
        ("output_config.format", _format(call) is not None),
        ("tool_choice", call.forced_tool),
    ):
        if used:
            raise refuse(f"max_tokens: 0 cannot be combined with {field}: a pre-warm request generates nothing")


def _ends_in_server_tool_use(message: dict) -> bool:
    content = message.get("content")
    last = content[-1] if isinstance(content, list) and content else None
    return isinstance(last, dict) and last.get("type") == "server_tool_use"


def system_message_placement(call: Call) -> None:
    """A mid-conversation `{"role": "system"}` message immediately follows a user message (or an assistant message
    ending in a server tool use), and is last or followed by an assistant turn."""
    messages = call.messages
    for i, m in enumerate(messages):
        if m.get("role") != "system":
            continue
        before = messages[i - 1] if i else None
        after = messages[i + 1] if i + 1 < len(messages) else None
        if before is None or not (
            before.get("role") == "user" or (before.get("role") == "assistant" and _ends_in_server_tool_use(before))
        ):
            raise refuse(
                f"messages.{i}: a system message must immediately follow a user message or an assistant message "
                "ending in server tool use"
            )
        if after is not None and after.get("role") != "assistant":
            raise refuse(f"messages.{i}: a system message must be the last message or be followed by an assistant turn")


_LEVELS = ("low", "medium", "high", "xhigh", "max")


def thinking_disabled_at_effort(call: Call) -> None:
    """Where a model lets thinking be disabled only up to an effort level (Claude Opus 5, Haiku 5.5: "high"),
    `thinking: {"type": "disabled"}` with a higher `output_config.effort` is refused."""
    cap = call.model.disable_up_to
    effort = (call.body.get("output_config") or {}).get("effort")
    if cap and call.thinking == "disabled" and effort in _LEVELS and _LEVELS.index(effort) > _LEVELS.index(cap):
        raise refuse(
            f'thinking.type: "disabled" is only supported at output_config.effort "{cap}" or lower on '
            f'{call.model.id}; lower the effort or use thinking.type "adaptive"'
        )
