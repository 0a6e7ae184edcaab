"""Pure state → HTML for the chat widget: log, summary, window, token gauge, memories, cost. Tools for 07_elephant, "Chat with the elephant".

Every function takes plain data (a `memory.state()` dict, log lines) and returns an HTML string, so each
panel can be tested without a kernel or a browser. Every part carries a CSS class (`gte-summary`,
`gte-window`, `gte-gauge`, `gte-retrieved`, `gte-cost`; log lines `gte-msg-user`, `gte-msg-assistant`,
`gte-msg-error`, `gte-msg-notice`) so browser tests can find them.
"""

from __future__ import annotations

import dataclasses
import html
from typing import Any

__all__ = [
    "gauge_html",
    "gauge_of",
    "log_html",
    "summary_html",
    "state_error_html",
    "window_html",
    "gauge_panel_html",
    "retrieved_html",
    "cost_html",
    "answer_html",
    "gauge_scale",
    "restart_note_html",
    "MUTED",
]

_PANEL = (
    "border:1px solid var(--jp-border-color2,#ddd);border-radius:6px;padding:6px 8px;margin:0 0 6px 0;"
    "font-size:12px;line-height:1.35;box-sizing:border-box;max-width:100%;overflow-wrap:anywhere"
)
_HEAD = "font-weight:600;margin-bottom:3px"
MUTED = _MUTED = "color:var(--jp-ui-font-color2,#777)"  # MUTED: for the widget's own notes
_LINE = {  # role -> inline style of a log line (work in light and dark themes)
    "user": "background:rgba(33,150,243,.14);border-left:3px solid #2196f3",
    "assistant": "background:rgba(76,175,80,.12);border-left:3px solid #4caf50",
    "error": "background:rgba(244,67,54,.14);border-left:3px solid #f44336;color:var(--jp-error-color1,#c62828)",
    "notice": "background:rgba(255,152,0,.12);border-left:3px solid #ff9800",
}
_LABEL = {"user": "You", "assistant": "Assistant", "error": "Error", "notice": "Notice"}
_KIND_NAMES = {"fact": "fact", "episode": "past exchange"}
_GAUGE_COLOURS = {"system": "#9e9e9e", "summary": "#ab47bc", "memories": "#ffa726", "window": "#42a5f5"}


def _esc(text: Any) -> str:
    """`text` as HTML-safe text (quotes escaped too)."""
    return html.escape(str(text), quote=True)


def _panel(css_class: str, title: str, body: str) -> str:
    """A titled, bordered side panel; `css_class`-body names it for browser tests."""
    return f'<div class="{css_class}-body" style="{_PANEL}"><div style="{_HEAD}">{_esc(title)}</div>{body}</div>'


def _parts(gauge: dict) -> tuple[dict, dict, bool, int, int]:
    """(parts, the known positive ones, shared budget?, fixed tokens, total tokens) of a gauge."""
    parts = {name: gauge.get(name) for name in ("system", "summary", "memories", "window")}
    known = {name: int(v) for name, v in parts.items() if isinstance(v, (int, float)) and v > 0}
    shared = "memory_cap" in gauge  # one context budget covers summary + memories + window (helpers.memory.budget)
    fixed = sum(v for name, v in known.items() if name == "system" or (name != "window" and not shared))
    return parts, known, shared, fixed, sum(known.values())


def gauge_scale(gauge: dict, previous: int | None = None, room: int = 0) -> int:
    """The token scale of the gauge's bar: a round number a little past the budget line (or the total), never
    smaller than `previous`, so a widget that passes its last scale back keeps one scale from turn to turn. `room`:
    tokens the fixed parts may still grow by (a summary below its cap), so the first scale already has space."""
    _parts_, _known, _shared, fixed, total = _parts(gauge)
    budget = gauge.get("budget")
    needed = _round_up(max(total, fixed + room + budget if budget else total, 1) * 1.05)
    return max(needed, previous or 0)


