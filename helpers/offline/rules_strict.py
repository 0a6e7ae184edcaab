"""Plumbing: the contract's rule for the JSON Schema subset that strict tools and structured outputs compile.

A tool with `"strict": true` and `output_config.format` `{"type": "json_schema", ...}` are compiled into a grammar
the reply is sampled from, and the compiler takes only part of JSON Schema (docs: structured outputs, "JSON Schema
limitations"). `strict_schemas_supported` walks every strict tool's `input_schema` and the structured-output schema
and refuses, with the path and the keyword:

- numeric constraints (minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf);
- string lengths (minLength, maxLength); array constraints (maxItems, uniqueItems, contains; minItems other than
  0 or 1);
- `additionalProperties` other than false;
- a `$ref` that is not local ("#/..."), cannot be resolved, or is recursive (a ref that expands into itself);
- an `enum` with an object or an array among its values;
- a string `format` outside the SDK's own list (anthropic.lib._parse._transform.SupportedStringFormats, which
  `transform_schema` keeps when it makes a strict schema from a Pydantic model);
- a `pattern` with backreferences, lookaround or word boundaries (\\b, \\B);
- per request, across all strict schemas: more than 24 optional properties, more than 16 properties with a union
  type (`type` as a list, or `anyOf`).

Only the walk is here: whether a schema is valid JSON Schema at all is helpers.offline.rules_forms.schemas_valid,
which runs first; the number of strict tools is rules_forms.strict_tool_count.
"""

from __future__ import annotations

import functools
from urllib.parse import unquote

from helpers.offline.call import Call, refuse

__all__ = [
    "strict_schemas_supported",
    "supported_formats",
    "MAX_OPTIONAL_PROPERTIES",
    "MAX_UNION_PROPERTIES",
    "UNSUPPORTED_KEYWORDS",
]

# Schema complexity limits of the docs (structured outputs, "JSON Schema limitations"), counted over every strict
# schema of one request together: the strict tools' input_schemas and the output_config.format schema.
MAX_OPTIONAL_PROPERTIES = 24  # properties not listed in their object's `required`
MAX_UNION_PROPERTIES = 16  # properties whose schema has `type` as a list, or `anyOf`

UNSUPPORTED_KEYWORDS = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "maxItems",
    "uniqueItems",
    "contains",
)
_MIN_ITEMS = (0, 1)
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA = ("items", "not", "if", "then", "else", "propertyNames")
_LOOKAROUND = ("(?=", "(?!", "(?<=", "(?<!")


@functools.cache
def supported_formats() -> frozenset[str]:
    """The string formats strict schemas take: the SDK's own list (imported on first use)."""
    from anthropic.lib._parse._transform import SupportedStringFormats

    return frozenset(SupportedStringFormats)


def _pattern_problem(pattern: str) -> str | None:
    """What in a regex the grammar compiler cannot take (backreference, lookaround, word boundary), or None. A
    backslash escape is read as one token, so an escaped `\\\\b` is a backslash and a `b`; `[\\b]` is a backspace."""
    i, in_class = 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if not in_class and nxt in "bB":
                return f"word boundary '\\{nxt}'"
            if not in_class and (nxt in "123456789" or nxt == "k"):
                return f"backreference '\\{nxt}'"
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "^":
                i += 1
            if pattern[i + 1 : i + 2] == "]":  # a leading ']' is a literal inside the class
                i += 1
        elif ch == "(":
            for look in _LOOKAROUND:
                if pattern.startswith(look, i):
                    return f"lookaround '{look}'"
            if pattern.startswith("(?P=", i):
                return "backreference '(?P='"
        i += 1
    return None


def _resolve(root: dict, ref: str):
    """The subschema a local `$ref` ("#", "#/$defs/X") points at in `root`; KeyError when it points at nothing."""
    node = root
    for raw in ref[2:].split("/") if ref != "#" else []:
        part = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise KeyError(ref)
    return node


