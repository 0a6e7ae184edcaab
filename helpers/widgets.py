"""A live chat widget over any memory strategy: chat log plus summary, window, token gauge and cost. Taught in 06_elephant.

`ChatWidget(memory)` is a thin wrapper with no memory logic of its own: every message goes through
`memory.turn(text)` and the side panel is redrawn from `memory.state()` after every turn. `send(text)`
runs the same code path as the Send button, so a notebook can script a demo and assert on it.

Every part carries a CSS class (`gte-chat`, `gte-log`, `gte-input`, `gte-send`, `gte-summary`,
`gte-window`, `gte-gauge`, `gte-retrieved`, `gte-cost`; log lines `gte-msg-user`, `gte-msg-assistant`,
`gte-msg-error`, `gte-msg-notice`) so browser tests can find them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import html
import time
from typing import Any

import ipywidgets as widgets

from .cost import CostLedger, cost_of
from .memory import EmptyMessageError, TurnError, TurnResult

__all__ = ["ChatWidget", "gauge_html"]

_PANEL = ("border:1px solid var(--jp-border-color2,#ddd);border-radius:6px;padding:6px 8px;margin:0 0 6px 0;"
          "font-size:12px;line-height:1.35;box-sizing:border-box;max-width:100%;overflow-wrap:anywhere")
_HEAD = "font-weight:600;margin-bottom:3px"
_MUTED = "color:var(--jp-ui-font-color2,#777)"
_LINE = {  # role -> inline style of a log line (work in light and dark themes)
    "user": "background:rgba(33,150,243,.14);border-left:3px solid #2196f3",
    "assistant": "background:rgba(76,175,80,.12);border-left:3px solid #4caf50",
    "error": "background:rgba(244,67,54,.14);border-left:3px solid #f44336;color:var(--jp-error-color1,#c62828)",
    "notice": "background:rgba(255,152,0,.12);border-left:3px solid #ff9800",
}
_LABEL = {"user": "You", "assistant": "Assistant", "error": "Error", "notice": "Notice"}
_GAUGE_COLOURS = {"system": "#9e9e9e", "summary": "#ab47bc", "memories": "#ffa726", "window": "#42a5f5"}
MAX_LOG_LINES = 500  # older lines are dropped from the display (the store keeps everything)
# The browser throttles text-box updates (one in flight, the rest buffered) but sends the Enter/click event at
# once, so the event can overtake the last keystrokes: a click or Enter waits until the text has been quiet
# this long (at most SETTLE_MAX_S) before sending. Measured: without it, typing at 15 ms/key lost the tail.
SETTLE_S = 0.2
SETTLE_MAX_S = 2.0


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _panel(css_class: str, title: str, body: str) -> str:
    return f'<div class="{css_class}-body" style="{_PANEL}"><div style="{_HEAD}">{_esc(title)}</div>{body}</div>'


def gauge_html(gauge: dict) -> str:
    """A stacked bar: system / summary / memories / window tokens, with the window's budget marked."""
    parts = {name: gauge.get(name) for name in ("system", "summary", "memories", "window")}
    known = {name: int(v) for name, v in parts.items() if isinstance(v, (int, float)) and v > 0}
    budget = gauge.get("budget")
    shared = "memory_cap" in gauge  # one context budget covers summary + memories + window (helpers.budget)
    fixed = sum(v for name, v in known.items() if name == "system" or (name != "window" and not shared))
    total = sum(known.values())
    # The window has room up to its budget after the fixed parts; the bar shows that room.
    scale = max(total, fixed + budget if budget else total, 1)
    segments = "".join(
        f'<div class="gte-gauge-{name}" title="{name}: {tokens:,} tokens" style="width:{100 * tokens / scale:.2f}%;'
        f'background:{_GAUGE_COLOURS[name]};height:100%"></div>'
        for name, tokens in known.items())
    marker = ""
    if budget:
        left = min(100.0, 100 * (fixed + budget) / scale)
        marker = (f'<div title="{"context" if shared else "window"} budget" style="position:absolute;left:{left:.2f}%;top:-3px;bottom:-3px;'
                  'border-left:2px dashed #e53935"></div>')
    bar = (f'<div style="position:relative;display:flex;height:14px;border-radius:3px;'
           f'background:var(--jp-layout-color3,#eee);margin:4px 0">{segments}{marker}</div>')

    def label(name: str) -> str:
        value = parts[name]
        shown = "?" if value is None else f"{int(value):,}"
        if name == "window" and budget and not shared:
            shown += f" / {int(budget):,}"
        if name == "memories" and shared:
            shown += f" (up to {int(gauge['memory_cap']):,}, {_esc(str(gauge.get('evidence', '')))} evidence)"
        swatch = f'<span style="display:inline-block;width:9px;height:9px;background:{_GAUGE_COLOURS[name]}"></span>'
        return (f'<span class="gte-gauge-label-{name}" style="display:inline-block;white-space:nowrap;'
                f'margin-right:8px">{swatch} {name} {shown}</span>')

    legend = "".join(label(name) for name in parts)
    note = f'<div style="{_MUTED}">≈ {total:,} input tokens before the new message'
    scope = "context budget (summary + memories + window)" if shared else "window budget"
    note += f"; {scope} {int(budget):,} (dashed line)</div>" if budget else "</div>"
    return bar + f"<div>{legend}</div>" + note


