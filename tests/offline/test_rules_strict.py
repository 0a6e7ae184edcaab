"""The rule `strict.schema_subset` (helpers.offline.rules_strict): strict tools and structured outputs take only the
JSON Schema subset the API compiles (https://platform.claude.com/docs/en/build-with-claude/structured-outputs,
"JSON Schema limitations"). Each refusal is a 400 invalid_request_error whose message names the keyword; each
refused construct has an accepted neighbour. Also the clear_thinking `keep` rule of helpers.offline.beta."""

from __future__ import annotations

import anthropic
import pytest

from helpers.config import load_settings
from helpers.llm import get_client
from helpers.offline.call import DOCS
from helpers.offline.contract import RULES, check_request
from helpers.offline.faults import OfflineAPIError
from helpers.offline.rules_strict import MAX_OPTIONAL_PROPERTIES, MAX_UNION_PROPERTIES, supported_formats

MODEL = "claude-haiku-4-5"


def strict_tool(props: dict, required: list | None = None, name: str = "s", strict: bool = True, **extra) -> dict:
    schema = {
        "type": "object",
        "properties": props,
        "required": list(props) if required is None else required,
        "additionalProperties": False,
        **extra,
    }
    return {"name": name, "description": "A test tool", "input_schema": schema, "strict": strict}


