"""Plumbing: one request as the contract sees it (body, endpoint, API version, beta features, model) and its refusals.

Every rule of the contract (helpers.offline.contract) reads a `Call` and refuses it with `refuse(...)`: the API's
status, error type and message, raised as an `OfflineAPIError` that the transport turns into the API's error body.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from helpers.offline.catalog import ModelInfo
from helpers.offline.faults import OfflineAPIError

__all__ = ["Call", "refuse", "blocks_of", "DOCS", "VERSIONS", "LATEST_VERSION"]

VERSIONS = ("2023-06-01", "2026-10-21")  # anthropic-version values the API accepts (docs: /docs/en/api/versioning)
LATEST_VERSION = "2026-10-21"
_BASE = "https://platform.claude.com/docs/en"
DOCS = {
    "messages": f"{_BASE}/api/messages",
    "errors": f"{_BASE}/api/errors",
    "versioning": f"{_BASE}/api/versioning",
    "migration": f"{_BASE}/api/migration-2026-10-21",
    "working": f"{_BASE}/build-with-claude/working-with-messages",
    "prefill": f"{_BASE}/build-with-claude/prompt-engineering/prefill-claudes-response",
    "models": f"{_BASE}/about-claude/models/overview",
    "deprecations": f"{_BASE}/about-claude/model-deprecations",
    "whats_new_46": f"{_BASE}/about-claude/models/whats-new-claude-4-6",
    "thinking": f"{_BASE}/build-with-claude/extended-thinking",
    "adaptive": f"{_BASE}/build-with-claude/adaptive-thinking",
    "effort": f"{_BASE}/build-with-claude/effort",
    "tools": f"{_BASE}/agents-and-tools/tool-use/define-tools",
    "tool_calls": f"{_BASE}/agents-and-tools/tool-use/handle-tool-calls",
    "caching": f"{_BASE}/build-with-claude/prompt-caching",
    "vision": f"{_BASE}/build-with-claude/vision",
    "pdf": f"{_BASE}/build-with-claude/pdf-support",
    "citations": f"{_BASE}/build-with-claude/citations",
    "memory": f"{_BASE}/agents-and-tools/tool-use/memory-tool",
    "context_editing": f"{_BASE}/build-with-claude/context-editing",
    "compaction": f"{_BASE}/build-with-claude/compaction",
    "mid_system": f"{_BASE}/build-with-claude/mid-conversation-system-messages",
    "streaming": f"{_BASE}/build-with-claude/streaming",
    "token_counting": f"{_BASE}/build-with-claude/token-counting",
    "structured": f"{_BASE}/build-with-claude/structured-outputs",
    "strict_tools": f"{_BASE}/agents-and-tools/tool-use/strict-tool-use",
    "tool_search": f"{_BASE}/agents-and-tools/tool-use/tool-search-tool",
    "stop_reasons": f"{_BASE}/build-with-claude/handling-stop-reasons",
    "forcing_tools": f"{_BASE}/agents-and-tools/tool-use/define-tools#forcing-tool-use",
    "thinking_display": f"{_BASE}/about-claude/models/whats-new-claude-4-7#thinking-content-omitted-by-default",
}


def refuse(message: str, status: int = 400, kind: str = "invalid_request_error") -> OfflineAPIError:
    """The API's refusal: `raise refuse("messages: ...")`."""
    return OfflineAPIError(status, kind, message)


def blocks_of(content) -> list:
    """A message's content as blocks (a string is one text block, as the API reads it)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content or [])


@dataclass
class Call:
    """A request that passed the shape check: what every other rule reads."""

    body: dict
    endpoint: str  # "create" or "count_tokens"
    version: str = LATEST_VERSION
    beta: bool = False  # sent to /v1/messages?beta=true (client.beta.messages)
    betas: frozenset = frozenset()  # the anthropic-beta header's names
    model: ModelInfo | None = None
    notes: dict = field(default_factory=dict)  # what rules learned for later rules (image sizes, ...)

    @property
    def messages(self) -> list[dict]:
        return self.body.get("messages") or []

    @cached_property
    def blocks(self) -> list[list]:
        """Each message's content as blocks (computed once for every rule)."""
        return [blocks_of(m["content"]) for m in self.messages]

    @cached_property
    def kinds(self) -> frozenset:
        """Every block type in the messages, nested ones (in tool results, search results) included: a rule about a
        kind of block the request does not hold has nothing to check."""
        found = set()
        for m in self.messages:
            content = m["content"]
            if isinstance(content, str):
                found.add("text")
                continue
            for b in content:
                if isinstance(b, dict):
                    found.add(b.get("type"))
                    inner = b.get("content")
                    if isinstance(inner, list):
                        found.update(x.get("type") for x in inner if isinstance(x, dict))
        return frozenset(found)

    @property
    def tools(self) -> list[dict]:
        return self.body.get("tools") or []

    @cached_property
    def thinking(self) -> str | None:
        """The requested thinking type ("enabled", "adaptive", "disabled"), None when not set."""
        t = self.body.get("thinking")
        return t.get("type") if isinstance(t, dict) else None

    @property
    def thinks(self) -> bool:
        return self.thinking in ("enabled", "adaptive")

    @property
    def forced_tool(self) -> bool:
        choice = self.body.get("tool_choice") or {}
        return choice.get("type") in ("any", "tool")
