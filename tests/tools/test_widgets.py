"""helpers.tools.widget: ChatWidget callbacks, in-process (no kernel, no browser)."""

import asyncio
import re
import warnings

import pytest

from helpers.config import load_settings
from helpers.db.store import mongomock_store
from helpers.llm import get_client, offline_transport
from helpers.memory import BoundedMemory, EmptyMessageError, HistoryMemory, TurnResult
from helpers.pricing import CostLedger, cost_of
from helpers.tools.widget import ChatWidget, gauge_html
from helpers.tools.widget.render import cost_html, log_html, retrieved_html, summary_html, window_html

FACT = "Hi Scout, my name is Maya and my favorite color is teal."
SCRIPT = [FACT, "I live in Portland.", "What is my name?"]


@pytest.fixture
def settings():
    return load_settings({})


@pytest.fixture
def client(settings):
    return get_client(settings, max_retries=0)


def bounded(client, settings, **kw):
    kw.setdefault("budget", 80)
    return BoundedMemory(
        client,
        settings,
        store=mongomock_store(),
        user_id="u1",
        session_id="s1",
        ledger=kw.pop("ledger", CostLedger()),
        **kw,
    )


def chat_calls(client) -> int:
    return sum(1 for path, _ in offline_transport(client).requests if path.endswith("/v1/messages"))


def lines(widget, role: str) -> int:
    return widget.log_view.value.count(f"gte-msg-{role}")


class StubMemory:
    """A memory whose turn() records what the widget looked like while the turn ran."""

    stage = "stub"
    model = "claude-haiku-4-5"

    def __init__(self, widget_holder: list, fail: BaseException | None = None, state: dict | None = None):
        self.holder, self.fail, self.seen, self._state = widget_holder, fail, [], state or {}

    def turn(self, text):
        w = self.holder[0]
        self.seen.append((text, w.send_button.disabled, w.input.disabled))
        if self.fail:
            raise self.fail
        return TurnResult(f"echo: {text}", 10, 2, "end_turn", {}, self.stage)

    def state(self):
        return {
            "stage": self.stage,
            "summary": "",
            "retention": None,
            "window": [],
            "window_tokens": 0,
            "budget": None,
            "memories": [],
            "retrieved": [],
            **self._state,
        }


def stub_widget(**kw):
    holder: list = []
    memory = StubMemory(holder, **kw)
    holder.append(ChatWidget(memory))
    return holder[0], memory


def test_css_classes_and_display():
    w, _ = stub_widget()
    assert "gte-chat" in w._dom_classes
    parts = {
        "gte-log": w.log_view,
        "gte-input": w.input,
        "gte-send": w.send_button,
        "gte-summary": w.summary_view,
        "gte-window": w.window_view,
        "gte-gauge": w.gauge_view,
        "gte-retrieved": w.retrieved_view,
        "gte-cost": w.cost_view,
    }
    for css, part in parts.items():
        assert css in part._dom_classes
    assert "application/vnd.jupyter.widget-view+json" in w._repr_mimebundle_()