class _Walk:
    """One request's walk over its strict schemas: refuses the first unsupported construct, counts the optional and
    union-typed properties of all of them."""

    def __init__(self) -> None:
        self.optional = 0
        self.unions = 0

    def schema(self, root, where: str) -> None:
        self.root, self.safe = root, set()
        self.node(root, where)

    def node(self, node, where: str) -> None:
        if not isinstance(node, dict):
            return  # a boolean schema (true / false) holds no keyword
        self.keywords(node, where)
        props = node.get("properties")
        if isinstance(props, dict):
            required = node.get("required") if isinstance(node.get("required"), list) else []
            self.optional += sum(1 for name in props if name not in required)
            self.unions += sum(
                1 for p in props.values() if isinstance(p, dict) and (isinstance(p.get("type"), list) or "anyOf" in p)
            )
        for key in _SUBSCHEMA_MAPS:
            if isinstance(node.get(key), dict):
                for name, sub in node[key].items():
                    self.node(sub, f"{where}.{key}.{name}")
        for key in (*_SUBSCHEMA_LISTS, *_SUBSCHEMA):
            if isinstance(node.get(key), list):  # anyOf-style lists, and draft-4 tuple `items`
                for k, sub in enumerate(node[key]):
                    self.node(sub, f"{where}.{key}.{k}")
            elif key in _SUBSCHEMA and key in node:
                self.node(node[key], f"{where}.{key}")

    def keywords(self, node: dict, where: str) -> None:
        for keyword in UNSUPPORTED_KEYWORDS:
            if keyword in node:
                raise _unsupported(where, keyword)
        if "minItems" in node and (isinstance(node["minItems"], bool) or node["minItems"] not in _MIN_ITEMS):
            raise _unsupported(where, "minItems", f"{node['minItems']!r} is not supported (only 0 or 1)")
        if "additionalProperties" in node and node["additionalProperties"] is not False:
            raise _unsupported(where, "additionalProperties", "must be false")
        enum = node.get("enum")
        if isinstance(enum, list) and any(isinstance(v, (dict, list)) for v in enum):
            raise _unsupported(where, "enum", "with object or array values is not supported (only primitives)")
        fmt = node.get("format")
        if isinstance(fmt, str) and fmt not in supported_formats():
            formats = ", ".join(sorted(supported_formats()))
            raise _unsupported(where, "format", f"{fmt!r} is not supported (supported: {formats})")
        pattern = node.get("pattern")
        problem = _pattern_problem(pattern) if isinstance(pattern, str) else None
        if problem:
            raise _unsupported(where, "pattern", f"with a {problem} is not supported")
        if "$ref" in node:
            ref = node["$ref"]
            if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
                raise _unsupported(where, "$ref", f"{ref!r} is not supported: only local references ('#/...') are")
            self.expand(ref, [], where)

    def expand(self, ref: str, stack: list[str], where: str) -> None:
        """Follow `ref` through the refs its target holds: a ref met again on the way is recursive."""
        if ref in self.safe:
            return
        if ref in stack:
            chain = " -> ".join([*stack, ref])
            raise _unsupported(
                where, "$ref", f"{stack[0]!r} is recursive ({chain}): recursive schemas are not supported"
            )
        try:
            target = _resolve(self.root, ref)
        except KeyError:
            raise _unsupported(where, "$ref", f"{ref!r} cannot be resolved") from None
        for inner in _refs_in(target):
            if inner == "#" or inner.startswith("#/"):  # a non-local one is refused where the walk meets it
                self.expand(inner, [*stack, ref], where)
        self.safe.add(ref)


def _unsupported(where: str, keyword: str, why: str = "is not supported"):
    return refuse(f"{where}: JSON schema keyword '{keyword}' {why} in strict tools and structured outputs")


def _refs_in(node) -> list[str]:
    """Every `$ref` string under `node` (any depth), not following them."""
    found, todo = [], [node]
    while todo:
        cur = todo.pop()
        if isinstance(cur, dict):
            if isinstance(cur.get("$ref"), str):
                found.append(cur["$ref"])
            todo.extend(v for k, v in cur.items() if k not in ("enum", "const", "default", "examples"))
        elif isinstance(cur, list):
            todo.extend(cur)
    return found


def strict_schemas_supported(call: Call) -> None:
    """Strict tools' input_schemas and the structured-outputs schema use only the JSON Schema subset the API
    compiles (no numeric or length constraints, additionalProperties only false, local non-recursive $refs,
    primitive enums, the supported string formats, simple patterns), within the request's complexity limits."""
    walk = _Walk()
    for i, tool in enumerate(call.tools):
        if isinstance(tool, dict) and tool.get("strict") is True and isinstance(tool.get("input_schema"), dict):
            walk.schema(tool["input_schema"], f"tools.{i}.custom.input_schema")
    fmt = (call.body.get("output_config") or {}).get("format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema" and isinstance(fmt.get("schema"), dict):
        walk.schema(fmt["schema"], "output_config.format.schema")
    if walk.optional > MAX_OPTIONAL_PROPERTIES:
        raise refuse(
            f"strict schemas: too many optional properties: {walk.optional} > {MAX_OPTIONAL_PROPERTIES} across the "
            "strict tools and the structured-output schema of one request; mark more properties `required`"
        )
    if walk.unions > MAX_UNION_PROPERTIES:
        raise refuse(
            f"strict schemas: too many properties with union types (`type` as a list, or `anyOf`): {walk.unions} > "
            f"{MAX_UNION_PROPERTIES} across the strict tools and the structured-output schema of one request"
        )
