"""Plumbing: the Messages API's request contract, in one table: what the API refuses, with its status and words.

The offline transport runs every request to `POST /v1/messages` and `POST /v1/messages/count_tokens` (and their
beta twins: `client.beta.messages.*` sends an `anthropic-beta` header naming the betas, which makes the beta fields
such as `context_management` exist) through `check_request` before the model reads it:

1. the body's size (32 MB: 413 request_too_large), JSON, the `anthropic-version` and `anthropic-beta` headers;
2. its shape against the request types of the pinned anthropic SDK, which are generated from the API's own
   description: required fields, types, literal values, extra keys (helpers.offline.schema);
3. the model (404 not_found_error for a name the docs do not list or a retired one: helpers.offline.catalog);
4. every rule of RULES below, in order. Each names its source: a docs page, or "observed:" with the API's own
   error text where the docs say nothing.

So no malformed body reaches code that could raise: each is refused with the API's 4xx, its error type and a
message in the API's words. tests/offline/test_contract*.py hold a case per rule, and a live twin that sends the
same cases to the API and compares the status codes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache

from helpers.offline import (
    beta,
    rules_content,
    rules_forms,
    rules_messages,
    rules_request,
    rules_strict,
    rules_tools,
)
from helpers.offline.call import DOCS, LATEST_VERSION, VERSIONS, Call, refuse
from helpers.offline.schema import Int, Num, Obj, ShapeError, spec_of

__all__ = [
    "Rule",
    "RULES",
    "PROMISES",
    "check_request",
    "check_counted",
    "parse_body",
    "MAX_REQUEST_BYTES",
    "KNOWN_BETAS",
    "context_window",
]

MAX_REQUEST_BYTES = 32 * 1024 * 1024  # Messages API and token counting (errors docs, "Request size limits")


def context_window(call: Call) -> None:
    """The prompt fits the context window (the model's, or a smaller one the offline model was given to teach with).
    The prompt plus `max_tokens` may pass it: no model the API still serves refuses that (the earlier models did,
    "input length and `max_tokens` exceed context limit"); the reply stops where the window is full, with
    stop_reason "model_context_window_exceeded" (handling-stop-reasons docs; helpers.offline.model)."""
    tokens, window = call.notes["input_tokens"], call.notes.get("window", call.model.context)
    if tokens > window:
        raise refuse(f"prompt is too long: {tokens} tokens > {window} maximum")


@dataclass(frozen=True)
class Rule:
    """One rule: its name, where it comes from (a docs URL, or "observed: <the API's error text>"), its check."""

    name: str
    source: str
    check: Callable[[Call], None]
    endpoints: tuple[str, ...] = ("create", "count_tokens")
    needs_tokens: bool = False  # runs after the request's tokens are counted

    @property
    def says(self) -> str:
        return (self.check.__doc__ or "").strip().split("\n\n")[0]


def _obs(text: str) -> str:
    return f"observed: '{text}'"


_C = ("create",)
RULES: tuple[Rule, ...] = (
    Rule("model.known", DOCS["deprecations"], rules_request.known_model),
    Rule("messages.count", DOCS["messages"], rules_request.message_count),
    Rule("max_tokens.range", DOCS["caching"] + "#pre-warming-the-cache", rules_request.max_tokens_range, _C),
    Rule("max_tokens.model_limit", DOCS["models"], rules_request.max_tokens_for_model, _C),
    Rule("sampling.params", DOCS["migration"], rules_request.sampling_params),
    Rule(
        "metadata.user_id",
        _obs("metadata.user_id: String should have at most 256 characters"),
        rules_request.metadata_user_id,
    ),
    Rule(
        "stop_sequences.blank",
        _obs("stop_sequences: each stop sequence must contain non-whitespace characters"),
        rules_request.stop_sequences,
    ),
    Rule("output_config.effort", DOCS["effort"], rules_request.effort_supported),
    Rule(
        "messages.first_user",
        _obs('messages: first message must use the "user" role'),
        rules_messages.first_message_user,
    ),
    Rule("messages.system_role", DOCS["mid_system"], rules_messages.system_role_supported),
    Rule("messages.system_placement", DOCS["mid_system"], rules_forms.system_message_placement),
    Rule(
        "messages.non_empty",
        _obs("messages.1: all messages must have non-empty content except for the optional final assistant message"),
        rules_messages.content_not_empty,
    ),
    Rule("text.non_blank", _obs("messages: text content blocks must be non-empty"), rules_messages.text_not_blank),
    Rule("messages.prefill", DOCS["whats_new_46"] + " ; " + DOCS["prefill"], rules_messages.prefill),
    Rule(
        "blocks.role", _obs("`tool_result` blocks can only be in `user` messages"), rules_messages.blocks_in_their_role
    ),
    Rule("tool_use.ids", _obs("`tool_use` ids must be unique"), rules_messages.tool_use_ids),
    Rule("tool_result.pairing", DOCS["tool_calls"], rules_messages.tool_results_answer_tool_uses),
    Rule("version.2026_10_21", DOCS["migration"], rules_messages.version_2026_blocks),
    Rule("tools.names", DOCS["tools"], rules_tools.tool_names),
    Rule("tools.input_schema", DOCS["tools"], rules_tools.custom_tool_schema),
    Rule("schemas.valid", DOCS["tools"] + " ; " + DOCS["structured"], rules_forms.schemas_valid),
    Rule("tools.input_examples", DOCS["tools"] + "#providing-tool-use-examples", rules_forms.input_examples_valid),
    Rule("tools.strict_count", DOCS["structured"] + "#json-schema-limitations", rules_forms.strict_tool_count),
    Rule(
        "strict.schema_subset", DOCS["structured"] + "#json-schema-limitations", rules_strict.strict_schemas_supported
    ),
    Rule("tools.all_deferred", DOCS["tool_search"], rules_forms.not_all_deferred),
    Rule("output_config.format.prefill", DOCS["structured"], rules_forms.format_without_prefill),
    Rule(
        "max_tokens.prewarm_only",
        DOCS["caching"] + "#pre-warming-the-cache",
        rules_forms.prewarm_generates_nothing,
        _C,
    ),
    Rule(
        "tool_choice.tools",
        _obs("tool_choice: tool_choice may only be specified while providing tools"),
        rules_tools.tool_choice_needs_tools,
    ),
    Rule(
        "tool_choice.forced",
        "https://platform.claude.com/docs/en/models/sonnet-5-5/overview ; "
        "https://platform.claude.com/docs/en/models/opus-5-5/whats-new-opus-5-5#breaking-changes",
        rules_tools.forced_tool_supported,
    ),
    Rule("thinking.type", DOCS["adaptive"], rules_tools.thinking_type_supported),
    Rule("thinking.budget", DOCS["thinking"], rules_tools.thinking_budget),
    Rule(
        "thinking.disabled_effort",
        "https://platform.claude.com/docs/en/models/opus-5-5/whats-new-opus-5-5#breaking-changes ; "
        "https://platform.claude.com/docs/en/about-claude/models/whats-new-opus-5",
        rules_forms.thinking_disabled_at_effort,
    ),
    Rule("thinking.forced_tool", DOCS["thinking"] + "#feature-compatibility", rules_tools.thinking_with_forced_tool),
    Rule("thinking.sampling", DOCS["thinking"] + "#feature-compatibility", rules_tools.thinking_sampling),
    Rule(
        "thinking.turn",
        DOCS["thinking"] + "#preserving-thinking-blocks",
        rules_tools.thinking_turn_starts_with_thinking,
    ),
    Rule("images", DOCS["vision"], rules_content.images),
    Rule("documents", DOCS["pdf"], rules_content.documents),
    Rule("files", "https://platform.claude.com/docs/en/build-with-claude/files", rules_content.file_sources),
    Rule("cache_control", DOCS["caching"], rules_content.cache_markers),
    Rule("context_management", DOCS["context_editing"] + " ; " + DOCS["compaction"], beta.context_management),
    Rule("compaction.blocks", DOCS["compaction"], beta.compaction_blocks),
    Rule("compaction.request", DOCS["compaction"], beta.compaction_request),
    Rule(
        "context_window",
        "https://platform.claude.com/docs/en/build-with-claude/context-windows",
        context_window,
        _C,
        needs_tokens=True,
    ),
)


# What a successful reply holds or does, by the docs (helpers.offline.model, forced, thinking, transport): the
# other half of the contract. tests/offline/test_forced.py and test_contract_live.py hold a case per row.
PROMISES: tuple[tuple[str, str], ...] = (
    ("tool_choice any/tool: one tool_use, stop_reason tool_use", DOCS["forcing_tools"]),
    ("strict tools: input valid against input_schema", DOCS["strict_tools"]),
    ("stop_sequences: cut at the first, stop_reason stop_sequence", DOCS["stop_reasons"]),
    ("a reply that fills the window: cut, stop_reason model_context_window_exceeded", DOCS["stop_reasons"]),
    ("stop_details: null (set only for a refusal)", DOCS["stop_reasons"]),
    ("output_config.format json_schema: JSON valid against it", DOCS["structured"]),
    ("thinking.display: summarized by default up to 4.6, omitted from Opus 4.7", DOCS["thinking_display"]),
    ("usage.service_tier", DOCS["messages"]),
    ("request-id header on every response", DOCS["errors"] + "#request-id"),
    ("usage.iterations whenever a compaction beta is on", DOCS["compaction"]),
)


@cache
def KNOWN_BETAS() -> frozenset:  # noqa: N802 - a constant computed once, from the SDK's list of beta names
    import typing

    from anthropic.types.anthropic_beta_param import AnthropicBetaParam

    literal = next(a for a in typing.get_args(AnthropicBetaParam) if typing.get_args(a))
    return frozenset(typing.get_args(literal))


@cache
def _spec(endpoint: str, is_beta: bool, version: str) -> Obj:
    """The request type of an endpoint, as the pinned SDK describes it (2023-06-01 adds the sampling fields)."""
    if is_beta:
        from anthropic.types.beta import message_count_tokens_params as count
        from anthropic.types.beta import message_create_params as create
    else:
        from anthropic.types import message_count_tokens_params as count
        from anthropic.types import message_create_params as create
    base = create.MessageCreateParamsBase if endpoint == "create" else count.MessageCountTokensParams
    return _extended(spec_of(base), endpoint, version)


def _extended(spec: Obj, endpoint: str, version: str) -> Obj:
    out = Obj(spec.name)
    out.fields = {k: v for k, v in spec.fields.items() if k not in ("user_profile_id", "workspace_id", "betas")}
    if endpoint == "create":
        out.fields["stream"] = (False, spec_of(bool))
    if version == "2023-06-01":
        out.fields.update({"temperature": (False, Num()), "top_p": (False, Num()), "top_k": (False, Int())})
    return out


def _header(headers, name: str) -> str | None:
    value = headers.get(name) if headers is not None else None
    return value if value is None else str(value)


def check_request(
    raw: bytes | object,
    endpoint: str,
    *,
    is_beta: bool = False,
    headers=None,
    threads: Mapping[str, dict] | None = None,
) -> Call:
    """Parse and check one request (steps 1-4 above) except the rules that need its token count; returns the Call.
    Raises OfflineAPIError (the API's refusal) for anything the API refuses. `raw` is the request's bytes (as the
    transport has them), or its already parsed body (a direct call: no size check).

    `threads`: the conversations the server holds, by reply id: {"params": the request's other fields, "messages":
    the conversation with the reply}. A beta `thread: {"type": "continue", "previous_message_id": id}` request sends
    only the new turn's messages (and what it changes); the rules read the whole conversation."""
    body = parse_body(raw) if isinstance(raw, (bytes, bytearray)) else raw
    if not isinstance(body, dict):
        raise refuse("Input should be a valid dictionary")
    version = _header(headers, "anthropic-version") or (LATEST_VERSION if headers is None else None)
    if version is None:
        raise refuse("anthropic-version: header is required")
    if version not in VERSIONS:
        raise refuse(f"anthropic-version: {version!r} is not a valid version; use one of {', '.join(VERSIONS)}")
    names = frozenset(b.strip() for b in (_header(headers, "anthropic-beta") or "").split(",") if b.strip())
    unknown = sorted(names - KNOWN_BETAS())
    if unknown:
        raise refuse(
            f"Unexpected value(s) `{', '.join(unknown)}` for the `anthropic-beta` header. Please consult our "
            "documentation at docs.claude.com or try again without the header."
        )
    is_beta = is_beta or bool(names)  # the beta fields exist for a request that names a beta (the SDK's beta
    try:  # client sends the header; the `?beta=true` query marks it too)
        _spec(endpoint, is_beta, version).check(body, ())
    except ShapeError as err:
        raise refuse(str(err)) from None
    thread = body.get("thread") or {}
    if thread.get("type") == "continue":
        held = (threads or {}).get(thread["previous_message_id"])
        if held is None:
            raise refuse(
                f"thread.continue.previous_message_id: no thread holds a message with id "
                f"{thread['previous_message_id']!r}",
                404,
                "not_found_error",
            )
        body = {**held["params"], **body, "messages": [*held["messages"], *body["messages"]]}
    call = Call(body, endpoint, version, is_beta, names)
    for rule in RULES:
        if endpoint in rule.endpoints and not rule.needs_tokens:
            rule.check(call)
    return call


def parse_body(raw: bytes) -> object:
    """The JSON of a request's bytes: 413 over 32 MB (before anything is read, as the API's edge does), 400 when
    it is not JSON."""
    if len(raw) > MAX_REQUEST_BYTES:
        raise refuse(
            f"Request exceeds the maximum allowed number of bytes: {len(raw)} > {MAX_REQUEST_BYTES}",
            413,
            "request_too_large",
        )
    try:
        return json.loads(raw or b"{}")
    except (ValueError, RecursionError):
        raise refuse("The request body is not valid JSON.") from None


def check_counted(call: Call, input_tokens: int) -> None:
    """The rules that need the request's token count (the context window)."""
    call.notes["input_tokens"] = input_tokens
    for rule in RULES:
        if call.endpoint in rule.endpoints and rule.needs_tokens:
            rule.check(call)