def test_send_updates_log_and_every_panel(client, settings):
    memory = bounded(client, settings)
    w = ChatWidget(memory, title="Scout")
    before = {name: getattr(w, name).value for name in ("summary_view", "window_view", "gauge_view", "cost_view")}
    assert "Scout" in w.header.value and "no turn yet" in w.cost_view.value

    results = [w.send(text) for text in SCRIPT]
    assert all(isinstance(r, TurnResult) for r in results)
    assert lines(w, "user") == lines(w, "assistant") == 3 and lines(w, "error") == 0
    assert "Maya" in results[-1].reply  # the name was in the request; wording is the model's
    for name, old in before.items():
        assert getattr(w, name).value != old, name
    # summary: the first exchange left the 80-token window and was summarised
    assert "Maya" in w.summary_view.value and "retention 100%" in w.summary_view.value
    # window: the newest messages with their token counts, the first one gone
    state = memory.state()
    assert "What is my name?" in w.window_view.value and FACT not in w.window_view.value
    for m in state["window"]:
        assert f"({m['tokens']} tok)" in w.window_view.value
    assert f"{state['window_tokens']:,} tokens (budget 80)" in w.window_view.value
    # gauge: one segment per part, numbers, the budget marker
    assert f"window {state['gauge']['window']} / 80" in w.gauge_view.value
    assert f"summary {state['gauge']['summary']}" in w.gauge_view.value
    assert "gte-gauge-summary" in w.gauge_view.value and "window budget" in w.gauge_view.value
    # cost: every ledger entry of the last turn (chat + summary + extraction)
    entries = memory.ledger.entries
    last_turn = entries[[i for i, e in enumerate(entries) if e.purpose == "chat"][-1] :]
    assert {e.purpose for e in last_turn} >= {"chat", "summary"}
    assert f"${sum(e.cost_usd for e in last_turn):.6f}" in w.cost_view.value
    assert f"{results[-1].input_tokens:,} input + {results[-1].output_tokens:,} output" in w.cost_view.value
    assert w.total_cost_usd == pytest.approx(memory.ledger.total_cost())
    assert w.input.value == "" and not w.send_button.disabled and not w.input.disabled


def test_button_and_enter_send_the_input(client, settings):
    w = ChatWidget(bounded(client, settings))
    w.input.value = FACT
    w.send_button.click()
    assert lines(w, "user") == 1 and lines(w, "assistant") == 1 and w.input.value == ""
    w.input.value = "What is my favorite color?"
    w.input._handle_custom_msg({"event": "focus"}, [])  # other messages do nothing
    assert lines(w, "user") == 1
    w.input._handle_custom_msg({"event": "submit"}, [])  # what the browser sends on Enter
    assert lines(w, "user") == 2 and "teal" in w.last_result.reply and w.input.value == ""


def test_in_a_kernel_loop_enter_waits_for_the_last_keystrokes(client, settings):
    """The browser can deliver Enter before the last buffered keystrokes: the send waits for the text to settle."""
    w = ChatWidget(bounded(client, settings))

    async def scenario():
        w.input.value = "What is my fav"  # the keystrokes synced so far
        w.input._handle_custom_msg({"event": "submit"}, [])  # Enter overtakes the rest
        w.send_button.click()  # a second request while waiting is ignored
        assert w.send_button.disabled and w.input.disabled and lines(w, "user") == 0
        await asyncio.sleep(0.05)
        w.input.value = "What is my favorite color?"  # the buffered update arrives
        for _ in range(100):
            await asyncio.sleep(0.05)
            if lines(w, "assistant"):
                break

    asyncio.run(scenario())
    assert lines(w, "user") == 1 and "What is my favorite color?" in w.log_view.value
    assert "What is my fav<" not in w.log_view.value and w.input.value == ""
    assert not w.send_button.disabled and not w.input.disabled


def test_no_deprecation_warnings(client, settings):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        w = ChatWidget(bounded(client, settings))
        w.input.value = FACT
        w.input._handle_custom_msg({"event": "submit"}, [])
    assert lines(w, "assistant") == 1


def test_send_and_input_are_disabled_during_the_turn():
    w, memory = stub_widget()
    assert not w.send_button.disabled and not w.input.disabled
    w.input.value = "hello"
    w.send_button.click()
    assert memory.seen == [("hello", True, True)]
    assert not w.send_button.disabled and not w.input.disabled


def test_unexpected_error_is_shown_and_reenables():
    w, memory = stub_widget(fail=RuntimeError("boom"))
    assert w.send("hello") is None
    assert memory.seen == [("hello", True, True)]
    assert lines(w, "error") == 1 and "RuntimeError: boom" in w.log_view.value
    assert w.input.value == "hello" and not w.send_button.disabled and not w.input.disabled
    assert isinstance(w.last_error, RuntimeError)