def gauge_html(gauge: dict, scale: int | None = None) -> str:
    """A stacked bar: system / summary / memories / window tokens, with the one budget marked (`scale`: the bar's
    token scale, at least what this gauge needs; see `gauge_scale`)."""
    parts, known, shared, fixed, total = _parts(gauge)
    budget = gauge.get("budget")
    # The window has room up to its budget after the fixed parts; the bar shows that room, on a round scale a
    # little past it so the budget line sits where it is, labelled with the budget, with the numbers at the ends.
    scale = gauge_scale(gauge, scale)
    segments = "".join(
        f'<div class="gte-gauge-{name}" title="{name}: {tokens:,} tokens" style="width:{100 * tokens / scale:.2f}%;'
        f'background:{_GAUGE_COLOURS[name]};height:100%"></div>'
        for name, tokens in known.items()
    )
    marker = ""
    if budget:
        left = min(100.0, 100 * (fixed + budget) / scale)
        marker = (
            f'<div title="{"context" if shared else "window"} budget" style="position:absolute;left:{left:.2f}%;top:-3px;bottom:-3px;'
            'border-left:2px dashed #e53935"></div>'
        )
    above, below = _scale_html(
        scale, fixed + budget if budget else None, "context budget" if shared else "window budget", budget
    )
    bar = (
        f'{above}<div style="position:relative;display:flex;height:14px;border-radius:3px;'
        f'background:var(--jp-layout-color3,#eee);margin:0">{segments}{marker}</div>{below}'
    )

    def label(name: str) -> str:
        value = parts[name]
        shown = "?" if value is None else f"{int(value):,}"
        if name == "window" and budget and not shared:
            shown += f" / {int(budget):,}"
        if name == "memories" and shared:
            shown += f" (up to {int(gauge['memory_cap']):,}, {_esc(str(gauge.get('evidence', '')))} evidence)"
        swatch = f'<span style="display:inline-block;width:9px;height:9px;background:{_GAUGE_COLOURS[name]}"></span>'
        return (
            f'<span class="gte-gauge-label-{name}" style="display:inline-block;white-space:nowrap;'
            f'margin-right:8px">{swatch} {name} {shown}</span>'
        )

    legend = "".join(label(name) for name in parts)
    note = f'<div style="{_MUTED}">≈ {total:,} input tokens before the new message'
    scope = "context budget (summary + memories + window)" if shared else "window budget"
    note += (
        f"; {scope} {int(budget):,} tokens: the dashed red line, placed after the fixed parts</div>"
        if budget and fixed
        else f"; {scope} {int(budget):,} tokens: the dashed red line</div>"
        if budget
        else "</div>"
    )
    return bar + f"<div>{legend}</div>" + note


def _round_up(value: float) -> int:
    """The next round number at or above `value` (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 times a power of ten)."""
    power = 10 ** max(len(str(int(value))) - 1, 0)
    for step in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if step * power >= value:
            return int(step * power)
    return int(10 * power)


def _scale_html(scale: int, budget_at: int | None, budget_name: str, budget: int | None = None) -> tuple[str, str]:
    """(above the bar: the budget's name and value over its line at `budget_at`; below it: 0 and the scale's end in
    tokens). The label states the budget itself, the one number the legend and the note use too."""
    above = ""
    if budget_at:
        left = min(100.0, 100 * budget_at / scale)
        # the text sits beside the line on the side with room, so it never runs past the bar's ends
        value = int(budget if budget is not None else budget_at)
        side, text = (
            (f"right:{100 - left:.2f}%", f"{budget_name} {value:,} ┐")
            if left > 50
            else (f"left:{left:.2f}%", f"┌ {budget_name} {value:,}")
        )
        above = (
            f'<div style="position:relative;height:14px;font-size:10px;margin-top:4px">'
            f'<span class="gte-gauge-budget" title="{budget_name}" style="position:absolute;{side};'
            f'color:#e53935;white-space:nowrap">{text}</span></div>'
        )
    below = (
        f'<div class="gte-gauge-scale" style="position:relative;height:14px;font-size:10px;{_MUTED}">'
        f'<span style="position:absolute;left:0">0</span>'
        f'<span style="position:absolute;right:0">{scale:,} tokens</span></div>'
    )
    return above, below