def request(tools: list | None = None, schema: dict | None = None, **extra) -> dict:
    body = {"model": MODEL, "max_tokens": 16, "messages": [{"role": "user", "content": "Hi"}], **extra}
    if tools:
        body["tools"] = tools
    if schema is not None:
        body["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
    return body


def refusal(body: dict, beta: str | None = None) -> OfflineAPIError:
    headers = {"anthropic-version": "2026-10-21", **({"anthropic-beta": beta} if beta else {})}
    with pytest.raises(OfflineAPIError) as info:
        check_request(body, "create", headers=headers)
    assert info.value.status == 400 and info.value.kind == "invalid_request_error", info.value.message
    return info.value


def accepted(body: dict, beta: str | None = None) -> None:
    headers = {"anthropic-version": "2026-10-21", **({"anthropic-beta": beta} if beta else {})}
    check_request(body, "create", headers=headers)


def names(err: OfflineAPIError, keyword: str, where: str) -> None:
    assert f"'{keyword}'" in err.message and err.message.startswith(where), err.message


@pytest.mark.parametrize(
    "keyword,schema",
    [
        ("minimum", {"type": "integer", "minimum": 0}),
        ("maximum", {"type": "number", "maximum": 9.5}),
        ("exclusiveMinimum", {"type": "integer", "exclusiveMinimum": 0}),
        ("exclusiveMaximum", {"type": "integer", "exclusiveMaximum": 10}),
        ("multipleOf", {"type": "integer", "multipleOf": 5}),
        ("minLength", {"type": "string", "minLength": 2}),
        ("maxLength", {"type": "string", "maxLength": 20}),
        ("maxItems", {"type": "array", "items": {"type": "string"}, "maxItems": 3}),
        ("uniqueItems", {"type": "array", "items": {"type": "string"}, "uniqueItems": True}),
        ("contains", {"type": "array", "items": {"type": "string"}, "contains": {"const": "x"}}),
    ],
)
def test_numeric_length_and_array_constraints_are_refused_in_a_strict_tool_only(keyword, schema):
    names(refusal(request([strict_tool({"a": schema})])), keyword, "tools.0.custom.input_schema.properties.a")
    accepted(request([strict_tool({"a": schema}, strict=False)]))  # a tool that is not strict is not compiled


def test_min_items_only_0_or_1():
    array = {"type": "array", "items": {"type": "integer"}}
    for n in (0, 1):
        accepted(request([strict_tool({"a": {**array, "minItems": n}})]))
    err = refusal(request([strict_tool({"a": {**array, "minItems": 2}})]))
    names(err, "minItems", "tools.0.custom.input_schema.properties.a")
    assert "only 0 or 1" in err.message


def test_additional_properties_must_be_false_when_set():
    inner = {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}
    accepted(request([strict_tool({"a": {**inner, "additionalProperties": False}})]))
    accepted(request([strict_tool({"a": inner})]))  # not set
    for value in (True, {"type": "string"}):
        err = refusal(request(schema=strict_tool({"a": {**inner, "additionalProperties": value}})["input_schema"]))
        names(err, "additionalProperties", "output_config.format.schema.properties.a")
    names(refusal(request(schema={"type": "object", "additionalProperties": True})), "additionalProperties", "output")


def test_string_formats_are_the_sdks_list():
    from anthropic.lib._parse._transform import SupportedStringFormats

    assert supported_formats() == frozenset(SupportedStringFormats) and "email" in supported_formats()
    for fmt in sorted(SupportedStringFormats):
        accepted(request(schema=strict_tool({"a": {"type": "string", "format": fmt}})["input_schema"]))
    for fmt in ("uri-reference", "idn-email", "regex"):
        err = refusal(request(schema=strict_tool({"a": {"type": "string", "format": fmt}})["input_schema"]))
        names(err, "format", "output_config.format.schema.properties.a")
        assert repr(fmt) in err.message


@pytest.mark.parametrize(
    "pattern,problem",
    [
        (r"^(a+)\1$", "backreference"),
        (r"^(?P<w>a)(?P=w)$", "backreference"),
        (r"^(?=.*\d).+$", "lookaround '(?='"),
        (r"^(?!x).+$", "lookaround '(?!'"),
        (r"(?<=\$)\d+", "lookaround '(?<='"),
        (r"(?<!-)\d+", "lookaround '(?<!'"),
        (r"\bcat\b", "word boundary"),
        (r"a\Bb", "word boundary"),
    ],
)
def test_patterns_with_backreferences_lookaround_or_word_boundaries_are_refused(pattern, problem):
    err = refusal(request([strict_tool({"a": {"type": "string", "pattern": pattern}})]))
    names(err, "pattern", "tools.0.custom.input_schema.properties.a")
    assert problem in err.message


def test_plain_patterns_and_escaped_lookalikes_are_accepted():
    for pattern in (r"^\d{3}-\d{4}$", r"^[a-z]+\\b$", r"[\b]", r"^(?:ab)+$", r"^(?P<y>\d{4})$", r"[(?=]"):
        accepted(request([strict_tool({"a": {"type": "string", "pattern": pattern}})]))


def test_refs_must_be_local_resolvable_and_not_recursive():
    node = {"type": "object", "properties": {"n": {"type": "string"}}, "required": ["n"], "additionalProperties": False}
    defs = {"$defs": {"node": node}}
    accepted(
        request(
            schema=strict_tool({"a": {"$ref": "#/$defs/node"}, "b": {"$ref": "#/$defs/node"}}, **defs)["input_schema"]
        )
    )
    for ref, says in (
        ("https://example.com/node.json", "only local references"),
        ("other.json#/node", "only local references"),
        ("#/$defs/missing", "cannot be resolved"),
    ):
        err = refusal(request([strict_tool({"a": {"$ref": ref}}, **defs)]))
        names(err, "$ref", "tools.0.custom.input_schema.properties.a")
        assert says in err.message


def test_a_ref_into_itself_is_refused_directly_or_through_others():
    to_root = strict_tool({"a": {"type": "string"}, "child": {"$ref": "#"}})
    assert "recursive" in refusal(request([to_root])).message
    ping = {"type": "object", "properties": {"b": {"$ref": "#/$defs/pong"}}, "additionalProperties": False}
    pong = {"type": "object", "properties": {"a": {"$ref": "#/$defs/ping"}}, "additionalProperties": False}
    mutual = strict_tool({"x": {"$ref": "#/$defs/ping"}}, **{"$defs": {"ping": ping, "pong": pong}})
    err = refusal(request([mutual]))
    names(err, "$ref", "tools.0.custom.input_schema")
    assert "recursive" in err.message and "#/$defs/pong" in err.message


def test_a_long_chain_of_refs_that_never_loops_is_accepted():
    defs = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(6)}
    defs["d6"] = {"type": "string"}
    accepted(request([strict_tool({"a": {"$ref": "#/$defs/d0"}, "b": {"$ref": "#/$defs/d3"}}, **{"$defs": defs})]))


