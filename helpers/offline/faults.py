"""Plumbing: injected faults for the offline model (rate limit, overloaded, server error, timeout)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import httpx2

__all__ = ["OfflineAPIError", "FaultPlan", "FAULTS", "FAULT_KINDS"]


class OfflineAPIError(Exception):
    """An error the offline model answers with, in the API's shape (status + error type + message)."""

    def __init__(self, status: int, kind: str, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.kind, self.message, self.headers = status, kind, message, headers or {}

    def response(self) -> httpx2.Response:
        """The API's error response: `{"type": "error", "error": {"type", "message"}, "request_id"}` and the
        `request-id` header (https://platform.claude.com/docs/en/api/errors, "Error shapes")."""
        digest = hashlib.sha256(f"{self.status}\x00{self.kind}\x00{self.message}".encode()).hexdigest()[:24]
        request_id = f"req_offline_{digest}"
        body = {"type": "error", "error": {"type": self.kind, "message": self.message}, "request_id": request_id}
        return httpx2.Response(self.status, json=body, headers={"request-id": request_id, **self.headers})


FAULTS = {
    "429": (429, "rate_limit_error", "Number of request tokens has exceeded your rate limit (offline fault)."),
    "529": (529, "overloaded_error", "Overloaded (offline fault)."),
    "500": (500, "api_error", "Internal server error (offline fault)."),
}
FAULT_KINDS = (*FAULTS, "timeout", "connect", "midstream")


@dataclass
class FaultPlan:
    """Faults to serve on the next `/v1/messages` requests, in order: e.g. `FaultPlan.parse("529x2,429")`.

    Kinds: 429 (rate limit, with retry-after), 529 (overloaded), 500 (server error), timeout (read
    timeout), connect (connection refused), midstream (a stream fails after it started, with the docs' `error`
    event: overloaded_error; a request that does not stream gets the 529), ok (serve normally). `KINDx*` repeats
    forever.
    """

    queue: list[str] = field(default_factory=list)
    forever: str | None = None
    retry_after_ms: int = 20
    served: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, spec: str | None, retry_after_ms: int = 20) -> FaultPlan:
        plan = cls(retry_after_ms=retry_after_ms)
        for item in (spec or "").replace(" ", "").split(","):
            if not item:
                continue
            kind, _, times = item.partition("x")
            if kind not in FAULT_KINDS and kind != "ok":
                raise ValueError(f"unknown fault {kind!r} in GTE_OFFLINE_FAULTS; use one of {FAULT_KINDS + ('ok',)}")
            if times == "*":
                plan.forever = kind
                break
            plan.queue.extend([kind] * (int(times) if times else 1))
        return plan

    def next(self) -> str | None:
        kind = self.queue.pop(0) if self.queue else self.forever
        if kind and kind != "ok":
            self.served.append(kind)
            return kind
        return None