def log_html(lines: list[tuple[str, str]]) -> str:
    """The chat log: one coloured line per (role, text), newest at the bottom, in a scroll box pinned to it."""
    rows = "".join(
        f'<div class="gte-msg gte-msg-{role}" style="{_LINE[role]};padding:4px 8px;margin:3px 0;'
        f'border-radius:3px;white-space:pre-wrap;overflow-wrap:anywhere"><b>{_LABEL[role]}:</b> {_esc(text)}</div>'
        for role, text in lines
    )
    if not rows:
        rows = f'<div style="{_MUTED}">No messages yet.</div>'
    count = (
        (
            f'<div class="gte-log-count" style="{_MUTED};font-size:11px">{len(lines)} messages, newest at '
            "the bottom: scroll up for older ones</div>"
        )
        if len(lines) > 6
        else ""
    )
    # column-reverse keeps the scroll position pinned to the newest line; a scrollbar that is always there
    # shows that older lines are above
    return (
        f'{count}<div class="gte-log-scroll" style="max-height:380px;overflow-y:scroll;'
        f'display:flex;flex-direction:column-reverse;{_PANEL}"><div>{rows}</div></div>'
    )


def summary_html(state: dict) -> str:
    """The rolling-summary panel: the summary, its size and retention, lost facts, unsummarised turns."""
    summary = state.get("summary") or ""
    retention = state.get("retention")
    if summary:
        body = f'<div class="gte-summary-text" style="white-space:pre-wrap">{_esc(summary)}</div>'
        tokens = state.get("summary_tokens")
        meta = [f"{tokens:,} tokens"] if tokens else []
        meta.append(
            "retention n/a (no stated facts to check)"
            if retention is None
            else f"retention {retention:.0%} of the facts it is responsible for"
        )
        body += f'<div class="gte-retention" style="{_MUTED}">{_esc(" · ".join(meta))}</div>'
        missing = state.get("missing") or []
        if missing:  # the facts the summary lost, each on its own line
            lost = "".join(f"<li>{_esc(m)}</li>" for m in missing[:8])
            more = f"<li>… and {len(missing) - 8} more</li>" if len(missing) > 8 else ""
            body += (
                f'<div class="gte-lost" style="{_LINE["error"]};padding:2px 6px">lost from the summary:'
                f'<ul style="margin:2px 0 0 0;padding-left:1.2em">{lost}{more}</ul></div>'
            )
    elif state.get("budget") is None and state.get("stage") in ("stateless", "history"):
        body = f'<div style="{_MUTED}">This strategy keeps no summary.</div>'
    else:
        body = f'<div style="{_MUTED}">(empty: nothing has left the window yet)</div>'
    warning = state.get("summary_warning")  # turns left out of the summary (in the logs; --rebuild recovers)
    if warning or state.get("unsummarised"):
        text = f"{state.get('unsummarised') or 0} message(s) unsummarised: {warning or 'run --rebuild'}"
        body += f'<div class="gte-summary-warning" style="{_LINE["notice"]}">⚠ {_esc(text)}</div>'
    return _panel("gte-summary", "Rolling summary", body)


def state_error_html(err: BaseException) -> str:
    """The summary panel when `memory.state()` failed: the error, so the chat stays usable."""
    return _panel(
        "gte-summary",
        "Summary",
        f'<div style="{_LINE["error"]}">could not read '
        f"the memory's state: {_esc(type(err).__name__)}: {_esc(err)}</div>",
    )