def test_enum_values_must_be_primitive():
    accepted(request([strict_tool({"a": {"enum": ["x", 1, 2.5, True, None]}})]))
    for values in ([{"k": 1}], [[1, 2]], ["x", {"k": 1}]):
        err = refusal(request([strict_tool({"a": {"enum": values}})]))
        names(err, "enum", "tools.0.custom.input_schema.properties.a")


def test_keywords_are_found_at_any_depth_and_property_names_are_not_keywords():
    accepted(request([strict_tool({"minimum": {"type": "integer"}, "format": {"type": "string"}})]))
    deep = {
        "type": "object",
        "properties": {"list": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/n"}]}}},
        "required": ["list"],
        "additionalProperties": False,
        "$defs": {"n": {"type": "integer", "maximum": 3}},
    }
    names(refusal(request(schema=deep)), "maximum", "output_config.format.schema.$defs.n")
    nested = {**deep, "$defs": {}, "properties": {"list": {"type": "array", "items": {"anyOf": [{"minLength": 1}]}}}}
    names(refusal(request(schema=nested)), "minLength", "output_config.format.schema.properties.list.items.anyOf.0")


def test_the_limits_are_the_docs_numbers():
    assert (MAX_OPTIONAL_PROPERTIES, MAX_UNION_PROPERTIES) == (24, 16)


def test_optional_properties_are_limited_across_every_strict_schema_of_a_request():
    half = MAX_OPTIONAL_PROPERTIES // 2
    props = {f"p{i}": {"type": "integer"} for i in range(half)}
    tools = [strict_tool(props, required=[], name="t1"), strict_tool(props, required=[], name="t2")]
    accepted(request(tools))
    one_more = {"type": "object", "properties": {"q": {"type": "string"}}, "additionalProperties": False}
    err = refusal(request(tools, schema=one_more))
    assert "optional properties" in err.message and f"{MAX_OPTIONAL_PROPERTIES + 1} > {MAX_OPTIONAL_PROPERTIES}" in (
        err.message
    )
    loose = [strict_tool(props, required=[], name=f"t{i}", strict=False) for i in (1, 2, 3)]
    accepted(request(loose))  # tools that are not strict do not count


def test_union_typed_properties_are_limited_and_any_of_counts():
    unions = {f"u{i}": {"type": ["string", "null"]} for i in range(MAX_UNION_PROPERTIES - 1)}
    accepted(request([strict_tool(unions)]))
    accepted(request([strict_tool({**unions, "v": {"anyOf": [{"type": "string"}, {"type": "integer"}]}})]))
    err = refusal(
        request([strict_tool({**unions, "v": {"anyOf": [{"type": "string"}]}, "w": {"type": ["integer", "null"]}})])
    )
    assert "union types" in err.message and f"{MAX_UNION_PROPERTIES + 1} > {MAX_UNION_PROPERTIES}" in err.message


def test_through_the_sdk_a_refusal_is_a_400_naming_the_keyword():
    client = get_client(load_settings({}), max_retries=0)
    tool = strict_tool({"age": {"type": "integer", "minimum": 0}})
    with pytest.raises(anthropic.BadRequestError) as info:
        client.messages.create(model=MODEL, max_tokens=16, messages=[{"role": "user", "content": "Hi"}], tools=[tool])
    assert info.value.status_code == 400 and info.value.body["error"]["type"] == "invalid_request_error"
    assert "'minimum'" in info.value.body["error"]["message"]
    rule = next(r for r in RULES if r.name == "strict.schema_subset")
    assert rule.source == DOCS["structured"] + "#json-schema-limitations" and rule.says


def test_clear_thinking_keeps_at_least_one_thinking_turn():
    def edit(value: int) -> dict:
        keep = {"type": "thinking_turns", "value": value}
        return request(
            max_tokens=2048,
            thinking={"type": "enabled", "budget_tokens": 1024},
            context_management={"edits": [{"type": "clear_thinking_20251015", "keep": keep}]},
        )

    beta = "context-management-2025-06-27"
    accepted(edit(1), beta)
    err = refusal(edit(0), beta)
    assert err.message.startswith("context_management.edits.0.keep.value")
    assert "greater than or equal to 1" in err.message
