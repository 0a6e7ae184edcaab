"""The client factory: a real `anthropic.Anthropic`, live or offline, same SDK code either way. Taught in 01_goldfish_stateless, section 'Setup'."""

from __future__ import annotations

import os
import sys
import threading
from collections import Counter
from collections.abc import Callable

import anthropic
import httpx2

from helpers.config import OFFLINE_NOTE, Settings, load_settings
from helpers.offline import FaultPlan, OfflineModel, OfflineTransport, default_behaviours

__all__ = [
    "get_client",
    "is_offline",
    "offline_transport",
    "mode_line",
    "LiveCallLimit",
    "LiveTransport",
    "live_calls",
    "live_cost",
    "OFFLINE_USAGE",
    "REPLY_TOKENS",
    "stream_text",
]

_OFFLINE_KEY = "offline-no-key"  # never sent anywhere: the transport answers in-process
_OFFLINE_BASE_URL = "http://offline.invalid"
# what the offline model answered in this process, by role: "chat" would go live with a key, "replay" only with
# SIMULATE_LIVE=1 (calls, input_tokens, output_tokens, count_tokens)
OFFLINE_USAGE: dict[str, Counter] = {"chat": Counter(), "replay": Counter()}


def get_client(
    settings: Settings | None = None,
    *,
    context_window: int | None = None,
    faults: FaultPlan | str | None = None,
    max_retries: int | None = None,
    clock: Callable[[], float] | None = None,
    reply_tokens: int | None = None,
    role: str = "chat",
) -> anthropic.Anthropic:
    """Return an `anthropic.Anthropic` client.

    With `ANTHROPIC_API_KEY` set it talks to the API. Without it, the same SDK class is built on an
    `httpx2.Client` whose transport is the offline model, so calling code never branches on the mode.
    `context_window`, `faults` and `reply_tokens` (pad chat replies to that length) configure the offline model
    (faults also from `GTE_OFFLINE_FAULTS`), which speaks the memory tool and applies context editing and
    compaction (helpers.offline.default_behaviours); `clock` is its prompt cache's clock (default time.monotonic; a
    simulation passes a `helpers.offline.SimClock`).
    Offline calls and tokens add up per `role` ("chat", or "replay" for simulation clients) in `OFFLINE_USAGE`
    (see `live_cost`). Retries (429/5xx/timeouts, exponential backoff with jitter, honouring retry-after) are the
    SDK's own; a live client also stops after `MAX_LIVE_CALLS` requests in this process and names the shared-key
    limit on a 429/529.
    """
    s = settings or load_settings()
    retries = s.max_retries if max_retries is None else max_retries
    if s.anthropic_api_key:
        http = anthropic.DefaultHttpxClient(transport=LiveTransport(s.max_live_calls, retries))
        return anthropic.Anthropic(
            api_key=s.anthropic_api_key, max_retries=retries, timeout=s.timeout_s, http_client=http
        )
    model = OfflineModel(
        context_window=context_window or s.offline_context_window,
        clock=clock,
        reply_tokens=reply_tokens,
        behaviours=default_behaviours(),  # the memory tool, context editing, compaction (helpers/offline/)
    )
    plan = faults if faults is not None else os.environ.get("GTE_OFFLINE_FAULTS")
    transport = OfflineTransport(model, faults=plan, usage=OFFLINE_USAGE[role])
    return anthropic.Anthropic(
        api_key=_OFFLINE_KEY,
        base_url=_OFFLINE_BASE_URL,
        http_client=httpx2.Client(transport=transport),
        max_retries=retries,
        timeout=s.timeout_s,
    )


def stream_text(client: anthropic.Anthropic, *, out=None, **request) -> anthropic.types.Message:
    """Send one request with `messages.stream()` and print the reply's text as it arrives, piece by piece; return
    the final Message (its `usage` included). Live or offline alike: the offline model streams the same events.

    `request` is what `messages.create` takes (model, max_tokens, messages, system, ...)."""
    out = out or sys.stdout
    with client.messages.stream(**request) as stream:
        for piece in stream.text_stream:
            print(piece, end="", flush=True, file=out)
        print(file=out, flush=True)
        return stream.get_final_message()


def offline_transport(client: anthropic.Anthropic) -> OfflineTransport | None:
    """The offline transport behind `client`, or None for a live client (tests use it to inspect requests)."""
    inner = getattr(client, "_client", None)
    transport = getattr(inner, "_transport", None)
    return transport if isinstance(transport, OfflineTransport) else None