def window_html(state: dict) -> str:
    """The window panel: the messages the next request resends, with their token counts and the budget."""
    window = state.get("window") or []
    rows = "".join(
        f'<li class="gte-window-msg gte-window-{_esc(m.get("role"))}"><b>{_esc(m.get("role"))}</b> '
        f'<span style="{_MUTED}">({_esc(m.get("tokens") if m.get("tokens") is not None else "?")} tok)</span> '
        f"{_esc(_short(m.get('text', '')))}</li>"
        for m in window
    )
    budget = state.get("budget")
    head = f"Window: {len(window)} messages, {state.get('window_tokens', 0) or 0:,} tokens"
    head += f" (budget {budget:,})" if budget else ""
    body = f'<ol style="margin:0;padding-left:18px">{rows}</ol>' if rows else f'<div style="{_MUTED}">(empty)</div>'
    return _panel("gte-window", head, body)


def gauge_of(state: dict) -> dict:
    """The state's gauge, or one built from its summary and window tokens."""
    return state.get("gauge") or {
        "system": None,
        "summary": state.get("summary_tokens") or 0,
        "memories": 0,
        "window": state.get("window_tokens") or 0,
        "budget": state.get("budget"),
    }


def gauge_panel_html(state: dict, scale: int | None = None) -> str:
    """The token-gauge panel for `state` (its "gauge", or one built from summary and window tokens)."""
    gauge = gauge_of(state)
    body = gauge_html(gauge, scale)
    if state.get("gauge") and gauge.get("system") is None:
        body += f'<div style="{_MUTED}">system ?: the system prompt just changed; the next turn counts it</div>'
    return _panel("gte-gauge", "Token gauge (next request)", body)


def retrieved_html(state: dict) -> str:
    """The long-term memory panel: what was retrieved for the last turn, and the stored memories."""
    retrieved = state.get("retrieved") or []
    memories = state.get("memories") or []
    if not retrieved and not memories and state.get("stage") != "vector":
        return _panel(
            "gte-retrieved",
            "Retrieved memories",
            f'<div style="{_MUTED}">none: this stage has no long-term memory</div>',
        )
    rows = "".join(f"<li>{_memory_line(m)}</li>" for m in retrieved)
    kinds: dict[str, int] = {}
    for m in retrieved:
        kind = str(getattr(m, "kind", None) or (m.get("kind") if isinstance(m, dict) else None) or "memory")
        kinds[kind] = kinds.get(kind, 0) + 1
    split = " + ".join(f"{n} {_KIND_NAMES.get(k, k)}{'s' if n != 1 else ''}" for k, n in kinds.items())
    floor, ranked = state.get("min_similarity"), state.get("ranked")
    counts = f"{len(retrieved)} sent in the last request{f' ({split})' if len(kinds) > 1 else ''}"
    if ranked:  # the same search's numbers: ranked → at or above the floor → sent (those that fit the budget)
        counts = (
            f"{ranked} ranked, {state.get('above_floor', 0)} at or above the floor"
            f"{f' {floor:.2f}' if floor is not None else ''}, " + counts
        )
    sent = f'<div class="gte-retrieved-count" style="{_MUTED}">{_esc(counts)}</div>' if retrieved or ranked else ""
    if floor is not None and floor > -1:
        sent += (
            f'<div class="gte-floor" style="{_MUTED}">relevance floor: similarity {floor:.2f}; '
            "memories below it are not sent</div>"
        )
    body = sent + (
        f'<ul style="margin:0;padding-left:18px">{rows}</ul>'
        if rows
        else f'<div style="{_MUTED}">nothing retrieved for the last turn</div>'
    )
    if memories or state.get("stored_turns"):
        items = "".join(f"<li>{_memory_line(m)}</li>" for m in memories[:50])
        turns = state.get("stored_turns")
        also = f" + {turns} stored turns" if turns is not None else ", with past exchanges"
        body += (
            f'<details class="gte-stored"><summary>{len(memories)} stored facts{also}: what retrieval '
            f"searches (the facts listed)</summary>"
            f'<ul style="margin:0;padding-left:18px">{items}</ul></details>'
        )
    return _panel("gte-retrieved", "Retrieved for the last turn", body)


