"""Plumbing: what the offline stand-in says when the request fixes its form: a forced tool call, a JSON schema, stops.

- `tool_choice` `{"type": "tool", "name": ...}` or `{"type": "any"}` (docs: define-tools, "Forcing tool use"): the
  reply is one `tool_use` block (one call: `disable_parallel_tool_use` or not, the stand-in never calls in parallel)
  and stop_reason "tool_use". For "any", the tool is the custom tool whose name and description are closest in
  meaning to the user's last message.
- `output_config.format` `{"type": "json_schema", "schema": ...}` (docs: structured-outputs): the reply's text is JSON
  valid against the schema.
- The input (or the JSON) is filled from the schema alone (`fill`): a property whose name or description is close
  to a line of the user's messages takes its value from that line (a number from a line with a number, a string
  from the line itself), every other required property a type-correct default (an enum's first value, a minimum).
  Every result is checked with the `jsonschema` package; nothing here knows any tool's name or schema.
- `stop_sequences` (docs: messages, "stop_sequences"; handling-stop-reasons): a text reply is cut before the first
  stop sequence it holds, with stop_reason "stop_sequence" and `stop_sequence` the one that matched.
"""

from __future__ import annotations

import hashlib
import json
import re

from helpers.offline import lexicon
from helpers.offline.answer import cosine

__all__ = ["fill", "forced_tool_use", "structured_text", "cut_at_stop", "pick_tool", "MATCH_MIN"]

MATCH_MIN = 0.35  # MiniLM cosine at which a property's name and description are about a line of the conversation
NUMBER_MIN = 0.15  # ... and about the words around a number in it
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _words(name: str) -> str:
    """A property name as words: "user_name" / "userName" -> "user name"."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])|[_\-.]+", " ", name).strip().lower()


def _resolve(schema: dict, root: dict) -> dict:
    """A local `$ref` ("#/$defs/Item") resolved against the root schema."""
    seen = 0
    while isinstance(schema, dict) and "$ref" in schema and seen < 20:
        node = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node.get(part, {}) if isinstance(node, dict) else {}
        schema, seen = node, seen + 1
    return schema if isinstance(schema, dict) else {}


def _line_for(about: str, lines: list[str]) -> str | None:
    """The conversation line closest to a property's name and description, when it is close enough."""
    if not about.strip() or not lines:
        return None
    scored = [(cosine(about, line), -i, line) for i, line in enumerate(lines)]
    best = max(scored)
    return best[2] if best[0] >= MATCH_MIN else None


def _said_value(about: str, lines: list[str]) -> str | None:
    """A value the conversation gives for a property: "my <name> is X" / "<name>: X", or a word the lexicon says is
    a kind of thing the property names ("Portland" for "city")."""
    head = about.split()[:3]
    if not head:
        return None
    named = re.escape(" ".join(head[:2]) if len(head) > 1 and head[1] not in ("the", "a", "an") else head[0])
    for line in lines:
        m = re.search(rf"(?i)\b{named}\s*(?:is|was|are|:|=)\s+([\w@.'-]+(?:\s+[A-Z][\w'-]*)*)", line)
        if m:
            return m.group(1).rstrip(".,;")
    if {"time", "when", "hour"} & set(head):  # a clock time said ("at 7pm", "19:30")
        for line in lines:
            m = re.search(r"(?i)\b\d{1,2}(?:[:.]\d\d)?\s*(?:am|pm)\b|\b\d{1,2}:\d\d\b", line)
            if m:
                return m.group(0)
    kinds = head[:2]
    for line in lines:
        for w in re.findall(r"[A-Za-z][\w'-]+", line):
            if w[:1].isupper() and any(lexicon.is_a(w, k) for k in kinds if len(k) > 2):
                return w
    return None


def _number_for(about: str, lines: list[str]) -> float | None:
    """The number in the conversation whose neighbouring words are closest to the property ("a table for 4" for
    party size), when one is close enough."""
    best: tuple[float, float] | None = None
    for line in lines:
        toks = re.findall(r"-?\d+(?:\.\d+)?|[A-Za-z][\w'-]*", line)
        for i, t in enumerate(toks):
            if _NUMBER.fullmatch(t):
                near = " ".join(x for x in toks[max(0, i - 3) : i + 3] if not _NUMBER.fullmatch(x))
                score = cosine(about, near) if near else 0.0
                if best is None or score > best[0]:
                    best = (score, float(t))
    return best[1] if best and best[0] >= NUMBER_MIN else None


