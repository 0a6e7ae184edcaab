"""Plumbing: the offline model: checks a Messages API request against the API's contract, counts it, answers it.

It only "knows" what is in the request (see helpers.offline.reader). Every request first passes the contract
(helpers.offline.contract: the API's refusals, statuses and error texts). A request whose form is fixed gets that
form (helpers.offline.forced): `tool_choice` "tool" or "any" one `tool_use` block and stop_reason "tool_use",
`output_config.format` JSON valid against its schema, `stop_sequences` a reply cut at the first one. With thinking
on, the reply starts with a thinking block, signed so that it can be sent back: the stand-in's honest summary of
what it looked up where `display` is (or defaults to) "summarized", empty where it is "omitted"
(helpers.offline.thinking). Requests with `cache_control` breakpoints read and write the prompt cache
(helpers.offline.cache), on a clock the caller can replace (`OfflineModel(clock=...)` or `model.clock = ...`). Beta
features (the memory tool, context editing, compaction) get their behaviour from `Behaviour` plug-ins
(helpers.offline.beta); without one, a plain reply. The test suite keeps chat replies on disk for its run
(helpers.offline.memo): another process asking the same request reads the reply rather than working it out again.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable

from helpers.offline.beta import Behaviour, Reply, features_of
from helpers.offline.bpe import content_text, count_text_tokens, request_tokens, system_text, truncate_to_tokens
from helpers.offline.cache import PromptCache, request_positions
from helpers.offline.call import Call
from helpers.offline.contract import check_counted, check_request
from helpers.offline.forced import cut_at_stop, forced_tool_use, structured_text
from helpers.offline.memo import kept_reply
from helpers.offline.quote import request_lines
from helpers.offline.reply import chat_reply
from helpers.offline.rules_tools import offline_signature
from helpers.offline.tasks import TASKS, extract, reconcile, summarise
from helpers.offline.thinking import display_of, thinking_summary

__all__ = ["OfflineModel", "Request", "MODEL_LABEL", "PADDING", "pad_reply"]

MODEL_LABEL = "offline deterministic model"
COMPACTION_BETAS = frozenset({"compact-2026-01-12", "compact-2026-09-04"})  # with either, usage lists iterations
MAX_THREADS = 1000  # conversations held for beta threads (the oldest is dropped first)

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
    """A checked Messages API request, as the offline model reads it."""

    def __init__(self, call: Call):
        body = call.body
        self.call, self.body = call, body
        self.system = system_text(body.get("system"))
        self.messages = [m for m in body.get("messages") or [] if m.get("role") != "system"]
        self.max_tokens = int(float(body.get("max_tokens") or 0))
        self.tools, self.tool_choice = body.get("tools") or [], body.get("tool_choice")
        self.features = features_of(body)

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


class OfflineModel:
    """The offline model itself: checks a request, counts its tokens and answers it (or refuses, as the API does)."""

    def __init__(
        self,
        context_window: int | None = None,
        model_label: str = MODEL_LABEL,
        clock: Callable[[], float] | None = None,
        reply_tokens: int | None = None,
        behaviours: list[Behaviour] | None = None,
    ):
        self.context_window = context_window  # None: each model's own window (a smaller one is a teaching device)
        self.model_label = model_label
        self.cache = PromptCache(clock)  # shared by every request to this model
        self.reply_tokens = reply_tokens  # pad chat replies to this many tokens (None: as the reader wrote them)
        self.behaviours: list[Behaviour] = list(behaviours or [])
        self.threads: OrderedDict[str, dict] = OrderedDict()  # beta threads: reply id -> the conversation held
        self._counter = 0
        self._lock = threading.Lock()

    @property
    def clock(self) -> Callable[[], float]:
        """The prompt cache's clock (seconds; default time.monotonic)."""
        return self.cache.clock

    @clock.setter
    def clock(self, clock: Callable[[], float]) -> None:
        self.cache.clock = clock

    # -- the contract
    def check(self, body: dict | bytes, endpoint: str = "create", *, headers=None, beta: bool = False) -> Call:
        """Check a request as the API does (helpers.offline.contract); returns it parsed, or raises OfflineAPIError.
        `body`: the parsed body, or the request's bytes (then the 32 MB limit and the JSON are checked too)."""
        call = check_request(body, endpoint, is_beta=beta, headers=headers, threads=self.threads)
        call.notes["window"] = min(self.context_window or call.model.context, call.model.context)
        return call

    def validate(self, body: dict, *, for_count: bool = False) -> Request:
        """The request, checked (kept for callers of the earlier API)."""
        return Request(self.check(body, "count_tokens" if for_count else "create"))

    def count_tokens(self, body: dict | bytes, *, headers=None, beta: bool = False) -> int:
        """`POST /v1/messages/count_tokens`: the request's input tokens (caching plays no part)."""
        return self.count_tokens_reply(body, headers=headers, beta=beta)["input_tokens"]

    def count_tokens_reply(self, body: dict | bytes, *, headers=None, beta: bool = False) -> dict:
        """The count_tokens response: `input_tokens` of the request as the model reads it (after context editing);
        with `context_management` in the request, also `context_management.original_input_tokens`, the count before
        any edit (docs: context-editing, "Token counting")."""
        call = self.check(body, "count_tokens", headers=headers, beta=beta)
        counted = {"input_tokens": request_tokens(self._prepared(call).body)}
        if call.body.get("context_management") is not None:
            counted["context_management"] = {"original_input_tokens": request_tokens(call.body)}
        return counted

    def _prepared(self, call: Call) -> Request:
        """The request after the behaviours' `prepare` (what the model reads and counts)."""
        body = call.body
        for b in self.behaviours:
            if b.applies(features_of(body)):
                body = b.prepare(body)
        if body is not call.body:
            call = Call(body, call.endpoint, call.version, call.beta, call.betas, call.model, call.notes)
        return Request(call)

    # -- answering
    def _answer(self, req: Request) -> Reply:
        """The default reply: a task's output (as a tool call when one is forced) or a chat reply."""
        if req.max_tokens == 0:  # a cache pre-warm: nothing is generated
            return Reply([], "max_tokens")
        kind = next((k for marker, k in TASKS if req.system.startswith(marker)), "chat")
        if kind == "summary":
            text = summarise(req.last_user_text, req.max_tokens, count_text_tokens)
        elif kind in ("extract", "reconcile"):
            data = extract(req.last_user_text) if kind == "extract" else reconcile(req.last_user_text)
            if req.forced_tool:
                digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:20]
                return Reply(
                    [{"type": "tool_use", "id": f"toolu_offline_{digest}", "name": req.forced_tool, "input": data}],
                    "tool_use",
                )
            text = json.dumps(data)
        else:  # a compaction block's summary is read like a summary block (the API continues from it)
            fixed = _fixed_form(req)
            if fixed is not None:
                return fixed
            summaries = "".join(
                f"\n\n<conversation_summary>\n{b['content']}\n</conversation_summary>"
                for m in req.messages
                for b in (m["content"] if isinstance(m["content"], list) else [])
                if isinstance(b, dict) and b.get("type") == "compaction" and b.get("content")
            )
            text = kept_reply(chat_reply, req.system + summaries, req.turns)  # off unless the tests' run shares them
            return Reply([{"type": "text", "text": text}], chat=True)
        return _within(Reply([{"type": "text", "text": text}]), req.max_tokens)

    def _reply(self, req: Request) -> Reply:
        reply = self._answer(req)
        for b in self.behaviours:
            if b.applies(req.features):
                reply = b.respond(req.body, reply)
        if reply.chat and reply.content and reply.content[-1].get("type") == "text":
            if self.reply_tokens:
                reply.content[-1]["text"] = pad_reply(reply.content[-1]["text"], min(self.reply_tokens, req.max_tokens))
            reply = _within(reply, req.max_tokens)
        stops = req.body.get("stop_sequences") or []
        if stops and reply.stop_reason == "end_turn" and reply.content and reply.content[-1].get("type") == "text":
            reply.content[-1]["text"], matched = cut_at_stop(reply.content[-1]["text"], stops)
            if matched is not None:  # docs: handling-stop-reasons, "stop_sequence"
                reply.stop_reason, reply.extra["stop_sequence"] = "stop_sequence", matched
        if req.call.thinks and reply.content and reply.content[0].get("type") != "thinking":
            shown = display_of(req.body, req.call.model.thinking_display) == "summarized"
            said = thinking_summary(req.system, req.turns, reply.content) if shown else ""
            reply.content.insert(0, {"type": "thinking", "thinking": said, "signature": offline_signature(said)})
        return reply

    def create(self, body: dict | bytes, *, headers=None, beta: bool = False) -> dict:
        """`POST /v1/messages`: a Message dict in the API's shape."""
        call = self.check(body, "create", headers=headers, beta=beta)
        req = self._prepared(call)
        input_tokens = request_tokens(req.body)
        check_counted(call, input_tokens)
        usage = {"input_tokens": input_tokens, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if any(True for p in request_positions(req.body) if p.ttl):
            usage.update(self.cache.apply(req.body, request_positions(req.body), input_tokens))
        reply = _within_window(self._reply(req), call.notes["window"] - input_tokens)
        if COMPACTION_BETAS & call.betas and "iterations" not in reply.usage:  # compaction docs, "Usage": always listed
            reply.usage = {**reply.usage, "iterations": [{"type": "message"}]}
        with self._lock:
            self._counter += 1
            n = self._counter
        digest = hashlib.sha256(
            json.dumps(call.body, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")
        ).hexdigest()
        message_id = f"msg_offline_{digest[:16]}_{n}"
        if call.body.get("thread"):  # the server holds the conversation under the reply's id (beta threads)
            with self._lock:
                params = {k: v for k, v in call.body.items() if k not in ("messages", "thread", "stream")}
                messages = [*call.messages, {"role": "assistant", "content": reply.content}]
                self.threads[message_id] = {"params": params, "messages": messages}
                while len(self.threads) > MAX_THREADS:
                    self.threads.popitem(last=False)
        return {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": call.body["model"],
            "content": reply.content,
            "stop_reason": reply.stop_reason,
            "stop_sequence": None,
            "stop_details": None,  # docs: handling-stop-reasons (set only for a refusal, which this model never makes)
            "usage": {**_usage(usage, reply.usage, output_tokens(reply.content)), "service_tier": "standard"},
            **reply.extra,
        }


def _fixed_form(req: Request) -> Reply | None:
    """A reply whose form the request fixes (helpers.offline.forced): a forced tool call, or JSON for a schema."""
    lines = request_lines(req.system, [*req.turns, ("user", "")])
    if req.call.forced_tool:
        block = forced_tool_use(req.tools, req.tool_choice or {}, lines, req.last_user_text)
        if block is not None:
            return Reply([block], "tool_use")
    text = structured_text((req.body.get("output_config") or {}).get("format"), lines)
    return None if text is None else Reply([{"type": "text", "text": text}])


def _within(reply: Reply, max_tokens: int) -> Reply:
    """The reply with its last text block cut to `max_tokens` tokens (stop_reason "max_tokens" when it was cut)."""
    text = reply.content[-1]["text"]
    if count_text_tokens(text) > max_tokens:
        reply.content[-1]["text"] = truncate_to_tokens(text, max_tokens)
        reply.stop_reason = "max_tokens"
    return reply


def _within_window(reply: Reply, room: int) -> Reply:
    """The reply cut where it fills the context window (`room`: the window less the input), stop_reason
    "model_context_window_exceeded" (docs: handling-stop-reasons; no model the API still serves refuses a request
    whose input plus max_tokens passes the window, it stops there). Only a reply ending in text is cut."""
    if output_tokens(reply.content) <= room or not reply.content or reply.content[-1].get("type") != "text":
        return reply
    text = reply.content[-1]["text"]
    reply.content[-1]["text"] = truncate_to_tokens(text, max(0, room - output_tokens(reply.content[:-1])))
    reply.stop_reason = "model_context_window_exceeded"
    return reply


def pad_reply(text: str, tokens: int) -> str:
    """`text` followed by neutral PADDING, cut to exactly `tokens` tokens (a longer reply is left as it is)."""
    if count_text_tokens(text) >= tokens:
        return text
    padded = f"{text} {PADDING * (1 + tokens // max(1, count_text_tokens(PADDING)))}"
    return truncate_to_tokens(padded, tokens).rstrip()


def _usage(counted: dict, extra: dict, output: int) -> dict:
    """The Message's usage: what was counted, a behaviour's extra fields, the output tokens; an `iterations` list
    gets this request's own numbers in its "message" entry (the sampling that wrote the reply)."""
    usage = {**counted, **extra, "output_tokens": output}
    if isinstance(extra.get("iterations"), list):
        own = {k: usage[k] for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")}
        usage["iterations"] = [
            {**it, **own, "output_tokens": output} if it.get("type") == "message" else it for it in extra["iterations"]
        ]
    return usage


def output_tokens(content: list[dict]) -> int:
    """Output tokens of a reply's content blocks (local BPE)."""
    total = 0
    for block in content:
        kind = block.get("type")
        if kind == "text":
            total += count_text_tokens(block["text"])
        elif kind == "tool_use":
            total += count_text_tokens(json.dumps(block["input"], sort_keys=True)) + 3
        elif kind == "thinking":
            total += count_text_tokens(block.get("thinking", "")) + 3
        elif kind == "compaction":  # written by the compaction iteration: its tokens are in `usage.iterations`
            continue
        else:
            total += count_text_tokens(json.dumps(block, sort_keys=True)) + 3
    return total
