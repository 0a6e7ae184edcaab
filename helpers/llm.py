"""The client factory: a real `anthropic.Anthropic`, live or offline, same SDK code either way. Taught in 01_goldfish_stateless, section 'Setup'."""

from __future__ import annotations

import os
from typing import Callable

import anthropic
import httpx2

from helpers.config import OFFLINE_NOTE, Settings, load_settings
from helpers.offline import FaultPlan, OfflineModel, OfflineTransport

__all__ = ["get_client", "is_offline", "offline_transport", "mode_line"]

_OFFLINE_KEY = "offline-no-key"          # never sent anywhere: the transport answers in-process
_OFFLINE_BASE_URL = "http://offline.invalid"


def get_client(
    settings: Settings | None = None,
    *,
    context_window: int | None = None,
    faults: FaultPlan | str | None = None,
    max_retries: int | None = None,
    clock: Callable[[], float] | None = None,
) -> anthropic.Anthropic:
    """Return an `anthropic.Anthropic` client.

    With `ANTHROPIC_API_KEY` set it talks to the API. Without it, the same SDK class is built on an
    `httpx2.Client` whose transport is the offline model, so calling code never branches on the mode.
    `context_window` and `faults` configure the offline model (faults also from `GTE_OFFLINE_FAULTS`); `clock`
    is its prompt cache's clock (default time.monotonic; a simulation passes a `helpers.offline.SimClock`).
    Retries (429/5xx/timeouts, exponential backoff with jitter, honouring retry-after) are the SDK's own.
    """
    s = settings or load_settings()
    retries = s.max_retries if max_retries is None else max_retries
    if s.anthropic_api_key:
        return anthropic.Anthropic(api_key=s.anthropic_api_key, max_retries=retries, timeout=s.timeout_s)
    model = OfflineModel(context_window=context_window or s.offline_context_window, clock=clock)
    plan = faults if faults is not None else os.environ.get("GTE_OFFLINE_FAULTS")
    transport = OfflineTransport(model, faults=plan)
    return anthropic.Anthropic(
        api_key=_OFFLINE_KEY,
        base_url=_OFFLINE_BASE_URL,
        http_client=httpx2.Client(transport=transport),
        max_retries=retries,
        timeout=s.timeout_s,
    )


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
    return (f"model: offline stand-in, deterministic (context window {transport.model.context_window:,} tokens): "
            f"{OFFLINE_NOTE}")