def _string(schema: dict, line: str | None) -> str:
    low, high = int(schema.get("minLength", 0)), schema.get("maxLength")
    text = line or ""
    if schema.get("format") in ("date", "date-time", "time", "email", "uri", "uuid"):
        text = {
            "date": "2026-01-01",
            "date-time": "2026-01-01T00:00:00Z",
            "time": "00:00:00Z",
            "email": "user@example.com",
            "uri": "https://example.com",
            "uuid": "00000000-0000-4000-8000-000000000000",
        }[schema["format"]]
    if schema.get("pattern"):  # a string the pattern allows, out of the line, or none
        found = re.search(schema["pattern"], line or "")
        text = found.group(0) if found else ""
    text = text + "x" * max(0, low - len(text))
    return text[: int(high)] if high is not None else text


def _number(schema: dict, line: str | None, integer: bool) -> int | float:
    found = _NUMBER.findall(line or "")
    value = float(found[0]) if found else float(schema.get("minimum", schema.get("exclusiveMinimum", 0)))
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        value = schema["exclusiveMinimum"] + 1
    if "minimum" in schema:
        value = max(value, schema["minimum"])
    if "maximum" in schema:
        value = min(value, schema["maximum"])
    if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
        value = schema["exclusiveMaximum"] - 1
    return int(value) if integer else value


def fill(schema: dict, lines: list[str], about: str = "", root: dict | None = None, depth: int = 0):
    """A value valid against `schema`, taken from the conversation `lines` where the schema is about one of them."""
    root = root if root is not None else schema
    schema = _resolve(schema, root)
    about = " ".join(p for p in (about, schema.get("description", "")) if p).strip()
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        text = " ".join(lines).lower()
        return next((v for v in schema["enum"] if isinstance(v, str) and v.lower() in text), schema["enum"][0])
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return fill(schema[key][0], lines, about, root, depth + 1)
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" and depth < 8:
        props = schema.get("properties") or {}
        wanted = list(schema.get("required") or props)
        return {name: fill(props.get(name, {}), lines, _words(name), root, depth + 1) for name in wanted}
    if kind == "array":
        count = int(schema.get("minItems", 1 if depth < 8 and schema.get("items") else 0))
        return [fill(schema.get("items") or {}, lines, about, root, depth + 1) for _ in range(count)]
    if kind in ("integer", "number"):
        found = _number_for(about, lines) if about else None
        return _number(schema, None if found is None else f"{found:g}", kind == "integer")
    line = (_said_value(about, lines) or _line_for(about, lines)) if about else None
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return _string(schema, line)


def checked_fill(schema: dict, lines: list[str]):
    """`fill`, checked with `jsonschema`; a value the conversation made invalid (a `pattern`, a format) is filled again
    from the schema alone. (A schema no value of `fill` satisfies, a `pattern` no line of the conversation matches,
    gets that best try: the contract has already refused every schema that is not valid JSON Schema.)"""
    from helpers.offline.rules_forms import jsonschema_module

    value = fill(schema, lines)
    if not jsonschema_module().Draft202012Validator(schema).is_valid(value):
        value = fill(schema, [])
    return value


def pick_tool(tools: list[dict], choice: dict, last_user: str) -> dict | None:
    """The tool `tool_choice` forces: the one it names, or ("any") the custom tool closest to the user's message."""
    custom = [t for t in tools if isinstance(t, dict) and "input_schema" in t]
    if choice.get("type") == "tool":
        return next((t for t in tools if t.get("name") == choice.get("name")), None)
    if not custom:
        return None
    return max(
        custom, key=lambda t: (cosine(last_user, f"{_words(t['name'])} {t.get('description', '')}"), -tools.index(t))
    )


def forced_tool_use(tools: list[dict], choice: dict, lines: list[str], last_user: str) -> dict | None:
    """The one `tool_use` block a forced `tool_choice` makes, or None when the forced tool has no input schema."""
    tool = pick_tool(tools, choice, last_user)
    if tool is None or "input_schema" not in tool:
        return None
    data = checked_fill(tool["input_schema"], lines)
    digest = hashlib.sha256(json.dumps([tool["name"], data], sort_keys=True).encode()).hexdigest()[:20]
    return {"type": "tool_use", "id": f"toolu_offline_{digest}", "name": tool["name"], "input": data}


def structured_text(output_format: dict, lines: list[str]) -> str | None:
    """The reply's text for `output_config.format` (JSON valid against its schema), or None for another format."""
    if not isinstance(output_format, dict) or output_format.get("type") != "json_schema":
        return None
    return json.dumps(checked_fill(output_format.get("schema") or {}, lines), ensure_ascii=False)


def cut_at_stop(text: str, stops: list[str]) -> tuple[str, str | None]:
    """`text` cut before the first stop sequence it holds, and that sequence (None when none occurs)."""
    hits = [(text.find(s), i, s) for i, s in enumerate(stops or []) if s and s in text]
    if not hits:
        return text, None
    at, _i, seq = min(hits)
    return text[:at], seq
