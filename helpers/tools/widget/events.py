"""The live chat widget over any memory strategy: events, threads and the send path. Tools for 07_elephant, "Chat with the elephant".

`ChatWidget(memory)` is a thin wrapper with no memory logic of its own: every message goes through
`memory.turn(text)` and the side panel is redrawn from `memory.state()` after every turn (the HTML comes
from helpers.tools.widget.render). `send(text)` runs the same code path as the Send button, so a notebook can
script a demo and assert on it. Given `answers` ({question: expected answer}), a turn asking one of those
questions is marked "answer in request: yes/no" (`answer_check`): whether memory put the answer where the model
could read it, whatever the model then said. `forget()` (the Forget me button) erases the memory's user in every
collection (helpers.memory.forget). CSS classes `gte-chat`, `gte-log`, `gte-input`, `gte-send`, `gte-forget` and
`gte-answer` name its parts.
"""

from __future__ import annotations

import asyncio
import html
import re
import time
from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets

from helpers.bench.scoring import answer_in_request
from helpers.llm import mode_line
from helpers.memory import EmptyMessageError, TurnError, TurnResult
from helpers.memory.forget import forget_user
from helpers.pricing import CostLedger, cost_of
from helpers.tools.widget.render import (
    MUTED,
    answer_html,
    cost_html,
    gauge_of,
    gauge_panel_html,
    gauge_scale,
    log_html,
    restart_note_html,
    retrieved_html,
    state_error_html,
    summary_html,
    window_html,
)

__all__ = ["ChatWidget", "MAX_LOG_LINES", "SETTLE_S", "SETTLE_MAX_S"]

MAX_LOG_LINES = 500  # older lines are dropped from the display (the store keeps everything)
# The browser throttles text-box updates (one in flight, the rest buffered) but sends the Enter/click event at
# once, so the event can overtake the last keystrokes: a click or Enter waits until the text has been quiet
# this long (at most SETTLE_MAX_S) before sending. Measured: without it, typing at 15 ms/key lost the tail.
SETTLE_S = 0.2
SETTLE_MAX_S = 2.0


def _question_key(text: str) -> str:
    """A question as the known-answer table matches it: lower case, words only."""
    return " ".join(re.findall(r"[\w'-]+", text.lower()))