def test_turn_error_keeps_the_text_for_retry(settings):
    failing = get_client(settings, faults="529x*", max_retries=0)
    memory = bounded(failing, settings)
    w = ChatWidget(memory)
    w.input.value = FACT
    w.send_button.click()
    assert lines(w, "error") == 1 and lines(w, "assistant") == 0
    assert "kept in the input box" in w.log_view.value and "529" in w.log_view.value
    assert w.input.value == FACT
    assert not w.send_button.disabled and not w.input.disabled
    assert [e["status"] for e in memory.store.logs_for("u1", "s1")] == ["unanswered"]
    # nothing lost: once the model answers again, Send retries the kept text
    memory.client = get_client(settings, max_retries=0)
    w.send_button.click()
    assert lines(w, "assistant") == 1 and w.input.value == ""


@pytest.mark.parametrize("text", ["", "   ", "\n"])
def test_empty_input_shows_a_notice_and_calls_nothing(client, settings, text):
    memory = bounded(client, settings)
    w = ChatWidget(memory)
    w.input.value = text
    w.send_button.click()
    assert lines(w, "notice") == 1 and "nothing was sent" in w.log_view.value
    assert lines(w, "user") == 0 and lines(w, "error") == 0
    assert chat_calls(client) == 0 and memory.store.count_logs("u1", "s1") == 0


def test_memory_refusal_is_a_notice_and_keeps_the_text(client, settings):
    memory = bounded(client, settings)
    w = ChatWidget(memory)
    w.input.value = "a\x00b"
    assert w.send() is None
    assert isinstance(w.last_error, EmptyMessageError)
    assert lines(w, "notice") == 1 and lines(w, "user") == 0 and w.input.value == "a\x00b"
    assert chat_calls(client) == 0


def test_history_memory_has_no_summary(client, settings):
    memory = HistoryMemory(client, settings)
    w = ChatWidget(memory)
    for text in SCRIPT:
        w.send(text)
    assert lines(w, "assistant") == 3 and "Maya" in w.last_result.reply
    assert "keeps no summary" in w.summary_view.value
    assert w.window_view.value.count("gte-window-msg") == 6 and FACT in w.window_view.value
    # no ledger: the chat call is priced with the memory's model
    r = w.last_result
    expected = cost_of({"input_tokens": r.input_tokens, "output_tokens": r.output_tokens}, memory.model)
    assert f"${expected:.6f}" in w.cost_view.value


def test_cost_line_shows_the_turns_cache_reads_and_writes_from_the_ledger():
    class CachedMemory(StubMemory):
        def __init__(self, holder):
            super().__init__(holder)
            self.ledger = CostLedger()

        def turn(self, text):
            self.ledger.record(
                "chat",
                self.model,
                {
                    "input_tokens": 10,
                    "output_tokens": 2,
                    "cache_creation_input_tokens": 90,
                    "cache_read_input_tokens": 4500,
                },
            )
            self.ledger.record(
                "summary", self.model, {"input_tokens": 300, "output_tokens": 40, "cache_read_input_tokens": 1000}
            )
            return super().turn(text)

    holder: list = []
    memory = CachedMemory(holder)
    holder.append(ChatWidget(memory))
    holder[0].send("hello")
    assert "prompt cache: 5,500 read + 90 written tokens" in holder[0].cost_view.value
    assert f"${memory.ledger.total_cost():.6f}" in holder[0].cost_view.value


def test_bounded_summary_appears_once_the_window_trims(client, settings):
    memory = bounded(client, settings)
    w = ChatWidget(memory)
    w.send(SCRIPT[0])
    assert "nothing has left the window" in w.summary_view.value
    w.send(SCRIPT[1])
    assert memory.state()["summary"] == "" and "nothing has left the window" in w.summary_view.value
    w.send(SCRIPT[2])
    assert memory.state()["summary"] and "Maya" in w.summary_view.value


def test_unsummarised_turns_show_a_warning_in_the_summary_panel(client, settings):
    w, _ = stub_widget(
        state={
            "stage": "bounded",
            "summary": "Maya lives in Portland.",
            "budget": 80,
            "unsummarised": 6,
            "summary_warning": "summary merge failed and will not be retried",
        }
    )
    html = w.summary_view.value
    assert "gte-summary-warning" in html and "6 message(s) unsummarised" in html and "will not be retried" in html
    quiet, _ = stub_widget(state={"stage": "bounded", "summary": "Maya lives in Portland.", "budget": 80})
    assert "gte-summary-warning" not in quiet.summary_view.value