def cost_html(last: dict | None, total_usd: float) -> str:
    """The cost panel: the last turn's USD (split by purpose when several calls were made), its prompt-cache
    reads and writes when there were any, and the running total."""
    if last is None:
        body = f'<div style="{_MUTED}">no turn yet</div>'
    else:
        cost = "n/a (no price for this model)" if last["cost"] is None else f"${last['cost']:.6f}"
        by = last["by_purpose"]
        parts = " + ".join(f"{p} ${v:.6f}" for p, v in by.items()) if len(by) > 1 else ""
        body = (
            f"<div>last turn: <b>{cost}</b>{f' ({_esc(parts)})' if parts else ''}</div>"
            f"<div>chat call: {last['input_tokens']:,} input + {last['output_tokens']:,} output tokens</div>"
            f"{_cache_line(last)}"
            f'<div style="{_MUTED}">this widget so far: ${total_usd:.6f}</div>'
        )
    return _panel("gte-cost", "Cost", body)


def answer_html(check: dict | None) -> str:
    """The known-answer marker: was the expected answer of a known question in the request the model read?"""
    if not check:
        return ""
    found = check["in_request"]
    style = _LINE["assistant"] if found else _LINE["error"]
    verdict = "yes" if found else "no"
    detail = "was in what the model read" if found else "was not in what the model read: memory did not bring it"
    return (
        f'<div class="gte-answer-in-request gte-answer-{verdict}" style="{style};padding:2px 6px;margin:3px 0">'
        f"answer in request: <b>{verdict}</b> ({_esc(check['answer'])!s} {detail})</div>"
    )


def _cache_line(last: dict) -> str:
    """'prompt cache: N read + M written tokens' for the turn's calls, or nothing when the cache was not used."""
    read, written = last.get("cache_read_input_tokens") or 0, last.get("cache_creation_input_tokens") or 0
    if not (read or written):
        return ""
    return f'<div class="gte-cache">prompt cache: {read:,} read + {written:,} written tokens</div>'


def _short(text: Any, limit: int = 160) -> str:
    """`text` cut to `limit` characters with an ellipsis."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _memory_line(m: Any) -> str:
    """One retrieved or stored memory (a dict or a dataclass): [kind] text (score, date)."""
    if dataclasses.is_dataclass(m) and not isinstance(m, type):
        m = dataclasses.asdict(m)
    if not isinstance(m, dict):
        return _esc(_short(m))
    meta = []
    if isinstance(m.get("similarity"), (int, float)):  # cosine to the question: comparable across turns
        meta.append(f"similarity {m['similarity']:.2f}")
    elif isinstance(m.get("lexical"), (int, float)) and m["lexical"] > 0:
        meta.append(f"BM25 {m['lexical']:.1f}")
    elif isinstance(m.get("score"), (int, float)) and m["score"] > 0:
        meta.append(f"score {m['score']:.2f}")
    elif m.get("score") == 0 and m.get("kind") == "episode":
        meta.append("neighbour of a hit")
    if m.get("created_at"):
        meta.append(str(m["created_at"])[:16])
    kind = (
        f'<span class="gte-kind-{_esc(m.get("kind", ""))}" style="{_MUTED}">[{_esc(m.get("kind", "memory"))}]</span> '
    )
    tail = f' <span style="{_MUTED}">({_esc(", ".join(meta))})</span>' if meta else ""
    return kind + _esc(_short(m.get("text", ""))) + tail


def restart_note_html() -> str:
    """The plain note shown under a chat: it outlives the kernel, which the chat does not (after a restart JupyterLab
    can only say "model not found" where the chat was), and says what to do."""
    return (
        f'<div class="gte-restart-note" style="{_MUTED};font-size:12px">After a kernel restart this chat stops '
        "(JupyterLab may show <i>model not found</i> in its place): run the notebook's setup cell, then re-run this "
        "cell to get a new chat. Your conversation is kept in the database.</div>"
    )
