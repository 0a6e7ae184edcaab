"""Plumbing: the models the Messages API serves, as its docs list them: ids, aliases, limits, what each accepts.

Read from the docs on AS_OF (models overview and each model's page, model deprecations, pricing, prompt caching,
thinking); a line that is not from a docs page says where it comes from. A request to a name not here, or to a
retired model, gets the API's 404 `not_found_error` ("model: NAME"). An alias and its dated id are one model: one
entry, one prompt cache, one price (helpers.pricing). When the docs move (a model retires, a new one ships), change
the table and AS_OF; the contract suite's live twin (tests/offline/test_contract_live.py) shows the drift.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["AS_OF", "ModelInfo", "MODELS", "lookup", "canonical", "known_names", "DOCS"]

AS_OF = "2026-12-02"  # the day the tables below were read; a model whose retirement date is on or before it is gone
DOCS = {
    "models": "https://platform.claude.com/docs/en/about-claude/models/overview",
    "deprecations": "https://platform.claude.com/docs/en/about-claude/model-deprecations",
    "caching": "https://platform.claude.com/docs/en/build-with-claude/prompt-caching",
    "thinking": "https://platform.claude.com/docs/en/build-with-claude/thinking",
    "vision": "https://platform.claude.com/docs/en/build-with-claude/vision",
}
ADAPTIVE, ENABLED, DISABLED = "adaptive", "enabled", "disabled"


@dataclass(frozen=True)
class ModelInfo:
    """One model as the docs describe it (the API id first; aliases resolve to it)."""

    id: str
    aliases: tuple[str, ...] = ()
    context: int = 200_000  # context window, tokens
    max_output: int = 64_000  # the largest max_tokens
    thinking: frozenset = frozenset({ENABLED, DISABLED})  # thinking.type values the model accepts
    prefill: bool = True  # a final assistant message continues the reply (4.6 and later: a 400)
    sampling: str = "one"  # 2023-06-01 only: "one" (temperature or top_p, not both), "default" (non-default refused)
    mid_system: bool = False  # a {"role": "system"} message inside `messages` (Opus 4.8 and later)
    forced_tool: bool = True  # tool_choice "any"/"tool" (Sonnet 5.5: a 400)
    min_cache: int = 1024  # minimum cacheable prompt length, tokens
    high_res: bool = False  # images up to 2576 px on the long edge (~3.75 MP) instead of 1568 px (~1.15 MP)
    effort: tuple[str, ...] = ()  # output_config.effort values accepted; () = the parameter is refused
    retires: str | None = None  # ISO date of retirement (requests fail from that day)
    notes: str = ""
    family_max_images: int = field(default=0)  # 0: 100 images for a 200K window, 600 for larger
    thinking_display: str = "summarized"  # thinking.display by default ("omitted" from Claude Opus 4.7 on)
    disable_up_to: str | None = None  # thinking can be disabled only at this effort or lower (Opus 5, Haiku 5.5)

    @property
    def retired(self) -> bool:
        return self.retires is not None and self.retires <= AS_OF

    @property
    def max_images(self) -> int:
        return self.family_max_images or (100 if self.context <= 200_000 else 600)


_NEW = dict(
    context=1_000_000, max_output=128_000, prefill=False, sampling="default", high_res=True, thinking_display="omitted"
)  # Opus 4.7 and later: thinking content omitted by default (whats-new-claude-4-7)
_EFFORT = ("low", "medium", "high", "xhigh", "max")
_ALWAYS_ON = frozenset({ADAPTIVE})  # adaptive thinking always on: thinking cannot be disabled

MODELS: tuple[ModelInfo, ...] = (
    ModelInfo(
        "claude-fable-5-2",
        thinking=_ALWAYS_ON,
        mid_system=True,
        min_cache=512,
        effort=_EFFORT,
        **_NEW,
        notes="min_cache: Fable 5's value (the caching page read names Fable 5)",
    ),
    ModelInfo("claude-mythos-5-2", thinking=_ALWAYS_ON, mid_system=True, min_cache=512, effort=_EFFORT, **_NEW),
    ModelInfo(
        "claude-fable-5-1",
        thinking=_ALWAYS_ON,
        mid_system=True,
        min_cache=512,
        effort=_EFFORT,
        forced_tool=False,
        **_NEW,
        notes="forced_tool: whats-new-opus-5-5 says its breaking changes apply to Fable 5.1 too",
    ),
    ModelInfo("claude-mythos-5-1", thinking=_ALWAYS_ON, mid_system=True, min_cache=512, effort=_EFFORT, **_NEW),
    ModelInfo("claude-fable-5", thinking=_ALWAYS_ON, mid_system=True, min_cache=512, effort=_EFFORT, **_NEW),
    ModelInfo("claude-mythos-5", thinking=_ALWAYS_ON, mid_system=True, min_cache=512, effort=_EFFORT, **_NEW),
    ModelInfo(
        "claude-opus-5-5",
        thinking=_ALWAYS_ON,
        mid_system=True,
        min_cache=512,
        effort=_EFFORT,
        forced_tool=False,  # whats-new-opus-5-5: forced tool use returns an error
        **_NEW,
        notes="min_cache: Opus 5's value",
    ),
    ModelInfo(
        "claude-opus-5",
        thinking=frozenset({ADAPTIVE, DISABLED}),
        disable_up_to="high",
        mid_system=True,
        min_cache=512,
        effort=_EFFORT,
        **_NEW,
    ),
    ModelInfo(
        "claude-sonnet-5-5",
        thinking=frozenset({ADAPTIVE, DISABLED}),
        mid_system=True,
        forced_tool=False,
        effort=_EFFORT,
        **_NEW,
        notes="min_cache: Sonnet 5's value",
    ),
    ModelInfo("claude-sonnet-5", thinking=frozenset({ADAPTIVE, DISABLED}), mid_system=True, effort=_EFFORT, **_NEW),
    ModelInfo(
        "claude-haiku-5-5",
        thinking=frozenset({ADAPTIVE, DISABLED}),
        disable_up_to="high",
        mid_system=True,
        effort=_EFFORT,
        **_NEW,
        notes="min_cache: not on the caching page read; the newer models' 1,024",
    ),
    ModelInfo("claude-opus-4-8", thinking=frozenset({ADAPTIVE, DISABLED}), mid_system=True, effort=_EFFORT, **_NEW),
    ModelInfo("claude-opus-4-7", thinking=frozenset({ADAPTIVE, DISABLED}), min_cache=2048, effort=_EFFORT, **_NEW),
    ModelInfo(
        "claude-opus-4-6",
        context=1_000_000,
        max_output=128_000,
        thinking=frozenset({ADAPTIVE, ENABLED, DISABLED}),
        prefill=False,
        min_cache=4096,
        effort=("low", "medium", "high", "max"),
    ),
    ModelInfo(
        "claude-sonnet-4-6",
        context=1_000_000,
        max_output=128_000,
        thinking=frozenset({ADAPTIVE, ENABLED, DISABLED}),
        prefill=False,
        # 1,024 on https://platform.claude.com/docs/en/build-with-claude/prompt-caching ("Cache limitations"); the
        # page said 2,048 until its revision of May 2026, which is why older pages and gateways still print 2,048
        min_cache=1024,
        effort=("low", "medium", "high", "max"),
        notes="min_cache: 1,024, the prompt-caching page since May 2026 (2,048 before)",
    ),
    ModelInfo(
        "claude-opus-4-5-20251101",
        ("claude-opus-4-5",),
        min_cache=4096,
        effort=("low", "medium", "high"),
        retires="2027-01-22",
    ),
    # 4,096 on https://platform.claude.com/docs/en/build-with-claude/prompt-caching ("Cache limitations")
    ModelInfo("claude-haiku-4-5-20251001", ("claude-haiku-4-5",), min_cache=4096),
    ModelInfo("claude-sonnet-4-5-20250929", ("claude-sonnet-4-5",), retires="2026-11-30"),
    ModelInfo("claude-mythos-preview", retires="2026-06-30", thinking_display="omitted"),
    ModelInfo("claude-opus-4-1-20250805", ("claude-opus-4-1",), max_output=32_000, retires="2026-08-05"),
    ModelInfo(
        "claude-opus-4-20250514", ("claude-opus-4-0", "claude-4-opus-20250514"), max_output=32_000, retires="2026-06-15"
    ),
    ModelInfo("claude-sonnet-4-20250514", ("claude-sonnet-4-0", "claude-4-sonnet-20250514"), retires="2026-06-15"),
    ModelInfo("claude-3-7-sonnet-20250219", ("claude-3-7-sonnet-latest",), retires="2026-02-19"),
    ModelInfo(
        "claude-3-5-haiku-20241022",
        ("claude-3-5-haiku-latest",),
        max_output=8_192,
        min_cache=2048,
        retires="2026-02-19",
    ),
    ModelInfo(
        "claude-3-haiku-20240307",
        max_output=4_096,
        min_cache=2048,
        retires="2026-09-10",
        notes="retirement: Amazon Bedrock's end of life; the deprecations page read does not list it",
    ),
    ModelInfo("claude-3-opus-20240229", ("claude-3-opus-latest",), max_output=4_096, retires="2026-01-05"),
    ModelInfo("claude-3-5-sonnet-20241022", ("claude-3-5-sonnet-latest",), max_output=8_192, retires="2025-10-22"),
    ModelInfo("claude-3-5-sonnet-20240620", max_output=8_192, retires="2025-10-22"),
    ModelInfo("claude-3-sonnet-20240229", max_output=4_096, retires="2025-07-21"),
    ModelInfo("claude-2.1", max_output=4_096, retires="2025-07-21"),
    ModelInfo("claude-2.0", max_output=4_096, retires="2025-07-21"),
)

_BY_NAME: dict[str, ModelInfo] = {name: m for m in MODELS for name in (m.id, *m.aliases)}


def lookup(name: object) -> ModelInfo | None:
    """The model a name (API id or alias) names, or None for a name the docs do not list."""
    return _BY_NAME.get(name) if isinstance(name, str) else None


def canonical(name: str) -> str:
    """The API id of `name` (an alias resolves to its dated id); an unknown name is returned as it is."""
    info = lookup(name)
    return info.id if info else name


def known_names(include_retired: bool = False) -> list[str]:
    """Every name a request may use (ids and aliases), sorted."""
    return sorted(n for m in MODELS if include_retired or not m.retired for n in (m.id, *m.aliases))