def test_text_is_html_escaped(client, settings):
    w = ChatWidget(bounded(client, settings, budget=500))
    w.send("<script>alert(1)</script> & <b>bold</b>")
    assert "<script>" not in w.log_view.value and "&lt;script&gt;" in w.log_view.value
    assert "<b>bold</b>" not in w.window_view.value


def test_retrieved_memories_are_listed():
    retrieved = [
        {"text": "The user's favorite color is teal.", "kind": "fact", "score": 0.91},
        {"text": "Talked about <Griffith Park>.", "kind": "episode", "created_at": "2026-01-02T03:04:05"},
    ]
    w, _ = stub_widget(state={"stage": "vector", "retrieved": retrieved, "memories": retrieved})
    html = w.retrieved_view.value
    assert "favorite color is teal" in html and "[fact]" in html and "score 0.91" in html
    assert "[episode]" in html and "&lt;Griffith Park&gt;" in html and "2026-01-02T03:04" in html
    assert "2 stored facts" in html
    assert "2 sent in the last request (1 fact + 1 past exchange)" in html  # which count is which


def test_retrieved_panel_counts_ranked_above_the_floor_sent_and_stored():
    retrieved = [{"text": f"memory {i}", "kind": "episode", "similarity": 0.5} for i in range(3)]
    facts = [{"text": "The user's name is Maya.", "kind": "fact"}]
    html = retrieved_html(
        {
            "stage": "vector",
            "retrieved": retrieved,
            "memories": facts,
            "stored_turns": 24,
            "ranked": 14,
            "above_floor": 9,
            "min_similarity": 0.1,
        }
    )
    assert "14 ranked, 9 at or above the floor 0.10, 3 sent in the last request" in html  # one search, in order
    assert "relevance floor: similarity 0.10" in html
    assert "1 stored facts + 24 stored turns: what retrieval searches" in html  # stored, not retrieved


def test_retrieved_dataclasses_are_listed_too():
    from dataclasses import dataclass

    @dataclass
    class Hit:
        text: str
        kind: str
        score: float

    w, _ = stub_widget(state={"stage": "vector", "retrieved": [Hit("Biscuit is the dog", "fact", 0.5)]})
    assert "[fact]" in w.retrieved_view.value and "Biscuit is the dog" in w.retrieved_view.value


def test_gauge_html_scales_to_the_budget():
    html = gauge_html({"system": 50, "summary": 20, "memories": 0, "window": 40, "budget": 80})
    widths = {m[0]: float(m[1]) for m in re.findall(r'gte-gauge-(\w+)" title="[^"]*" style="width:([\d.]+)%', html)}
    assert set(widths) == {"system", "summary", "window"}  # zero-sized parts get no segment
    assert widths["window"] == pytest.approx(100 * 40 / 200, abs=0.01)  # 150 (fixed 70 + budget 80), rounded up
    assert "window 40 / 80" in html and "memories 0" in html
    # a round scale past the budget: the budget line inside the bar, labelled, with 0 and the scale at the ends
    scale = re.search(r'right:0">([\d,]+) tokens<', html)
    assert scale and int(scale[1].replace(",", "")) == 200 and ">0</span>" in html
    # the line sits after the fixed parts (at 150) but is labelled with the one budget the legend states (80)
    assert "left:75.00%" in html and "right:25.00%" in html and "window budget 80 ┐</span>" in html
    assert "150" not in re.sub(r"<[^>]+>", " ", html)  # no second "budget" figure anywhere in the text
    assert "system ?" in gauge_html({"system": None, "summary": 0, "memories": 0, "window": 0, "budget": None})


