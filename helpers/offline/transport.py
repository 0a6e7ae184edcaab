"""Plumbing: the httpx2 transport that serves the Messages API from an OfflineModel, through the real anthropic SDK.

Routes: `POST /v1/messages` and `POST /v1/messages/count_tokens`, each also as the beta endpoint
(`?beta=true`, what `client.beta.messages.create`, `.count_tokens`, `.stream` and `.tool_runner` call). A request
with `"stream": true` (what `messages.stream()` sends) is answered with the documented server-sent events
(helpers.offline.stream). Injected faults (helpers.offline.faults) fail the next `/v1/messages` requests; the
`midstream` fault fails a stream after its start, with the docs' `error` event. Any other path is a 404.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import httpx2

from helpers.offline.contract import parse_body
from helpers.offline.faults import FAULTS, FaultPlan, OfflineAPIError
from helpers.offline.model import OfflineModel
from helpers.offline.stream import encode, error_event, sse_events

__all__ = ["OfflineTransport"]

_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


class OfflineTransport(httpx2.BaseTransport):
    """An httpx2 transport that answers Messages API requests with an `OfflineModel`."""

    def __init__(
        self, model: OfflineModel | None = None, faults: FaultPlan | str | None = None, usage: Counter | None = None
    ):
        self.model = model or OfflineModel()
        self.faults = faults if isinstance(faults, FaultPlan) else FaultPlan.parse(faults)
        self.requests: list[tuple[str, dict]] = []  # (path, body) of every request seen, for tests
        self.usage = Counter() if usage is None else usage  # calls and tokens answered (may be shared by clients)

    def _record(self, reply: dict) -> None:
        usage = reply["usage"]
        split = usage.get("cache_creation") or {}
        self.usage.update(
            calls=1,
            **{k: usage[k] for k in _USAGE_KEYS if isinstance(usage.get(k), int)},
            cache_creation_1h_input_tokens=int(split.get("ephemeral_1h_input_tokens") or 0),
        )

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        path, raw = request.url.path, request.read() or b"{}"
        beta = request.url.params.get("beta") == "true"
        try:
            body = parse_body(raw)  # 413 over 32 MB, 400 for what is not JSON
        except OfflineAPIError as err:
            self.requests.append((path, {}))
            return err.response()
        self.requests.append((path, body))
        try:
            if request.method != "POST" or path.rstrip("/") not in ("/v1/messages", "/v1/messages/count_tokens"):
                raise OfflineAPIError(
                    404, "not_found_error", f"the offline model does not serve {request.method} {path}"
                )
            if path.rstrip("/").endswith("count_tokens"):
                counted = self.model.count_tokens_reply(body, headers=request.headers, beta=beta)
                self.usage["count_tokens"] += 1
                return httpx2.Response(200, json=counted, headers=_request_id(counted))
            fault = self.faults.next()
            if fault == "timeout":
                raise httpx2.ReadTimeout("offline fault: read timed out", request=request)
            if fault == "connect":
                raise httpx2.ConnectError("offline fault: connection refused", request=request)
            streaming = isinstance(body, dict) and body.get("stream") is True
            if fault and not (fault == "midstream" and streaming):
                status, kind, message = FAULTS["529" if fault == "midstream" else fault]
                raise OfflineAPIError(status, kind, message, {"retry-after-ms": str(self.faults.retry_after_ms)})
            reply = self.model.create(body, headers=request.headers, beta=beta)
            self._record(reply)
            if not streaming:
                return httpx2.Response(200, json=reply, headers=_request_id(reply))
            events = sse_events(reply)
            if fault == "midstream":  # the stream starts, then the API fails mid-way (streaming docs, "Error events")
                events = [*events[:2], error_event("overloaded_error", "Overloaded (offline fault, mid-stream).")]
            headers = {"content-type": "text/event-stream", **_request_id(reply)}
            return httpx2.Response(200, content=encode(events), headers=headers)
        except OfflineAPIError as err:
            return err.response()
        except (httpx2.TimeoutException, httpx2.ConnectError):
            raise
        except Exception as err:  # a bug of the offline model (or of a Behaviour): the API's 500, never a crash
            message = f"offline model error: {type(err).__name__}: {err} (a bug: please report it with the request)"
            return OfflineAPIError(500, "api_error", message).response()


def _request_id(answer: dict) -> dict:
    """The `request-id` header every API response carries (docs: api/errors, "Request id"), so that the SDK
    sets `message._request_id`: derived from the answer, so a replayed request gets the same id."""
    digest = hashlib.sha256(json.dumps(answer, sort_keys=True, default=str).encode()).hexdigest()[:24]
    return {"request-id": f"req_offline_{digest}"}