class ChatWidget(widgets.VBox):
    """Chat with a memory strategy in the notebook; the side panel shows what the next request will carry."""

    def __init__(
        self, memory: Any, *, title: str | None = None, answers: Mapping[str, str] | None = None, **kwargs: Any
    ):
        if not callable(getattr(memory, "turn", None)) or not callable(getattr(memory, "state", None)):
            raise TypeError(f"{type(memory).__name__} is not a memory: ChatWidget needs turn(text) and state()")
        if answers is not None and not all(isinstance(k, str) and isinstance(v, str) for k, v in answers.items()):
            raise TypeError("answers must map each known question (str) to its expected answer (str)")
        self.memory = memory
        self.answers = {_question_key(q): (q, a) for q, a in (answers or {}).items()}
        self.answer_check: dict | None = None  # the last turn's known-answer verdict, if it asked a known question
        self._gauge_scale: int | None = None  # the gauge's scale: kept from turn to turn, grown only when needed
        self.lines: list[tuple[str, str]] = []  # (role, text) shown in the log
        self.last_result: TurnResult | None = None
        self.last_error: BaseException | None = None
        self.total_cost_usd = 0.0
        self._busy = False
        self._last_cost: dict | None = None

        stage = getattr(memory, "stage", type(memory).__name__)
        client = getattr(memory, "client", None)
        mode = (
            f'<div class="gte-mode" style="{MUTED};font-size:12px">{html.escape(mode_line(client))}</div>'
            if client is not None
            else ""
        )  # which model answers, once, up front
        self.header = widgets.HTML(f"<b>{html.escape(title or f'Chat — {stage} memory')}</b>{mode}")
        self.log_view = widgets.HTML(layout=widgets.Layout(width="100%", margin="0"))
        self.input = widgets.Text(
            placeholder="Type a message and press Enter",
            continuous_update=True,
            layout=widgets.Layout(flex="1 1 auto", width="auto"),
        )
        self.send_button = widgets.Button(
            description="Send", button_style="primary", icon="paper-plane", layout=widgets.Layout(width="90px")
        )
        self.status = widgets.HTML()
        self.answer_view = widgets.HTML(layout=widgets.Layout(width="100%", margin="0"))
        self.forget_button = widgets.Button(
            description="Forget me", button_style="danger", icon="trash", layout=widgets.Layout(width="110px")
        )
        self.forget_button.on_click(lambda _button: self.forget())
        per_user = getattr(memory, "store", None) is not None and bool(getattr(memory, "user_id", None))
        self.forget_button.layout.display = None if per_user else "none"  # only a memory kept per user
        self.summary_view = widgets.HTML(layout=widgets.Layout(width="100%", margin="0"))
        self.window_view = widgets.HTML(layout=widgets.Layout(width="100%", margin="0"))
        self.gauge_view = widgets.HTML(layout=widgets.Layout(width="100%", margin="0"))
        self.retrieved_view = widgets.HTML(layout=widgets.Layout(width="100%", margin="0"))
        self.cost_view = widgets.HTML(layout=widgets.Layout(width="100%", margin="0"))
        for part, css in [
            (self.log_view, "gte-log"),
            (self.input, "gte-input"),
            (self.send_button, "gte-send"),
            (self.status, "gte-status"),
            (self.answer_view, "gte-answer"),
            (self.forget_button, "gte-forget"),
            (self.summary_view, "gte-summary"),
            (self.window_view, "gte-window"),
            (self.gauge_view, "gte-gauge"),
            (self.retrieved_view, "gte-retrieved"),
            (self.cost_view, "gte-cost"),
        ]:
            part.add_class(css)

        self._requested = False  # a click/Enter is waiting for the text box to settle
        self._value_at = 0.0  # when the text box's value last changed
        self._task: asyncio.Task | None = None
        self.send_button.on_click(lambda _button: self._request_send())
        # Enter: the text box sends a {"event": "submit"} message (what the deprecated Text.on_submit listens to).
        self.input.on_msg(self._on_input_msg)
        self.input.observe(self._on_value, "value")

        # Flex items that may shrink (min_width 0) and wrap: the side panel moves below the chat in a narrow
        # cell instead of being clipped at the cell's edge.
        left = widgets.VBox(
            [
                self.log_view,
                widgets.HBox([self.input, self.send_button, self.forget_button]),
                self.answer_view,
                self.status,
            ],
            layout=widgets.Layout(flex="3 1 340px", min_width="0", padding="0 8px 0 0"),
        )
        right = widgets.VBox(
            [self.gauge_view, self.summary_view, self.window_view, self.retrieved_view, self.cost_view],
            layout=widgets.Layout(flex="2 1 280px", min_width="0"),
        )
        body = widgets.HBox([left, right], layout=widgets.Layout(width="100%", flex_flow="row wrap"))
        super().__init__([self.header, body], **kwargs)
        self.add_class("gte-chat")
        self._render_log()
        self.refresh()

    def show(self) -> None:
        """Display the chat, then a plain note that survives a kernel restart and says to re-run the cell."""
        from IPython.display import HTML, display

        display(self, HTML(restart_note_html()))

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
        self.status.value = f'<span style="{MUTED}">thinking…</span>'
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
        self._check_answer(text, result)
        if self.input.value == text:
            self.input.value = ""
        self._record_cost(result, ledger, seen)
        self.refresh()
        return result

    def _check_answer(self, text: str, result: TurnResult) -> None:
        """A known question: was its answer in the request? (the marker under the chat)."""
        known = self.answers.get(_question_key(text))
        self.answer_check = (
            None
            if known is None
            else {
                "question": known[0],
                "answer": known[1],
                "in_request": bool(answer_in_request(result.request, known[1])),
            }
        )
        self.answer_view.value = answer_html(self.answer_check)

    def forget(self) -> dict | None:
        """Erase this memory's user everywhere (the Forget me button); returns what was deleted, or None."""
        store, user_id = getattr(self.memory, "store", None), getattr(self.memory, "user_id", None)
        if self._busy:
            self._add("notice", "Still answering the previous message — wait for it, then forget.")
            return None
        if store is None or not user_id:
            self._add("notice", "This memory keeps nothing per user: there is nothing to forget.")
            return None
        try:
            erased = forget_user(store, user_id, memories=[self.memory])
        except Exception as err:  # never let a callback crash: say what failed
            self.last_error = err
            self._add("error", f"Could not forget {user_id}: {type(err).__name__}: {err}")
            return None
        self.answer_check, self.answer_view.value = None, ""
        self._add(
            "notice",
            f"Forgot {user_id}: {erased['total']} documents deleted from every collection (sessions, logs, "
            "memories). Copies outside the collections (the database's oplog, backups) are the operator's to purge.",
        )
        self.refresh()
        return erased

    # -- helpers
    def _room(self, gauge: dict) -> int:
        """Tokens the gauge's fixed parts may still grow by: the summary up to its cap and the memories up to their
        budget (none when one context budget covers them), so the scale is set once and stays put."""
        if "memory_cap" in gauge:
            return 0
        cap = getattr(self.memory, "summary_max_tokens", None)
        budget = getattr(getattr(self.memory, "long_term", None), "memory_budget", None)
        grow = [(cap, gauge.get("summary")), (budget, gauge.get("memories"))]
        return sum(max(0, int(limit) - int(now or 0)) for limit, now in grow if isinstance(limit, (int, float)))

    def _set_enabled(self, enabled: bool) -> None:
        self.send_button.disabled = not enabled
        self.forget_button.disabled = not enabled
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
        self.log_view.value = log_html(self.lines)

    def _record_cost(self, result: TurnResult, ledger: CostLedger | None, seen: int) -> None:
        usage = {"input_tokens": result.input_tokens, "output_tokens": result.output_tokens}
        cache = {
            name: int(getattr(result, name, 0) or 0)
            for name in ("cache_creation_input_tokens", "cache_read_input_tokens")
        }
        by_purpose: dict[str, float] = {}
        if ledger is not None and len(ledger.entries) > seen:
            for entry in ledger.entries[seen:]:
                by_purpose[entry.purpose] = by_purpose.get(entry.purpose, 0.0) + entry.cost_usd
            cache = {name: sum(getattr(e, name) for e in ledger.entries[seen:]) for name in cache}
            cost: float | None = sum(by_purpose.values())
        else:
            try:
                cost = cost_of({**usage, **cache}, getattr(self.memory, "model", None) or "")
            except (KeyError, ValueError):
                cost = None
            if cost is not None:
                by_purpose = {"chat": cost}
        if cost is not None:
            self.total_cost_usd += cost
        self._last_cost = {"cost": cost, "by_purpose": by_purpose, **usage, **cache}

    def refresh(self) -> dict | None:
        """Redraw the side panel from `memory.state()`; returns the state (None if it could not be read)."""
        try:
            state = self.memory.state()
        except Exception as err:  # e.g. the store went away: say so in the panel, keep the chat usable
            self.summary_view.value = state_error_html(err)
            return None
        self.summary_view.value = summary_html(state)
        self.window_view.value = window_html(state)
        gauge = gauge_of(state)
        self._gauge_scale = gauge_scale(gauge, self._gauge_scale, self._room(gauge))
        self.gauge_view.value = gauge_panel_html(state, self._gauge_scale)
        self.retrieved_view.value = retrieved_html(state)
        self.cost_view.value = cost_html(self._last_cost, self.total_cost_usd)
        return state