def test_retrieved_panel_shows_similarity_not_the_fused_rank_score():
    retrieved = [
        {"text": "My sister Priya lives in Pasadena.", "kind": "episode", "score": 0.0245, "similarity": 0.71},
        {"text": "She is a nurse.", "kind": "episode", "score": 0.0},
    ]
    w, _ = stub_widget(state={"stage": "vector", "retrieved": retrieved})
    html = w.retrieved_view.value
    assert "similarity 0.71" in html and "0.02" not in html and "neighbour of a hit" in html


def test_gauge_shows_the_context_budget_split():
    gauge = {
        "system": 50,
        "summary": 0,
        "memories": 1200,
        "window": 700,
        "budget": 2000,
        "memory_cap": 1500,
        "evidence": "strong",
    }
    html = gauge_html(gauge)
    widths = {m[0]: float(m[1]) for m in re.findall(r'gte-gauge-(\w+)" title="[^"]*" style="width:([\d.]+)%', html)}
    assert widths["memories"] == pytest.approx(
        100 * 1200 / 2500, abs=0.01
    )  # the budget covers memories + window (2,050 rounded up)
    assert "memories 1,200 (up to 1,500, strong evidence)" in html and "context budget" in html
    assert "window 700 / 2,000" not in html


def test_header_says_once_which_model_answers(client, settings):
    w = ChatWidget(bounded(client, settings))
    assert w.header.value.count("gte-mode") == 1 and "offline stand-in" in w.header.value
    assert "only knows what this conversation and its memories hold" in w.header.value
    w.send("How do people get from LAX to Santa Monica?")  # the reply itself says so too, in one sentence
    assert w.header.value.count("offline stand-in") == 1 and "stand-in" in w.lines[-1][1]


def test_rejects_a_non_memory():
    with pytest.raises(TypeError, match="turn"):
        ChatWidget(object())


def test_gauge_legend_labels_never_break_inside():
    html = gauge_html({"system": 120, "summary": 40, "memories": 0, "window": 244, "budget": 300})
    labels = re.findall(r'<span class="gte-gauge-label-(\w+)" style="([^"]*)"', html)
    assert [name for name, _ in labels] == ["system", "summary", "memories", "window"]
    assert all("white-space:nowrap" in style for _, style in labels)  # "window 244 / 300" stays on one line


def test_side_panel_wraps_below_instead_of_clipping():
    widget = ChatWidget(HistoryMemory(get_client(load_settings()), load_settings()))
    body = widget.children[1]
    assert body.layout.flex_flow == "row wrap"
    assert all(part.layout.min_width == "0" and part.layout.flex for part in body.children)


def test_long_log_says_older_messages_are_above():
    widget = ChatWidget(HistoryMemory(get_client(load_settings()), load_settings()))
    assert "gte-log-count" not in widget.log_view.value
    for i in range(4):
        widget.send(f"message number {i}")
    assert "8 messages" in widget.log_view.value and "overflow-y:scroll" in widget.log_view.value


def test_summary_panel_lists_lost_facts_and_says_n_a_when_nothing_was_checked():
    lost = ["The user is allergic to peanuts.", "The user's dog is named Biscuit."]
    w, _ = stub_widget(
        state={"summary": "The user likes teal.", "summary_tokens": 6, "retention": 1 / 3, "missing": lost}
    )
    w.refresh()
    assert "retention 33%" in w.summary_view.value and "gte-lost" in w.summary_view.value
    assert all(f"<li>{fact.replace(chr(39), '&#x27;')}</li>" in w.summary_view.value for fact in lost)
    w, _ = stub_widget(state={"summary": "The user asked about beaches.", "summary_tokens": 6, "retention": None})
    w.refresh()
    assert "retention n/a" in w.summary_view.value and "gte-lost" not in w.summary_view.value


def test_gauge_counts_the_system_prompt_before_the_first_message(client, settings):
    memory = BoundedMemory(client, settings, store=mongomock_store(), user_id="gauge", budget=300)
    widget = ChatWidget(memory)
    gauge = memory.state()["gauge"]
    assert isinstance(gauge["system"], int) and gauge["system"] > 0
    assert "system ?" not in widget.gauge_view.value and f"system {gauge['system']:,}" in widget.gauge_view.value


