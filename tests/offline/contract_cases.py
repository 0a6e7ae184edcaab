"""The contract suite's cases: requests the Messages API accepts or refuses, each with the rule it tests and that
rule's source (a docs URL, or "observed: <the API's error text>"). Shared by the offline suite
(test_contract.py) and its live twin (test_contract_live.py), which sends the same requests to the API.

A case is (name, expected status, source, request): the request is a dict with the `body`, and optionally
`endpoint` ("create" or "count_tokens"), `beta` (the anthropic-beta names: sent to the beta endpoint) and
`version` (the anthropic-version header). Bodies are kept cheap for the live twin: claude-haiku-4-5 (opus where
the rule is about a newer model), max_tokens 16 or less.
"""

from __future__ import annotations

import base64
import functools
import io
import random
import zlib

from helpers.offline.call import DOCS

HAIKU = "claude-haiku-4-5"
M = "messages: "


def _png(width: int = 8, height: int = 8, fmt: str = "PNG") -> str:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(buf, format=fmt)
    return base64.b64encode(buf.getvalue()).decode()


IMAGE_5MB = "messages.46.content.9.image.source.base64: image exceeds 5 MB maximum: 6096280 bytes > 5242880 bytes"


@functools.cache
def _noise_png(side: int) -> str:
    """The base64 of a side x side PNG of noise (it does not compress: about 3 * side**2 bytes, 4/3 that in base64)."""
    from PIL import Image

    buf = io.BytesIO()
    Image.frombytes("RGB", (side, side), random.Random(side).randbytes(3 * side * side)).save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


def pdf_bytes(text: str = "The invoice total is 42 euros.", pages: int = 1) -> bytes:
    """A small valid PDF whose pages hold `text` (a Flate-compressed content stream)."""
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(pages))
    objs.append(f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode())
    for i in range(pages):
        stream = zlib.compress(f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode())
        objs.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R >>".encode())
        objs.append(b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out, offsets = io.BytesIO(), []
    out.write(b"%PDF-1.4\n")
    for n, obj in enumerate(objs, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % n + obj + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1))
    for off in offsets:
        out.write(b"%010d 00000 n \n" % off)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref))
    return out.getvalue()


def body(*messages, model: str = HAIKU, max_tokens: int = 16, **extra) -> dict:
    msgs = list(messages) or [{"role": "user", "content": "Hello there."}]
    return {"model": model, "max_tokens": max_tokens, "messages": msgs, **extra}


def user(content) -> dict:
    return {"role": "user", "content": content}


def assistant(content) -> dict:
    return {"role": "assistant", "content": content}


def text(t: str, **extra) -> dict:
    return {"type": "text", "text": t, **extra}


def image(data: str, media_type: str = "image/png") -> dict:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


TOOL = {
    "name": "get_weather",
    "description": "Weather for a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
USE = {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Oslo"}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_01", "content": "4 degrees, rain"}
CC = {"type": "ephemeral"}
CC1H = {"type": "ephemeral", "ttl": "1h"}
CM = "context-management-2025-06-27"
COMPACT = "compact-2026-01-12"
CLEAR = {
    "type": "clear_tool_uses_20250919",
    "trigger": {"type": "input_tokens", "value": 30000},
    "keep": {"type": "tool_uses", "value": 2},
}
THINK = {"type": "enabled", "budget_tokens": 1024}


_SYS = {"role": "system", "content": "Be brief."}
_FORMAT = {
    "format": {
        "type": "json_schema",
        "schema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}},
            "required": ["a"],
            "additionalProperties": False,
        },
    }
}


def _tool(name: str = "t", props: dict | None = None, **extra) -> dict:
    """A small custom tool (one integer property `a`)."""
    properties = props if props is not None else {"a": {"type": "integer"}}
    schema = {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}
    return {"name": name, "description": "A test tool", "input_schema": schema, **extra}


def _strict(props: dict) -> dict:
    """A strict tool with these properties (all required)."""
    return _tool("s", props, strict=True)