def is_offline(client: anthropic.Anthropic) -> bool:
    """True when `client` is answered by the offline model."""
    return offline_transport(client) is not None


def mode_line(client: anthropic.Anthropic) -> str:
    """One line naming who answers this client's calls."""
    transport = offline_transport(client)
    if transport is None:
        return "model: live Anthropic API"
    return (
        f"model: offline stand-in, deterministic (context window {transport.model.context_window:,} tokens): "
        f"{OFFLINE_NOTE}"
    )


# ---------------------------------------------------------------------------- live guard (classroom safety)

# The reply length, in tokens (local BPE, an offline count), of a real model asked for "under 120 words" (~100-200);
# the offline model's own replies are short (~30). Simulations pad offline replies to it (helpers.sim.simulate),
# and the stand-in for the live API in tests (GTE_LIVE_STUB=1) answers at that length too.
REPLY_TOKENS = 150

_LIVE = {"calls": 0}
_LIVE_LOCK = threading.Lock()


def live_calls() -> int:
    """Live API requests this process has sent so far (retries included)."""
    return _LIVE["calls"]


class LiveCallLimit(anthropic.APIError):
    """MAX_LIVE_CALLS live requests were sent by this process: a runaway loop stops here (never retried)."""

    says_why = True  # helpers.memory.errors shows its message as it is


class LiveTransport(httpx2.BaseTransport):
    """The live client's transport: counts requests against a per-process cap; on 429/529 says why (shared key)."""

    def __init__(self, cap: int, retries: int, inner: httpx2.BaseTransport | None = None):
        self.cap, self.retries = cap, retries
        if inner is None and os.environ.get("GTE_LIVE_STUB") == "1":  # tests: count "live" calls, answer offline
            stub = OfflineModel(reply_tokens=REPLY_TOKENS, behaviours=default_behaviours())  # a live reply's length
            inner = OfflineTransport(stub, faults="")
        self.inner = inner or httpx2.HTTPTransport()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        with _LIVE_LOCK:
            if _LIVE["calls"] >= self.cap:
                raise LiveCallLimit(
                    f"MAX_LIVE_CALLS={self.cap} live API calls reached in this process: stopped before sending more "
                    "(a loop may be running away). Restart the kernel, or raise MAX_LIVE_CALLS in .env on purpose.",
                    request,
                    body=None,
                )
            _LIVE["calls"] += 1
        response = self.inner.handle_request(request)
        if response.status_code in (429, 529):
            what = "rate limited (429)" if response.status_code == 429 else "overloaded (529)"
            print(
                f"note: the API answered {what}. A class shares one key's per-minute limit; retrying with backoff "
                f"(up to {self.retries} retries, MAX_RETRIES). Replays stay offline unless SIMULATE_LIVE=1.",
                file=sys.stderr,
                flush=True,
            )
        return response

    def close(self) -> None:
        self.inner.close()


def live_cost(settings: Settings | None = None) -> str:
    """What this process's model calls would take live, from the offline ledger (OFFLINE_USAGE): calls, tokens
    (offline counts) and USD at the chat model's price; in a live run, also the live calls actually sent."""
    from helpers.pricing import cost_of

    s = settings or load_settings()

    def part(usage: Counter) -> str:
        counts = {
            k: usage[k]
            for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        }  # 1-hour cache writes are priced at 2x input, the rest of the writes at 1.25x
        split = {"ephemeral_1h_input_tokens": usage["cache_creation_1h_input_tokens"]}
        usd = cost_of({**counts, "cache_creation": split}, s.chat_model)
        return (
            f"{usage['calls']:,} model calls ({usage['input_tokens']:,} input + {usage['output_tokens']:,} output "
            f"tokens, offline counts) ≈ ${usd:.4f} at {s.chat_model}'s price, plus {usage['count_tokens']:,} "
            "count_tokens calls (free, rate-limited)"
        )

    chat, replay = OFFLINE_USAGE["chat"], OFFLINE_USAGE["replay"]
    lines = []
    if s.mode == "live":
        lines.append(
            f"live: this kernel sent {live_calls():,} API calls so far (cap MAX_LIVE_CALLS={s.max_live_calls})"
        )
    else:
        lines.append(f"with a key, the chats here would make {part(chat)}")
    where = "live with SIMULATE_LIVE=1" if not s.simulate_live else "live now (SIMULATE_LIVE=1)"
    if not (s.mode == "live" and s.simulate_live):
        lines.append(f"replays, benchmarks and imports (offline by default; {where}): {part(replay)}")
    return "\n".join(lines)