# ---------------------------------------------------------------------------- render: plain data in, HTML out


def test_render_functions_need_no_widget_and_escape_what_they_show():
    log = log_html([("user", "<b>hi</b>"), ("assistant", "hello & welcome")])
    assert "&lt;b&gt;hi&lt;/b&gt;" in log and "hello &amp; welcome" in log and "<b>hi</b>" not in log
    assert log.count('class="gte-msg ') == 2 and "gte-log-count" not in log  # the count shows only past 6 lines
    assert "No messages yet." in log_html([])
    window = window_html(
        {"window": [{"role": "user", "text": "x" * 500, "tokens": 120}], "window_tokens": 120, "budget": 300}
    )
    assert "Window: 1 messages, 120 tokens (budget 300)" in window and "x" * 159 + "…" in window
    assert "x" * 160 not in window


def test_cost_panel_splits_a_turn_by_purpose_only_when_it_made_several_calls():
    assert "no turn yet" in cost_html(None, 0.0)
    one = cost_html({"cost": 0.002, "by_purpose": {"chat": 0.002}, "input_tokens": 1500, "output_tokens": 40}, 0.01)
    assert "$0.002000" in one and "chat $" not in one and "1,500 input + 40 output" in one and "$0.010000" in one
    two = cost_html(
        {"cost": 0.003, "by_purpose": {"chat": 0.002, "summary": 0.001}, "input_tokens": 10, "output_tokens": 2}, 0.003
    )
    assert "chat $0.002000 + summary $0.001000" in two
    assert "n/a (no price" in cost_html({"cost": None, "by_purpose": {}, "input_tokens": 1, "output_tokens": 1}, 0.0)
    assert "prompt cache" not in one  # no cache fields, or zeros: no cache line
    assert "prompt cache" not in cost_html(
        {
            "cost": 0.0,
            "by_purpose": {},
            "input_tokens": 1,
            "output_tokens": 1,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
        },
        0.0,
    )
    cached = cost_html(
        {
            "cost": 0.001,
            "by_purpose": {"chat": 0.001},
            "input_tokens": 12,
            "output_tokens": 40,
            "cache_read_input_tokens": 4800,
            "cache_creation_input_tokens": 130,
        },
        0.001,
    )
    assert "prompt cache: 4,800 read + 130 written tokens" in cached


def test_summary_and_memory_panels_say_why_they_are_empty():
    assert "keeps no summary" in summary_html({"stage": "history", "budget": None})
    assert "nothing has left the window" in summary_html({"stage": "bounded", "budget": 300})
    assert "no long-term memory" in retrieved_html({"stage": "bounded"})
    assert "nothing retrieved for the last turn" in retrieved_html({"stage": "vector"})


def test_your_turn_chat_brings_an_early_fact_back_through_retrieval_not_the_summary(client, settings):
    """07's "your turn" elephant (window 80, summary capped at 40 tokens): a fact told early is asked for in other
    words after some chat; it has left the summary and comes back in the retrieved panel."""
    from helpers.memory import VectorMemory

    memory = VectorMemory(
        client,
        settings,
        store=mongomock_store(),
        user_id="reader",
        session_id="chat",
        budget=80,
        summary_max_tokens=40,
        ledger=CostLedger(),
    )
    w = ChatWidget(memory)
    for text in [
        *SCRIPT[:2],
        "My sister Priya lives in Pasadena and she is a nurse.",
        "Any good tacos near Echo Park?",
        "Which beach is nice for a morning walk?",
        "My cousin Theo works at the Getty Center.",
        "I'm vegetarian, so no meat please.",
        "Is the Griffith Observatory worth it at night?",
    ]:
        w.send(text)
    result = w.send("Which town is my sister based in?")
    assert "Pasadena" in result.reply
    assert "Pasadena" not in (memory.state()["summary"] or "")
    assert any("Pasadena" in hit["text"] for hit in result.retrieved) and "Pasadena" in w.retrieved_view.value
    state = memory.state()  # no memory below the floor is sent, and the panel's counts are this search's
    floor = state["min_similarity"]
    assert all(hit["similarity"] is None or hit["similarity"] >= floor for hit in result.retrieved)
    assert len(result.retrieved) <= state["above_floor"] <= state["ranked"]
    assert (
        f"{state['ranked']} ranked, {state['above_floor']} at or above the floor {floor:.2f}, "
        f"{len(result.retrieved)} sent"
    ) in w.retrieved_view.value