class ChatWidget(widgets.VBox):
    """Chat with a memory strategy in the notebook; the side panel shows what the next request will carry."""

    def __init__(self, memory: Any, *, title: str | None = None, **kwargs: Any):
        if not callable(getattr(memory, "turn", None)) or not callable(getattr(memory, "state", None)):
            raise TypeError(f"{type(memory).__name__} is not a memory: ChatWidget needs turn(text) and state()")
        self.memory = memory
        self.lines: list[tuple[str, str]] = []  # (role, text) shown in the log
        self.last_result: TurnResult | None = None
        self.last_error: BaseException | None = None
        self.total_cost_usd = 0.0
        self._busy = False
        self._last_cost: dict | None = None

        stage = getattr(memory, "stage", type(memory).__name__)
        self.header = widgets.HTML(f"<b>{_esc(title or f'Chat — {stage} memory')}</b>")
        self.log_view = widgets.HTML(layout=widgets.Layout(width="100%", margin="0"))
        self.input = widgets.Text(placeholder="Type a message and press Enter", continuous_update=True,
                                  layout=widgets.Layout(flex="1 1 auto", width="auto"))
        self.send_button = widgets.Button(description="Send", button_style="primary", icon="paper-plane",
                                          layout=widgets.Layout(width="90px"))
        self.status = widgets.HTML()
        self.summary_view = widgets.HTML(layout=widgets.Layout(width="100%", margin="0"))
        self.window_view = widgets.HTML(layout=widgets.Layout(width="100%", margin="0"))
        self.gauge_view = widgets.HTML(layout=widgets.Layout(width="100%", margin="0"))
        self.retrieved_view = widgets.HTML(layout=widgets.Layout(width="100%", margin="0"))
        self.cost_view = widgets.HTML(layout=widgets.Layout(width="100%", margin="0"))
        for part, css in [(self.log_view, "gte-log"), (self.input, "gte-input"), (self.send_button, "gte-send"),
                          (self.status, "gte-status"), (self.summary_view, "gte-summary"),
                          (self.window_view, "gte-window"), (self.gauge_view, "gte-gauge"),
                          (self.retrieved_view, "gte-retrieved"), (self.cost_view, "gte-cost")]:
            part.add_class(css)

        self._requested = False     # a click/Enter is waiting for the text box to settle
        self._value_at = 0.0        # when the text box's value last changed
        self._task: asyncio.Task | None = None
        self.send_button.on_click(lambda _button: self._request_send())
        # Enter: the text box sends a {"event": "submit"} message (what the deprecated Text.on_submit listens to).
        self.input.on_msg(self._on_input_msg)
        self.input.observe(self._on_value, "value")

        # Flex items that may shrink (min_width 0) and wrap: the side panel moves below the chat in a narrow
        # cell instead of being clipped at the cell's edge.
        left = widgets.VBox([self.log_view, widgets.HBox([self.input, self.send_button]), self.status],
                            layout=widgets.Layout(flex="3 1 340px", min_width="0", padding="0 8px 0 0"))
        right = widgets.VBox([self.gauge_view, self.summary_view, self.window_view, self.retrieved_view,
                              self.cost_view], layout=widgets.Layout(flex="2 1 280px", min_width="0"))
        body = widgets.HBox([left, right], layout=widgets.Layout(width="100%", flex_flow="row wrap"))
        super().__init__([self.header, body], **kwargs)
        self.add_class("gte-chat")
        self._render_log()
        self.refresh()

    # -- events
    def _on_input_msg(self, _widget: Any, content: dict, _buffers: Any) -> None:
        if isinstance(content, dict) and content.get("event") == "submit":
            self._request_send()

    def _on_value(self, _change: dict) -> None:
        self._value_at = time.monotonic()

    def _request_send(self) -> None:
        """Send the input box from a click or Enter: at once without an event loop, else once the text settles."""
        if self._requested or self._busy:
            return
        try:
            loop = asyncio.get_running_loop()  # in a kernel, comm callbacks run inside its asyncio loop
        except RuntimeError:
            loop = None
        if loop is None or SETTLE_S <= 0:
            self.send()
            return
        self._requested = True
        self._set_enabled(False)
        self._task = loop.create_task(self._send_when_settled())  # keep a reference: the loop holds tasks weakly

    async def _send_when_settled(self) -> None:
        started = time.monotonic()
        try:
            while True:
                await asyncio.sleep(SETTLE_S)  # the kernel handles the late text-box updates meanwhile
                now = time.monotonic()
                if now - self._value_at >= SETTLE_S or now - started >= SETTLE_MAX_S:
                    break
            self._requested = False
            self.send()
        finally:
            self._requested = False
            if not self._busy:
                self._set_enabled(True)

    # -- the one code path for a message
    def send(self, text: str | None = None) -> TurnResult | None:
        """Send `text` (default: the input box) through `memory.turn`; returns the TurnResult, or None on error."""
        text = self.input.value if text is None else text
        if self._busy:
            self._add("notice", "Still answering the previous message — wait for it, then send again.")
            return None
        if not isinstance(text, str) or not text.strip():
            self._add("notice", "Type a message first — nothing was sent.")
            return None
        self._busy = True
        self.last_error = None
        self._set_enabled(False)
        self.status.value = f'<span style="{_MUTED}">thinking…</span>'
        try:
            return self._turn(text)
        finally:
            self._busy = False
            self.status.value = ""
            self._set_enabled(True)

    def _turn(self, text: str) -> TurnResult | None:
        self._add("user", text)
        ledger = getattr(self.memory, "ledger", None)
        ledger = ledger if isinstance(ledger, CostLedger) else None
        seen = len(ledger.entries) if ledger is not None else 0
        try:
            result = self.memory.turn(text)
        except EmptyMessageError as err:
            self.last_error = err
            self._drop_last_user_line()
            self._add("notice", f"Not sent: {err}")
            self._keep(text)
            return None
        except TurnError as err:
            self.last_error = err
            self._add("error", f"{err} — Your message was kept in the input box: press Send to retry.")
            self._keep(getattr(err, "text", None) or text)
            return None
        except Exception as err:  # never let a callback crash: show it, keep the text
            self.last_error = err
            self._add("error", f"Unexpected {type(err).__name__}: {err} — your message was kept in the input box.")
            self._keep(text)
            return None
        self.last_result = result
        self._add("assistant", result.reply)
        if self.input.value == text:
            self.input.value = ""
        self._record_cost(result, ledger, seen)
        self.refresh()
        return result

    # -- helpers
    def _set_enabled(self, enabled: bool) -> None:
        self.send_button.disabled = not enabled
        self.input.disabled = not enabled

    def _keep(self, text: str) -> None:
        self.input.value = text

    def _add(self, role: str, text: str) -> None:
        self.lines.append((role, text))
        del self.lines[:-MAX_LOG_LINES]
        self._render_log()

    def _drop_last_user_line(self) -> None:
        if self.lines and self.lines[-1][0] == "user":
            self.lines.pop()

    def _render_log(self) -> None:
        rows = "".join(
            f'<div class="gte-msg gte-msg-{role}" style="{_LINE[role]};padding:4px 8px;margin:3px 0;'
            f'border-radius:3px;white-space:pre-wrap;overflow-wrap:anywhere"><b>{_LABEL[role]}:</b> {_esc(text)}</div>'
            for role, text in self.lines)
        if not rows:
            rows = f'<div style="{_MUTED}">No messages yet.</div>'
        count = (f'<div class="gte-log-count" style="{_MUTED};font-size:11px">{len(self.lines)} messages, newest at '
                 "the bottom: scroll up for older ones</div>") if len(self.lines) > 6 else ""
        # column-reverse keeps the scroll position pinned to the newest line; a scrollbar that is always there
        # shows that older lines are above
        self.log_view.value = (f'{count}<div class="gte-log-scroll" style="max-height:380px;overflow-y:scroll;'
                               f'display:flex;flex-direction:column-reverse;{_PANEL}"><div>{rows}</div></div>')

    def _record_cost(self, result: TurnResult, ledger: CostLedger | None, seen: int) -> None:
        usage = {"input_tokens": result.input_tokens, "output_tokens": result.output_tokens}
        by_purpose: dict[str, float] = {}
        if ledger is not None and len(ledger.entries) > seen:
            for entry in ledger.entries[seen:]:
                by_purpose[entry.purpose] = by_purpose.get(entry.purpose, 0.0) + entry.cost_usd
            cost: float | None = sum(by_purpose.values())
        else:
            try:
                cost = cost_of(usage, getattr(self.memory, "model", None) or "")
            except (KeyError, ValueError):
                cost = None
            if cost is not None:
                by_purpose = {"chat": cost}
        if cost is not None:
            self.total_cost_usd += cost
        self._last_cost = {"cost": cost, "by_purpose": by_purpose, **usage}

    def refresh(self) -> dict | None:
        """Redraw the side panel from `memory.state()`; returns the state (None if it could not be read)."""
        try:
            state = self.memory.state()
        except Exception as err:  # e.g. the store went away: say so in the panel, keep the chat usable
            self.summary_view.value = _panel("gte-summary", "Summary", f'<div style="{_LINE["error"]}">could not read '
                                             f"the memory's state: {_esc(type(err).__name__)}: {_esc(err)}</div>")
            return None
        self._render_summary(state)
        self._render_window(state)
        self._render_gauge(state)
        self._render_retrieved(state)
        self._render_cost()
        return state

    def _render_summary(self, state: dict) -> None:
        summary = state.get("summary") or ""
        retention = state.get("retention")
        if summary:
            body = f'<div class="gte-summary-text" style="white-space:pre-wrap">{_esc(summary)}</div>'
            tokens = state.get("summary_tokens")
            meta = [f"{tokens:,} tokens"] if tokens else []
            meta.append("retention n/a (no stated facts to check)" if retention is None
                        else f"retention {retention:.0%} of the facts it is responsible for")
            body += f'<div class="gte-retention" style="{_MUTED}">{_esc(" · ".join(meta))}</div>'
            missing = state.get("missing") or []
            if missing:  # the facts the summary lost, each on its own line
                lost = "".join(f"<li>{_esc(m)}</li>" for m in missing[:8])
                more = f"<li>… and {len(missing) - 8} more</li>" if len(missing) > 8 else ""
                body += (f'<div class="gte-lost" style="{_LINE["error"]}">lost from the summary:'
                         f'<ul style="margin:2px 0 0 1em;padding:0">{lost}{more}</ul></div>')
        elif state.get("budget") is None and state.get("stage") in ("stateless", "history"):
            body = f'<div style="{_MUTED}">This strategy keeps no summary.</div>'
        else:
            body = f'<div style="{_MUTED}">(empty: nothing has left the window yet)</div>'
        warning = state.get("summary_warning")  # turns left out of the summary (in the logs; --rebuild recovers)
        if warning or state.get("unsummarised"):
            text = f"{state.get('unsummarised') or 0} message(s) unsummarised: {warning or 'run --rebuild'}"
            body += f'<div class="gte-summary-warning" style="{_LINE["notice"]}">⚠ {_esc(text)}</div>'
        self.summary_view.value = _panel("gte-summary", "Rolling summary", body)

    def _render_window(self, state: dict) -> None:
        window = state.get("window") or []
        rows = "".join(
            f'<li class="gte-window-msg gte-window-{_esc(m.get("role"))}"><b>{_esc(m.get("role"))}</b> '
            f'<span style="{_MUTED}">({_esc(m.get("tokens") if m.get("tokens") is not None else "?")} tok)</span> '
            f'{_esc(_short(m.get("text", "")))}</li>' for m in window)
        budget = state.get("budget")
        head = f"Window: {len(window)} messages, {state.get('window_tokens', 0) or 0:,} tokens"
        head += f" (budget {budget:,})" if budget else ""
        body = f'<ol style="margin:0;padding-left:18px">{rows}</ol>' if rows else f'<div style="{_MUTED}">(empty)</div>'
        self.window_view.value = _panel("gte-window", head, body)

    def _render_gauge(self, state: dict) -> None:
        gauge = state.get("gauge") or {"system": None, "summary": state.get("summary_tokens") or 0, "memories": 0,
                                       "window": state.get("window_tokens") or 0, "budget": state.get("budget")}
        body = gauge_html(gauge)
        if state.get("gauge") and gauge.get("system") is None:
            body += f'<div style="{_MUTED}">system ?: the system prompt just changed; the next turn counts it</div>'
        self.gauge_view.value = _panel("gte-gauge", "Token gauge (next request)", body)

    def _render_retrieved(self, state: dict) -> None:
        retrieved = state.get("retrieved") or []
        memories = state.get("memories") or []
        if not retrieved and not memories and state.get("stage") != "vector":
            self.retrieved_view.value = _panel("gte-retrieved", "Retrieved memories",
                                               f'<div style="{_MUTED}">none: this stage has no long-term memory</div>')
            return
        rows = "".join(f"<li>{_memory_line(m)}</li>" for m in retrieved)
        body = (f'<ul style="margin:0;padding-left:18px">{rows}</ul>' if rows
                else f'<div style="{_MUTED}">nothing retrieved for the last turn</div>')
        if memories:
            items = "".join(f"<li>{_memory_line(m)}</li>" for m in memories[:50])
            body += (f"<details><summary>{len(memories)} stored memories</summary>"
                     f'<ul style="margin:0;padding-left:18px">{items}</ul></details>')
        self.retrieved_view.value = _panel("gte-retrieved", "Retrieved for the last turn", body)

    def _render_cost(self) -> None:
        c = self._last_cost
        if c is None:
            body = f'<div style="{_MUTED}">no turn yet</div>'
        else:
            cost = "n/a (no price for this model)" if c["cost"] is None else f"${c['cost']:.6f}"
            parts = " + ".join(f"{p} ${v:.6f}" for p, v in c["by_purpose"].items()) if len(c["by_purpose"]) > 1 else ""
            body = (f"<div>last turn: <b>{cost}</b>{f' ({_esc(parts)})' if parts else ''}</div>"
                    f"<div>chat call: {c['input_tokens']:,} input + {c['output_tokens']:,} output tokens</div>"
                    f'<div style="{_MUTED}">this widget so far: ${self.total_cost_usd:.6f}</div>')
        self.cost_view.value = _panel("gte-cost", "Cost", body)


def _short(text: Any, limit: int = 160) -> str:
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
    kind = f'<span class="gte-kind-{_esc(m.get("kind", ""))}" style="{_MUTED}">[{_esc(m.get("kind", "memory"))}]</span> '
    tail = f' <span style="{_MUTED}">({_esc(", ".join(meta))})</span>' if meta else ""
    return kind + _esc(_short(m.get("text", ""))) + tail
