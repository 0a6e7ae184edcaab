"""Plumbing: the offline model: validates a Messages API request, counts its tokens and answers it.

It only "knows" what is in the request (see helpers.offline.reader). Requests that offer `tools` and force
one with `tool_choice: {"type": "tool", "name": ...}` get a `tool_use` block and stop_reason "tool_use".
Requests with `cache_control` breakpoints read and write the model's prompt cache (helpers.offline.cache), on a
clock the caller can replace (`OfflineModel(clock=...)` or `model.clock = ...`).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter
from collections.abc import Callable

import httpx2

from helpers.offline.bpe import content_text, count_text_tokens, request_tokens, system_text, truncate_to_tokens
from helpers.offline.cache import PromptCache, check_breakpoints, request_positions
from helpers.offline.faults import FAULTS, FaultPlan, OfflineAPIError
from helpers.offline.reply import chat_reply
from helpers.offline.tasks import TASKS, extract, reconcile, summarise

__all__ = ["OfflineModel", "OfflineTransport", "Request", "MODEL_LABEL", "PADDING", "pad_reply"]

MODEL_LABEL = "offline deterministic model"

# Neutral talk a padded chat reply ends with (OfflineModel(reply_tokens=...)): no names, numbers, places, nothing
# about the user, no advice or plan the fact rules would read as a fact; it only makes the reply as long as a
# real model's, so cost figures are not several times too low.
PADDING = (
    "Plans like this tend to work best with some slack in the day. Travel times in a big city are hard to "
    "predict, and a relaxed pace leaves more room for the unexpected. A short list of options, decided on "
    "the spot by weather, energy and mood, usually beats a fixed schedule. Small detours are part of the fun, "
    "and many of the best moments on a trip are the ones nobody planned. Comfortable shoes, water and a "
    "little patience go a long way. "
)


class Request:
    """A parsed Messages API request, as the offline model reads it."""

    def __init__(
        self,
        system: str,
        messages: list[dict],
        max_tokens: int,
        tools: list[dict] | None = None,
        tool_choice: dict | None = None,
    ):
        self.system, self.messages, self.max_tokens = system, messages, max_tokens
        self.tools, self.tool_choice = tools or [], tool_choice

    @property
    def turns(self) -> list[tuple[str, str]]:
        """(role, text) of every message."""
        return [(m["role"], content_text(m["content"])) for m in self.messages]

    @property
    def last_user_text(self) -> str:
        for m in reversed(self.messages):
            if m["role"] == "user":
                return content_text(m["content"])
        return ""

    @property
    def forced_tool(self) -> str | None:
        """The tool name `tool_choice` forces (type "tool"), or None."""
        choice = self.tool_choice or {}
        return choice.get("name") if choice.get("type") == "tool" else None


def _bad(message: str) -> OfflineAPIError:
    return OfflineAPIError(400, "invalid_request_error", message)


def _check_tools(body: dict) -> None:
    tools = body.get("tools")
    if tools is None:
        if body.get("tool_choice") is not None:
            raise _bad("tool_choice: may only be specified while providing tools")
        return
    if not isinstance(tools, list):
        raise _bad("tools: Input should be a valid list")
    names = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) or not tool["name"]:
            raise _bad(f"tools.{i}.name: Field required")
        schema = tool.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise _bad(f'tools.{i}.input_schema: must be a JSON schema with "type": "object"')
        names.append(tool["name"])
    choice = body.get("tool_choice")
    if choice is not None:
        if not isinstance(choice, dict) or choice.get("type") not in ("auto", "any", "tool", "none"):
            raise _bad("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'")
        if choice["type"] == "tool" and choice.get("name") not in names:
            raise _bad(f"tool_choice.name: no tool named {choice.get('name')!r} in tools")


class OfflineModel:
    """The offline model itself: validates a request, counts its tokens and answers it (or raises)."""

    def __init__(
        self,
        context_window: int = 200_000,
        model_label: str = MODEL_LABEL,
        clock: Callable[[], float] | None = None,
        reply_tokens: int | None = None,
    ):
        self.context_window = context_window
        self.model_label = model_label
        self.cache = PromptCache(clock)  # shared by every request to this model
        self.reply_tokens = reply_tokens  # pad chat replies to this many tokens (None: as the reader wrote them)
        self._counter = 0
        self._lock = threading.Lock()

    @property
    def clock(self) -> Callable[[], float]:
        """The prompt cache's clock (seconds; default time.monotonic)."""
        return self.cache.clock

    @clock.setter
    def clock(self, clock: Callable[[], float]) -> None:
        self.cache.clock = clock

    # -- validation, as the API does it
    def validate(self, body: dict, *, for_count: bool = False) -> Request:
        if not isinstance(body.get("model"), str) or not body["model"]:
            raise OfflineAPIError(400, "invalid_request_error", "model: Field required")
        if not for_count and not isinstance(body.get("max_tokens"), int):
            raise OfflineAPIError(400, "invalid_request_error", "max_tokens: Field required")
        if not for_count and body["max_tokens"] < 1:
            raise OfflineAPIError(400, "invalid_request_error", "max_tokens: must be greater than or equal to 1")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise OfflineAPIError(400, "invalid_request_error", "messages: at least one message is required")
        if messages[0].get("role") != "user":
            raise OfflineAPIError(400, "invalid_request_error", 'messages: first message must use the "user" role')
        previous: dict | None = None
        for i, m in enumerate(messages):
            role, content = m.get("role"), m.get("content")
            if role not in ("user", "assistant"):
                raise OfflineAPIError(
                    400, "invalid_request_error", f"messages.{i}.role: Input should be 'user' or 'assistant'"
                )
            if isinstance(content, str):
                if not content.strip():
                    raise OfflineAPIError(
                        400,
                        "invalid_request_error",
                        f"messages.{i}: text content blocks must contain non-whitespace text",
                    )
            elif isinstance(content, list) and content:
                for j, block in enumerate(content):
                    kind = block.get("type") if isinstance(block, dict) else None
                    if kind == "text" and not str(block.get("text", "")).strip():
                        raise OfflineAPIError(
                            400,
                            "invalid_request_error",
                            f"messages.{i}.content.{j}: text content blocks must contain non-whitespace text",
                        )
                    if kind == "tool_result":
                        wanted = block.get("tool_use_id")
                        have = set()
                        if (
                            previous
                            and previous.get("role") == "assistant"
                            and isinstance(previous.get("content"), list)
                        ):
                            have = {
                                b.get("id")
                                for b in previous["content"]
                                if isinstance(b, dict) and b.get("type") == "tool_use"
                            }
                        if wanted not in have:
                            raise OfflineAPIError(
                                400,
                                "invalid_request_error",
                                f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {wanted}. "
                                "Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
                            )
                    if kind not in ("text", "tool_use", "tool_result", "image"):
                        raise OfflineAPIError(
                            400, "invalid_request_error", f"messages.{i}.content.{j}.type: unknown block type {kind!r}"
                        )
            else:
                raise OfflineAPIError(
                    400, "invalid_request_error", f"messages.{i}.content: must be a non-empty string or list of blocks"
                )
            previous = m
        _check_tools(body)
        return Request(
            system_text(body.get("system")),
            messages,
            int(body.get("max_tokens") or 0),
            body.get("tools"),
            body.get("tool_choice"),
        )

    def count_tokens(self, body: dict) -> int:
        """`POST /v1/messages/count_tokens`: the request's input tokens (caching plays no part)."""
        self.validate(body, for_count=True)
        check_breakpoints(body)
        return request_tokens(body)

    def _answer(self, req: Request) -> tuple[list[dict], str]:
        """The reply's content blocks and stop reason: a task's output (as a tool call when one is forced) or a chat reply."""
        kind = next((k for marker, k in TASKS if req.system.startswith(marker)), "chat")
        if kind == "summary":
            text = summarise(req.last_user_text, req.max_tokens, count_text_tokens)
        elif kind in ("extract", "reconcile"):
            data = extract(req.last_user_text) if kind == "extract" else reconcile(req.last_user_text)
            if req.forced_tool:
                digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:20]
                return [
                    {"type": "tool_use", "id": f"toolu_offline_{digest}", "name": req.forced_tool, "input": data}
                ], "tool_use"
            text = json.dumps(data)
        else:
            text = chat_reply(req.system, req.turns)
            if self.reply_tokens:
                text = pad_reply(text, min(self.reply_tokens, req.max_tokens))
        stop_reason = "end_turn"
        if count_text_tokens(text) > req.max_tokens:
            text = truncate_to_tokens(text, req.max_tokens)
            stop_reason = "max_tokens"
        return [{"type": "text", "text": text}], stop_reason

    def create(self, body: dict) -> dict:
        """`POST /v1/messages`: a Message dict in the API's shape."""
        req = self.validate(body)
        cached = bool(check_breakpoints(body))
        input_tokens = request_tokens(body)
        if input_tokens > self.context_window:
            raise OfflineAPIError(
                400,
                "invalid_request_error",
                f"prompt is too long: {input_tokens} tokens > {self.context_window} maximum",
            )
        usage = {"input_tokens": input_tokens, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if cached:
            usage.update(self.cache.apply(body, request_positions(body), input_tokens))
        content, stop_reason = self._answer(req)
        with self._lock:
            self._counter += 1
            n = self._counter
        digest = hashlib.sha256(
            json.dumps(body, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")
        ).hexdigest()
        return {
            "id": f"msg_offline_{digest[:16]}_{n}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {**usage, "output_tokens": _output_tokens(content)},
        }


class OfflineTransport(httpx2.BaseTransport):
    """An httpx2 transport that answers Messages API requests with an `OfflineModel`."""

    def __init__(
        self, model: OfflineModel | None = None, faults: FaultPlan | str | None = None, usage: Counter | None = None
    ):
        self.model = model or OfflineModel()
        self.faults = faults if isinstance(faults, FaultPlan) else FaultPlan.parse(faults)
        self.requests: list[tuple[str, dict]] = []  # (path, body) of every request seen, for tests
        self.usage = Counter() if usage is None else usage  # calls and tokens answered (may be shared by clients)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        try:
            body = json.loads(request.read() or b"{}")
        except ValueError:
            return OfflineAPIError(400, "invalid_request_error", "request body is not valid JSON").response()
        self.requests.append((path, body))
        try:
            if path.endswith("/v1/messages/count_tokens"):
                self.usage["count_tokens"] += 1
                return httpx2.Response(200, json={"input_tokens": self.model.count_tokens(body)})
            if path.endswith("/v1/messages"):
                fault = self.faults.next()
                if fault == "timeout":
                    raise httpx2.ReadTimeout("offline fault: read timed out", request=request)
                if fault == "connect":
                    raise httpx2.ConnectError("offline fault: connection refused", request=request)
                if fault:
                    status, kind, message = FAULTS[fault]
                    headers = {"retry-after-ms": str(self.faults.retry_after_ms)}
                    raise OfflineAPIError(status, kind, message, headers)
                reply = self.model.create(body)
                self.usage.update(calls=1, **{k: v for k, v in reply["usage"].items() if isinstance(v, int)})
                return httpx2.Response(200, json=reply)
            raise OfflineAPIError(404, "not_found_error", f"the offline model does not serve {path}")
        except OfflineAPIError as err:
            return err.response()


def pad_reply(text: str, tokens: int) -> str:
    """`text` followed by neutral PADDING, cut to exactly `tokens` tokens (a longer reply is left as it is)."""
    if count_text_tokens(text) >= tokens:
        return text
    padded = f"{text} {PADDING * (1 + tokens // max(1, count_text_tokens(PADDING)))}"
    return truncate_to_tokens(padded, tokens).rstrip()


def _output_tokens(content: list[dict]) -> int:
    total = 0
    for block in content:
        if block["type"] == "text":
            total += count_text_tokens(block["text"])
        else:
            total += count_text_tokens(json.dumps(block["input"], sort_keys=True)) + 3
    return total