def test_gauge_scale_stays_put_between_turns_and_grows_only_when_needed(client, settings):
    """Issue 32: the gauge's scale jumped between turns (it followed each turn's total). The widget keeps one scale
    from turn to turn and grows it only when a request no longer fits."""
    from helpers.tools.widget.render import gauge_scale

    small = {"system": 50, "summary": 0, "memories": 0, "window": 10, "budget": 80}
    grown = {"system": 50, "summary": 60, "memories": 0, "window": 40, "budget": 80}
    first = gauge_scale(small)
    assert gauge_scale(small, first) == first and gauge_scale(grown, first) >= first
    assert gauge_scale(small, gauge_scale(grown)) == gauge_scale(grown)  # never shrinks back
    w = ChatWidget(bounded(client, settings, budget=80))
    scales = []
    for text in [FACT, "I live in Portland.", "Any tacos nearby?", "What about museums?", "What is my name?"]:
        w.send(text)
        scales.append(int(re.search(r'right:0">([\d,]+) tokens<', w.gauge_view.value)[1].replace(",", "")))
    assert scales == sorted(scales) and len(set(scales)) <= 2, scales


def test_a_known_question_is_marked_answer_in_request_yes_or_no(client, settings):
    memory = bounded(client, settings, budget=500)
    w = ChatWidget(memory, answers={"What is my favorite color?": "teal", "Where is my cat?": "under the bed"})
    w.send(FACT)
    assert w.answer_check is None and w.answer_view.value == ""  # not a known question: no marker
    w.send("what is my favorite colour?".replace("colour", "color"))  # matched in any case
    assert w.answer_check == {"question": "What is my favorite color?", "answer": "teal", "in_request": True}
    assert "gte-answer-yes" in w.answer_view.value and "answer in request: <b>yes</b>" in w.answer_view.value
    w.send("Where is my cat?")
    assert w.answer_check["in_request"] is False and "gte-answer-no" in w.answer_view.value
    with pytest.raises(TypeError, match="answers must map"):
        ChatWidget(memory, answers={"q": 3})


def test_forget_me_erases_the_user_and_says_what_it_does_not_reach(client, settings):
    memory = bounded(client, settings, budget=80)
    other = BoundedMemory(client, settings, store=memory.store, user_id="u2", session_id="s1")
    other.turn("I live in Lisbon.")
    w = ChatWidget(memory)
    assert w.forget_button.layout.display is None and "gte-forget" in w.forget_button._dom_classes
    for text in SCRIPT:
        w.send(text)
    erased = w.forget()
    assert erased["total"] > 0 and memory.store.db["logs"].count_documents({"user_id": "u1"}) == 0
    assert memory.store.db["logs"].count_documents({"user_id": "u2"}) == 2  # another user untouched
    assert "Forgot u1" in w.lines[-1][1] and "oplog" in w.lines[-1][1] and w.memory.state()["log_count"] == 0
    plain = ChatWidget(HistoryMemory(client, settings))
    assert plain.forget_button.layout.display == "none" and plain.forget() is None  # nothing kept per user


def test_show_puts_a_restart_note_under_the_chat(client, settings, monkeypatch):
    """The note is plain HTML beside the widget, so it is still there after a kernel restart, naming what to do."""
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *objs: shown.extend(objs))
    chat = ChatWidget(bounded(client, settings))
    chat.show()
    assert shown[0] is chat and isinstance(shown[1], IPython.display.HTML)
    note = shown[1].data
    assert "kernel restart" in note and "re-run this cell" in note and "model not found" in note