def _schema_format(props: dict, required: list | None = None, **extra) -> dict:
    """`output_config` with a json_schema format over these properties (all required unless `required` says)."""
    schema = {
        "type": "object",
        "properties": props,
        "required": list(props) if required is None else required,
        "additionalProperties": False,
        **extra,
    }
    return {"format": {"type": "json_schema", "schema": schema}}


_NODE = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
    "additionalProperties": False,
}
_TREE = {**_NODE, "properties": {"name": {"type": "string"}, "child": {"$ref": "#/$defs/tree"}}}


def _clear_thinking_keeping(turns: int) -> dict:
    """A thinking request whose clear_thinking edit keeps `turns` thinking turns."""
    keep = {"type": "thinking_turns", "value": turns}
    edits = [{"type": "clear_thinking_20251015", "keep": keep}]
    return {"body": body(max_tokens=2048, thinking=THINK, context_management={"edits": edits}), "beta": [CM]}


def cases() -> list[tuple[str, int, str, dict]]:
    """Every case of the suite (built on call: the image and PDF bytes are made here)."""
    png, jpeg = _png(), _png(fmt="JPEG")
    pdf = base64.b64encode(pdf_bytes()).decode()
    long_user = "word " * 140_000  # ~140K tokens: with max_tokens 64,000 over haiku's 200K window
    obs = lambda s: f"observed: '{s}'"  # noqa: E731
    return [
        # -- accepted ----------------------------------------------------------------------------------------
        ("alias", 200, DOCS["models"], {"body": body()}),
        ("dated id", 200, DOCS["models"], {"body": body(model="claude-haiku-4-5-20251001")}),
        (
            "empty final assistant",
            200,
            obs(M + "all messages must have non-empty content except for the optional final assistant message"),
            {"body": body(user("Hi"), assistant(""))},
        ),
        ("prefill on haiku", 200, DOCS["prefill"], {"body": body(user("Name a colour."), assistant("The colour is"))}),
        (  # no model the API serves refuses this any more: the reply stops where the window is full
            "input + max_tokens over the window",
            200,
            DOCS["stop_reasons"] + " (model_context_window_exceeded)",
            {"body": body(user(long_user), max_tokens=64_000)},
        ),
        ("a 3.7 MB image: 4.9 MB of base64", 200, obs(IMAGE_5MB), {"body": body(user([image(_noise_png(1100))]))}),
        (
            "text document",
            200,
            DOCS["citations"],
            {
                "body": body(
                    user(
                        [
                            {
                                "type": "document",
                                "source": {"type": "text", "media_type": "text/plain", "data": "Oslo is cold."},
                            },
                            text("Summarise."),
                        ]
                    )
                )
            },
        ),
        (
            "pdf document",
            200,
            DOCS["pdf"],
            {
                "body": body(
                    user(
                        [
                            {
                                "type": "document",
                                "source": {"type": "base64", "media_type": "application/pdf", "data": pdf},
                            },
                            text("What is the total?"),
                        ]
                    )
                )
            },
        ),
        (
            "max_tokens 0 pre-warm",
            200,
            DOCS["caching"] + "#pre-warming-the-cache",
            {"body": body(max_tokens=0, system=[text("You help.", cache_control=CC)])},
        ),
        (
            "thinking block in history",
            200,
            DOCS["thinking"],
            {
                "body": body(
                    user("Hi"),
                    assistant([{"type": "thinking", "thinking": "Greet back.", "signature": "sig"}, text("Hello!")]),
                    user("How are you?"),
                )
            },
        ),
        ("png image", 200, DOCS["vision"], {"body": body(user([image(png), text("What colour?")]))}),
        ("jpeg image", 200, DOCS["vision"], {"body": body(user([image(jpeg, "image/jpeg"), text("What colour?")]))}),
        (
            "tool round trip",
            200,
            DOCS["tool_calls"],
            {"body": body(user("Weather in Oslo?"), assistant([USE]), user([RESULT]), tools=[TOOL])},
        ),
        ("consecutive user turns", 200, DOCS["working"], {"body": body(user("Hi"), user("Are you there?"))}),
        ("memory tool", 200, DOCS["memory"], {"body": body(tools=[{"type": "memory_20250818", "name": "memory"}])}),
        (
            "memory tool, beta",
            200,
            DOCS["memory"],
            {"body": body(tools=[{"type": "memory_20250818", "name": "memory"}]), "beta": [CM]},
        ),
        (
            "context editing",
            200,
            DOCS["context_editing"],
            {"body": body(context_management={"edits": [CLEAR]}), "beta": [CM]},
        ),
        (
            "compaction on opus 4.6",
            200,
            DOCS["compaction"],
            {
                "body": body(
                    model="claude-opus-4-6",
                    context_management={
                        "edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 60000}}]
                    },
                ),
                "beta": [COMPACT],
            },
        ),
        (
            "count_tokens",
            200,
            DOCS["token_counting"],
            {"endpoint": "count_tokens", "body": {"model": HAIKU, "messages": [user("Hi")]}},
        ),
        ("thinking enabled", 200, DOCS["thinking"], {"body": body(max_tokens=2048, thinking=THINK)}),
        (
            "1h before 5m",
            200,
            DOCS["caching"],
            {"body": body(user([text("a", cache_control=CC1H), text("b", cache_control=CC)]))},
        ),
        ("top-level cache_control", 200, DOCS["caching"], {"body": body(cache_control=CC)}),
        ("stop sequence", 200, DOCS["messages"], {"body": body(stop_sequences=["END"])}),
        (
            "user_id of 256",
            200,
            obs("metadata.user_id: String should have at most 256 characters"),
            {"body": body(metadata={"user_id": "u" * 256})},
        ),
        ("tool_choice auto", 200, DOCS["tools"], {"body": body(tools=[TOOL], tool_choice={"type": "auto"})}),
        (
            "structured output",
            200,
            "https://platform.claude.com/docs/en/build-with-claude/structured-outputs",
            {
                "body": body(
                    output_config={
                        "format": {
                            "type": "json_schema",
                            "schema": {
                                "type": "object",
                                "properties": {"a": {"type": "string"}},
                                "required": ["a"],
                                "additionalProperties": False,
                            },
                        }
                    }
                )
            },
        ),
        ("system blocks", 200, DOCS["messages"], {"body": body(system=[text("You are terse."), text("Be kind.")])}),
        (
            "adaptive on sonnet 4.6",
            200,
            DOCS["adaptive"],
            {"body": body(model="claude-sonnet-4-6", thinking={"type": "adaptive"})},
        ),
        (
            "effort on opus 4.6",
            200,
            DOCS["effort"],
            {"body": body(model="claude-opus-4-6", output_config={"effort": "low"})},
        ),
        (
            "temperature on 2023-06-01",
            200,
            DOCS["versioning"],
            {"body": body(temperature=0.5), "version": "2023-06-01"},
        ),
        ("stream", 200, DOCS["streaming"], {"body": body(stream=True)}),
        # -- the model --------------------------------------------------------------------------------------------
        ("unknown model", 404, DOCS["models"], {"body": body(model="claude-imaginary-9")}),
        ("retired model", 404, DOCS["deprecations"], {"body": body(model="claude-3-5-haiku-20241022")}),
        ("retired alias", 404, DOCS["deprecations"], {"body": body(model="claude-sonnet-4-5")}),
        # -- shapes -----------------------------------------------------------------------------------------------
        ("extra top-level key", 400, obs("foo: Extra inputs are not permitted"), {"body": body(foo=1)}),
        (
            "extra key in a block",
            400,
            obs("messages.0.content.0.text.foo: Extra inputs are not permitted"),
            {"body": body(user([text("Hi", foo=1)]))},
        ),
        (
            "extra key in a message",
            400,
            obs("messages.0.name: Extra inputs are not permitted"),
            {"body": body({"role": "user", "content": "Hi", "name": "Bo"})},
        ),
        (
            "extra key in metadata",
            400,
            obs("metadata.tier: Extra inputs are not permitted"),
            {"body": body(metadata={"user_id": "u1", "tier": "gold"})},
        ),
        (
            "text is a number",
            400,
            obs("messages.0.content.0.text.text: Input should be a valid string"),
            {"body": body(user([{"type": "text", "text": 123}]))},
        ),
        ("system is a number", 400, obs("system: Input should be a valid string"), {"body": body(system=123)}),
        ("message is a string", 400, obs("messages.0: Input should be a valid dictionary"), {"body": body("hi")}),
        (
            "role bot",
            400,
            obs("messages.0.role: Input should be 'user' or 'assistant'"),
            {"body": body({"role": "bot", "content": "Hi"})},
        ),
        (
            "max_tokens missing",
            400,
            obs("max_tokens: Field required"),
            {"body": {"model": HAIKU, "messages": [user("Hi")]}},
        ),
        (
            "count_tokens takes no max_tokens",
            400,
            obs("max_tokens: Extra inputs are not permitted"),
            {"endpoint": "count_tokens", "body": body()},
        ),
        ("temperature on 2026-10-21", 400, DOCS["migration"], {"body": body(temperature=0.5)}),
        ("body over 32 MB", 413, DOCS["errors"], {"body": body(user("x" * (33 * 1024 * 1024)))}),
        # -- parameters -----------------------------------------------------------------------------------------
        (
            "user_id of 600",
            400,
            obs("metadata.user_id: String should have at most 256 characters"),
            {"body": body(metadata={"user_id": "u" * 600})},
        ),
        (
            "temperature 1.5",
            400,
            obs("temperature: Input should be less than or equal to 1"),
            {"body": body(temperature=1.5), "version": "2023-06-01"},
        ),
        (
            "temperature -1",
            400,
            obs("temperature: Input should be greater than or equal to 0"),
            {"body": body(temperature=-1), "version": "2023-06-01"},
        ),
        (
            "temperature hot",
            400,
            obs("temperature: Input should be a valid number"),
            {"body": body(temperature="hot"), "version": "2023-06-01"},
        ),
        (
            "top_p 1.5",
            400,
            obs("top_p: Input should be less than or equal to 1"),
            {"body": body(top_p=1.5), "version": "2023-06-01"},
        ),
        (
            "temperature with top_p",
            400,
            obs("`temperature` and `top_p` cannot both be specified for this model. Please use only one."),
            {"body": body(temperature=0.5, top_p=0.9), "version": "2023-06-01"},
        ),
        ("max_tokens over the model's", 400, DOCS["models"], {"body": body(max_tokens=100_000)}),
        (
            "blank stop sequence",
            400,
            obs("stop_sequences: each stop sequence must contain non-whitespace characters"),
            {"body": body(stop_sequences=["  "])},
        ),
        ("effort on haiku 4.5", 400, DOCS["effort"], {"body": body(output_config={"effort": "high"})}),
        # -- messages -----------------------------------------------------------------------------------------------
        ("prefill ends in whitespace", 400, DOCS["prefill"], {"body": body(user("Hi"), assistant("The answer is "))}),
        (
            "prefill on sonnet 4.6",
            400,
            DOCS["whats_new_46"],
            {"body": body(user("Hi"), assistant("Sure"), model="claude-sonnet-4-6")},
        ),
        (
            "first message assistant",
            400,
            obs('messages: first message must use the "user" role'),
            {"body": body(assistant("Hi"), user("Hello"))},
        ),
        (
            "whitespace-only message",
            400,
            obs(M + "text content blocks must contain non-whitespace text"),
            {"body": body(user("   "))},
        ),
        ("empty text block", 400, obs(M + "text content blocks must be non-empty"), {"body": body(user([text("")]))}),
        (
            "empty user message",
            400,
            obs(M + "all messages must have non-empty content except for the optional final assistant message"),
            {"body": body(user([]), assistant("Hi"), user("x"))},
        ),
        (
            "system role on haiku",
            400,
            DOCS["mid_system"],
            {"body": body(user("Hi"), assistant("Hello"), {"role": "system", "content": "Be brief."}, user("Go"))},
        ),
        (
            "document in assistant",
            400,
            DOCS["migration"],
            {
                "body": body(
                    user("Hi"),
                    assistant(
                        [{"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "x"}}]
                    ),
                    user("ok"),
                )
            },
        ),
        (
            "citations on user text",
            400,
            DOCS["migration"],
            {
                "body": body(
                    user(
                        [
                            text(
                                "Quote",
                                citations=[
                                    {
                                        "type": "char_location",
                                        "cited_text": "Q",
                                        "document_index": 0,
                                        "start_char_index": 0,
                                        "end_char_index": 1,
                                    }
                                ],
                            )
                        ]
                    )
                )
            },
        ),
        # -- tools --------------------------------------------------------------------------------------------------
        (
            "tool_use answered by text",
            400,
            DOCS["tool_calls"],
            {"body": body(user("Weather?"), assistant([USE]), user("Here: rain."), tools=[TOOL])},
        ),
        (
            "tool_result after text",
            400,
            DOCS["tool_calls"],
            {"body": body(user("Weather?"), assistant([USE]), user([text("Result:"), RESULT]), tools=[TOOL])},
        ),
        ("orphan tool_result", 400, DOCS["tool_calls"], {"body": body(user([RESULT]), tools=[TOOL])}),
        (
            "duplicate tool_use ids",
            400,
            obs("`tool_use` ids must be unique"),
            {
                "body": body(
                    user("Weather?"),
                    assistant([USE, dict(USE, input={"city": "Bergen"})]),
                    user([RESULT]),
                    tools=[TOOL],
                )
            },
        ),
        (
            "tool_use in a user message",
            400,
            obs("`tool_use` blocks can only be in `assistant` messages"),
            {"body": body(user([USE]), tools=[TOOL])},
        ),
        ("duplicate tool names", 400, obs("tools: Tool names must be unique."), {"body": body(tools=[TOOL, TOOL])}),
        ("tool name with a dot", 400, DOCS["tools"], {"body": body(tools=[dict(TOOL, name="get.weather")])}),
        ("tool name of 200", 400, DOCS["tools"], {"body": body(tools=[dict(TOOL, name="t" * 200)])}),
        (
            "tool schema not an object",
            400,
            DOCS["tools"],
            {"body": body(tools=[dict(TOOL, input_schema={"type": "string"})])},
        ),
        (
            "tool_choice without tools",
            400,
            obs("tool_choice: tool_choice may only be specified while providing tools"),
            {"body": body(tool_choice={"type": "any"})},
        ),
        (
            "tool_choice names no tool",
            400,
            DOCS["tools"],
            {"body": body(tools=[TOOL], tool_choice={"type": "tool", "name": "nope"})},
        ),
        (
            "forced tool on sonnet 5.5",
            400,
            "https://platform.claude.com/docs/en/models/sonnet-5-5/overview",
            {"body": body(model="claude-sonnet-5-5", tools=[TOOL], tool_choice={"type": "any"})},
        ),
        # -- images -------------------------------------------------------------------------------------------------
        ("tiff image", 400, DOCS["vision"], {"body": body(user([image(png, "image/tiff")]))}),
        ("invalid base64", 400, DOCS["vision"], {"body": body(user([image("not base64!!")]))}),
        ("png declared as jpeg", 400, DOCS["vision"], {"body": body(user([image(png, "image/jpeg")]))}),
        ("image in system", 400, DOCS["messages"], {"body": body(system=[image(png)])}),
        ("a 3.9 MB image: 5.3 MB of base64", 400, obs(IMAGE_5MB), {"body": body(user([image(_noise_png(1150))]))}),
        (
            "empty text in system",
            400,
            obs("system: text content blocks must be non-empty"),
            {"body": body(system=[text("")])},
        ),
        # -- thinking ---------------------------------------------------------------------------------------------
        (
            "budget 500",
            400,
            DOCS["thinking"],
            {"body": body(max_tokens=2048, thinking={"type": "enabled", "budget_tokens": 500})},
        ),
        ("budget >= max_tokens", 400, DOCS["thinking"], {"body": body(max_tokens=1024, thinking=THINK)}),
        (
            "thinking with temperature",
            400,
            DOCS["thinking"] + "#feature-compatibility",
            {"body": body(max_tokens=2048, thinking=THINK, temperature=0.5), "version": "2023-06-01"},
        ),
        (
            "thinking with forced tool",
            400,
            DOCS["thinking"] + "#feature-compatibility",
            {"body": body(max_tokens=2048, thinking=THINK, tools=[TOOL], tool_choice={"type": "any"})},
        ),
        ("adaptive on haiku 4.5", 400, DOCS["adaptive"], {"body": body(thinking={"type": "adaptive"})}),
        (
            "budgets on opus 4.7",
            400,
            DOCS["adaptive"],
            {"body": body(model="claude-opus-4-7", max_tokens=2048, thinking=THINK)},
        ),
        (
            "thinking turn without thinking",
            400,
            DOCS["thinking"] + "#preserving-thinking-blocks",
            {
                "body": body(
                    user("Weather?"), assistant([USE]), user([RESULT]), max_tokens=2048, thinking=THINK, tools=[TOOL]
                )
            },
        ),
        # -- caching ------------------------------------------------------------------------------------------------
        (
            "1h after 5m",
            400,
            DOCS["caching"],
            {"body": body(user([text("a", cache_control=CC), text("b", cache_control=CC1H)]))},
        ),
        (
            "top-level 1h over a 5m last block",
            400,
            DOCS["caching"],
            {"body": body(user([text("a", cache_control=CC)]), cache_control=CC1H)},
        ),
        (
            "five breakpoints",
            400,
            obs("A maximum of 4 blocks with cache_control may be provided. Found 5."),
            {"body": body(user([text(c, cache_control=CC) for c in "abcde"]))},
        ),
        # -- beta -----------------------------------------------------------------------------------------------------
        (
            "context editing without its beta",
            400,
            DOCS["context_editing"],
            {"body": body(context_management={"edits": [CLEAR]}), "beta": [COMPACT]},
        ),
        (
            "context_management off the beta endpoint",
            400,
            obs("context_management: Extra inputs are not permitted"),
            {"body": body(context_management={"edits": [CLEAR]})},
        ),
        (
            "compaction trigger 10,000",
            400,
            DOCS["compaction"],
            {
                "body": body(
                    model="claude-opus-4-6",
                    context_management={
                        "edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 10000}}]
                    },
                ),
                "beta": [COMPACT],
            },
        ),
        (
            "compaction on haiku 4.5",
            400,
            DOCS["compaction"],
            {"body": body(context_management={"edits": [{"type": "compact_20260112"}]}), "beta": [COMPACT]},
        ),
        (
            "clear_thinking without thinking",
            400,
            DOCS["context_editing"],
            {"body": body(context_management={"edits": [{"type": "clear_thinking_20251015"}]}), "beta": [CM]},
        ),
        (
            "unknown beta name",
            400,
            obs("Unexpected value(s) `no-such-beta-2099-01-01` for the `anthropic-beta` header."),
            {"body": body(), "beta": ["no-such-beta-2099-01-01"]},
        ),
        (
            "empty compaction block",
            400,
            DOCS["compaction"],
            {
                "body": body(
                    user("Hi"),
                    assistant([{"type": "compaction", "content": ""}]),
                    user("Go on"),
                    model="claude-opus-4-6",
                ),
                "beta": [COMPACT],
            },
        ),
        # issue 40: reply forms (tools, schemas, structured outputs, pre-warm)
        (
            "tools.input_schema is JSON Schema",
            400,
            DOCS["tools"],
            {"body": body(tools=[_tool(props={"a": {"type": 5}})])},
        ),
        (
            "a forced tool is answered",
            200,
            DOCS["forcing_tools"],
            {"body": body(tools=[_tool()], tool_choice={"type": "any"})},
        ),
        (
            "an input example that breaks its schema",
            400,
            DOCS["tools"],
            {"body": body(tools=[_tool(input_examples=[{"a": "not a number"}])])},
        ),
        (
            "an input example that fits its schema",
            200,
            DOCS["tools"],
            {"body": body(tools=[_tool(input_examples=[{"a": 3}])])},
        ),
        (
            "more than 20 strict tools",
            400,
            DOCS["structured"],
            {"body": body(tools=[_tool(f"t{i}", strict=True) for i in range(21)])},
        ),
        (
            "20 strict tools",
            200,
            DOCS["structured"],
            {"body": body(tools=[_tool(f"t{i}", strict=True) for i in range(20)])},
        ),
        (
            "every tool deferred",
            400,
            DOCS["tool_search"],
            {"body": body(tools=[_tool("t1", defer_loading=True), _tool("t2", defer_loading=True)])},
        ),
        ("structured outputs answered", 200, DOCS["structured"], {"body": body(output_config=_FORMAT)}),
        (
            "structured outputs with a prefill",
            400,
            DOCS["structured"],
            {"body": body(user("Hi"), assistant("{"), output_config=_FORMAT)},
        ),
        (
            "max_tokens 0 with a forced tool",
            400,
            DOCS["caching"],
            {"body": body(max_tokens=0, tools=[_tool()], tool_choice={"type": "any"})},
        ),
        ("max_tokens 0 with a format", 400, DOCS["caching"], {"body": body(max_tokens=0, output_config=_FORMAT)}),
        ("max_tokens 0 streamed", 400, DOCS["caching"], {"body": body(max_tokens=0, stream=True)}),
        ("stop_sequences answered", 200, DOCS["stop_reasons"], {"body": body(stop_sequences=["END"])}),
        (
            "a system message after a user turn",
            200,
            DOCS["mid_system"],
            {"body": body(user("Hi"), _SYS, assistant("Hello"), user("Go"), model="claude-opus-4-8")},
        ),
        (
            "a system message after an assistant turn",
            400,
            DOCS["mid_system"],
            {"body": body(user("Hi"), assistant("Hello"), _SYS, model="claude-opus-4-8")},
        ),
        (
            "a system message followed by a user turn",
            400,
            DOCS["mid_system"],
            {"body": body(user("Hi"), _SYS, user("Go"), model="claude-opus-4-8")},
        ),
        (
            "forced tool on Opus 5.5",
            400,
            "https://platform.claude.com/docs/en/models/opus-5-5/whats-new-opus-5-5",
            {"body": body(model="claude-opus-5-5", tools=[_tool()], tool_choice={"type": "any"})},
        ),
        (
            "thinking disabled at xhigh on Opus 5",
            400,
            "https://platform.claude.com/docs/en/about-claude/models/whats-new-opus-5",
            {"body": body(model="claude-opus-5", thinking={"type": "disabled"}, output_config={"effort": "xhigh"})},
        ),
        (
            "thinking disabled at high on Opus 5",
            200,
            "https://platform.claude.com/docs/en/about-claude/models/whats-new-opus-5",
            {"body": body(model="claude-opus-5", thinking={"type": "disabled"}, output_config={"effort": "high"})},
        ),
        (
            "a system message placed first",
            400,
            DOCS["mid_system"],
            {"body": body(_SYS, user("Go"), model="claude-opus-4-8")},
        ),
        # strict tools and structured outputs: the JSON Schema subset the API compiles (rule strict.schema_subset)
        (
            "strict tool: minItems 1",
            200,
            DOCS["structured"] + "#json-schema-limitations",
            {"body": body(tools=[_strict({"a": {"type": "array", "items": {"type": "integer"}, "minItems": 1}})])},
        ),
        (
            "strict tool: minItems 2",
            400,
            DOCS["structured"] + "#json-schema-limitations",
            {"body": body(tools=[_strict({"a": {"type": "array", "items": {"type": "integer"}, "minItems": 2}})])},
        ),
        (
            "strict tool: minimum",
            400,
            DOCS["structured"] + "#json-schema-limitations",
            {"body": body(tools=[_strict({"a": {"type": "integer", "minimum": 1}})])},
        ),
        (
            "non-strict tool: minimum",
            200,
            DOCS["tools"],
            {"body": body(tools=[_tool(props={"a": {"type": "integer", "minimum": 1}})])},
        ),
        (
            "strict tool: maxLength",
            400,
            DOCS["structured"] + "#json-schema-limitations",
            {"body": body(tools=[_strict({"a": {"type": "string", "maxLength": 8}})])},
        ),
        (
            "structured output: format email",
            200,
            DOCS["structured"] + "#json-schema-limitations",
            {"body": body(output_config=_schema_format({"a": {"type": "string", "format": "email"}}))},
        ),
        (
            "structured output: format uri-reference",
            400,
            DOCS["structured"] + "#json-schema-limitations",
            {"body": body(output_config=_schema_format({"a": {"type": "string", "format": "uri-reference"}}))},
        ),
        (
            "strict tool: additionalProperties a schema",
            400,
            DOCS["structured"] + "#json-schema-limitations",
            {"body": body(tools=[_strict({"a": {"type": "object", "additionalProperties": {"type": "string"}}})])},
        ),
        (
            "strict tool: nested additionalProperties false",
            200,
            DOCS["structured"] + "#json-schema-limitations",
            {"body": body(tools=[_strict({"a": _NODE})])},
        ),
        (
            "structured output: a local $ref",
            200,
            DOCS["structured"] + "#json-schema-limitations",
            {"body": body(output_config=_schema_format({"a": {"$ref": "#/$defs/node"}}, **{"$defs": {"node": _NODE}}))},
        ),
        (
            "structured output: a recursive $ref",
            400,
            DOCS["structured"] + "#json-schema-limitations",
            {"body": body(output_config=_schema_format({"a": {"$ref": "#/$defs/tree"}}, **{"$defs": {"tree": _TREE}}))},
        ),
        (
            "strict tool: pattern with a lookahead",
            400,
            DOCS["structured"] + "#json-schema-limitations",
            {"body": body(tools=[_strict({"a": {"type": "string", "pattern": "^(?=.*[0-9])[a-z0-9]+$"}})])},
        ),
        (
            "strict tool: a plain pattern",
            200,
            DOCS["structured"] + "#json-schema-limitations",
            {"body": body(tools=[_strict({"a": {"type": "string", "pattern": "^[0-9]{3}-[0-9]{4}$"}})])},
        ),
        (
            "strict tool: enum of objects",
            400,
            DOCS["structured"] + "#json-schema-limitations",
            {"body": body(tools=[_strict({"a": {"enum": [{"x": 1}, {"x": 2}]}})])},
        ),
        (
            "structured output: 25 optional properties",
            400,
            DOCS["structured"] + "#json-schema-limitations",
            {"body": body(output_config=_schema_format({f"p{i}": {"type": "integer"} for i in range(25)}, []))},
        ),
        (
            "structured output: 24 optional properties",
            200,
            DOCS["structured"] + "#json-schema-limitations",
            {"body": body(output_config=_schema_format({f"p{i}": {"type": "integer"} for i in range(24)}, []))},
        ),
        (
            "structured output: 17 union-typed properties",
            400,
            DOCS["structured"] + "#json-schema-limitations",
            {"body": body(output_config=_schema_format({f"p{i}": {"type": ["integer", "null"]} for i in range(17)}))},
        ),
        (
            "clear_thinking keeping 0 thinking turns",
            400,
            DOCS["context_editing"],
            _clear_thinking_keeping(0),
        ),
        (
            "clear_thinking keeping 1 thinking turn",
            200,
            DOCS["context_editing"],
            _clear_thinking_keeping(1),
        ),
    ]


def send(client, request: dict) -> int:
    """POST one case through the real SDK (`client.post`, the SDK's own request path) and return the HTTP status:
    the offline transport answers an offline client, the API a live one. No retries."""
    import anthropic
    import httpx2

    path = "/v1/messages/count_tokens" if request.get("endpoint") == "count_tokens" else "/v1/messages"
    headers = {}
    if "version" in request:
        headers["anthropic-version"] = request["version"]
    if request.get("beta"):
        headers["anthropic-beta"] = ",".join(request["beta"])
    options = {"headers": headers, "max_retries": 0, "params": {"beta": "true"} if "beta" in request else {}}
    try:
        response = client.post(path, cast_to=httpx2.Response, body=request["body"], options=options)
    except anthropic.APIStatusError as err:
        return err.status_code
    return response.status_code
