"""helpers.cost (pricing, ledger, strategies, simulator, plots) and helpers.scripts, all offline."""

import json

import anthropic
import pytest

from helpers.config import load_settings
from helpers.cost import (
    CACHE_READ_MULTIPLIER,
    CACHE_WRITE_MULTIPLIER,
    PRICES,
    STRATEGIES,
    CostLedger,
    Price,
    SimulationResult,
    cost_of,
    is_overflow,
    make_strategy,
    plot_cumulative_cost,
    plot_input_tokens,
    price_of,
    register_strategy,
    simulate,
    simulation_client,
)
from helpers.llm import get_client
from helpers.memory import TurnError, TurnResult
from helpers.offline_model import MESSAGE_OVERHEAD, REQUEST_OVERHEAD, SYSTEM_OVERHEAD, count_text_tokens
from helpers.scripts import PLANTED_FACTS, TRIP_PERSONA, trip_script
from helpers.tokens import count_request_tokens, per_message_tokens, request_base_tokens, whole_context_counts

MODEL = "claude-haiku-4-5"


@pytest.fixture(scope="module")
def offline_settings():
    return load_settings({})


def naive_run(settings, n):
    client = simulation_client(settings)
    return simulate(make_strategy("naive", client, settings, system=TRIP_PERSONA), trip_script(n), name="naive")


# ---------------------------------------------------------------------------- pricing

@pytest.mark.parametrize("model, expected", [("claude-haiku-4-5", 6.0), ("claude-sonnet-4-5", 18.0),
                                             ("claude-opus-4-5", 30.0)])
def test_a_million_in_and_out_costs_the_list_price(model, expected):
    assert cost_of({"input_tokens": 1_000_000, "output_tokens": 1_000_000}, model) == pytest.approx(expected, abs=1e-12)


def test_pricing_arithmetic_exact_numbers():
    assert cost_of({"input_tokens": 1234, "output_tokens": 567}, MODEL) == pytest.approx(0.004069, abs=1e-15)
    assert cost_of({"input_tokens": 1234, "output_tokens": 567}, "claude-sonnet-4-5") == pytest.approx(0.012207, abs=1e-15)
    assert cost_of({"input_tokens": 0, "output_tokens": 0}, MODEL) == 0.0


def test_cache_multipliers():
    assert (CACHE_WRITE_MULTIPLIER, CACHE_READ_MULTIPLIER) == (1.25, 0.1)
    write = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 1_000_000}
    read = {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 1_000_000}
    assert cost_of(write, MODEL) == pytest.approx(1.25) and cost_of(read, MODEL) == pytest.approx(0.10)
    assert cost_of(write, "claude-opus-4-5") == pytest.approx(6.25) and cost_of(read, "claude-opus-4-5") == pytest.approx(0.50)
    mixed = {"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 200, "cache_read_input_tokens": 4000}
    assert cost_of(mixed, "claude-sonnet-4-5") == pytest.approx((100 * 3 + 10 * 15 + 200 * 3.75 + 4000 * 0.3) / 1e6)


def test_sdk_usage_objects_are_priced_and_none_cache_fields_count_as_zero():
    usage = anthropic.types.Usage(input_tokens=2000, output_tokens=100, cache_creation_input_tokens=None,
                                  cache_read_input_tokens=1000)
    assert cost_of(usage, MODEL) == pytest.approx((2000 + 500 + 100) / 1e6)


def test_unknown_model_is_a_clear_key_error_and_snapshots_resolve():
    with pytest.raises(KeyError) as info:
        cost_of({"input_tokens": 1, "output_tokens": 1}, "gpt-imaginary")
    assert "gpt-imaginary" in str(info.value) and "PRICES" in str(info.value) and MODEL in str(info.value)
    assert price_of("claude-haiku-4-5-20251001") == PRICES[MODEL]
    custom = {"my-model": Price(2.0, 4.0)}
    assert cost_of({"input_tokens": 10**6, "output_tokens": 10**6}, "my-model", prices=custom) == pytest.approx(6.0)


def test_usage_without_token_counts_is_rejected():
    with pytest.raises(ValueError, match="input_tokens"):
        cost_of({"output_tokens": 5}, MODEL)


# ---------------------------------------------------------------------------- ledger

def test_ledger_totals_by_purpose():
    ledger = CostLedger()
    ledger.record("chat", MODEL, {"input_tokens": 1000, "output_tokens": 100})
    ledger.record("summary", MODEL, anthropic.types.Usage(input_tokens=400, output_tokens=50))
    ledger.record("chat", "claude-sonnet-4-5", {"input_tokens": 2000, "output_tokens": 200})
    totals = ledger.totals_by_purpose()
    assert list(totals) == ["chat", "summary"]
    assert totals["chat"]["calls"] == 2 and totals["chat"]["input_tokens"] == 3000 and totals["chat"]["output_tokens"] == 300
    assert totals["chat"]["cost_usd"] == pytest.approx((1000 + 500) / 1e6 + (6000 + 3000) / 1e6)
    assert totals["summary"] == {"calls": 1, "input_tokens": 400, "output_tokens": 50, "cost_usd": pytest.approx(650 / 1e6)}
    assert ledger.total_cost() == pytest.approx(sum(t["cost_usd"] for t in totals.values()))
    assert len(ledger.entries) == 3 and ledger.entries[1].purpose == "summary"


def test_memory_strategies_record_their_calls_in_the_ledger(offline_settings):
    ledger = CostLedger()
    memory = make_strategy("naive", get_client(offline_settings), offline_settings, ledger=ledger)
    result = memory.turn("Hi, my name is Maya.")
    assert ledger.totals_by_purpose()["chat"]["input_tokens"] == result.input_tokens
    assert ledger.total_cost() == pytest.approx(cost_of({"input_tokens": result.input_tokens,
                                                         "output_tokens": result.output_tokens}, MODEL))


# ---------------------------------------------------------------------------- token counts (taught in 03)

def test_per_message_tokens_sum_to_the_request_count_minus_the_fixed_base(offline_settings):
    client = get_client(offline_settings)
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": text}
                for i, text in enumerate(trip_script(8))]
    own = per_message_tokens(client, MODEL, TRIP_PERSONA, messages)
    base = request_base_tokens(client, MODEL, TRIP_PERSONA)
    assert base == REQUEST_OVERHEAD + SYSTEM_OVERHEAD + MESSAGE_OVERHEAD + count_text_tokens(TRIP_PERSONA)
    assert sum(own) + base == count_request_tokens(client, MODEL, TRIP_PERSONA, messages)
    assert own[1:] == [count_text_tokens(m["content"]) + MESSAGE_OVERHEAD for m in messages[1:]]
    wrong = whole_context_counts(client, MODEL, TRIP_PERSONA, messages)
    assert sum(wrong) > 4 * (sum(own) + base)  # the whole-context mistake over-counts


# ---------------------------------------------------------------------------- strategies

def test_registry_builds_naive_and_last_k(offline_settings):
    client = get_client(offline_settings)
    assert {"naive", "last_k"} <= set(STRATEGIES)
    assert make_strategy("naive", client, offline_settings).keep_last is None
    assert make_strategy("last_k", client, offline_settings, keep_last=4).keep_last == 4
    with pytest.raises(KeyError, match="naive"):
        make_strategy("nope", client, offline_settings)
    with pytest.raises(TypeError):
        make_strategy("naive", client, offline_settings, keep_last=4)


def test_register_strategy_plugs_any_turn_object_into_the_simulator(offline_settings):
    class Echo:
        model = MODEL

        def __init__(self, client, settings, **kw):
            self.kw = kw

        def turn(self, text):
            return TurnResult(text, input_tokens=len(text), output_tokens=1, stop_reason="end_turn", request={},
                              stage="echo")

    register_strategy("echo_test", Echo)
    try:
        with pytest.raises(ValueError, match="already registered"):
            register_strategy("echo_test", lambda c, s, **kw: None)
        strategy = make_strategy("echo_test", None, offline_settings, flavour="x")
        result = simulate(strategy, ["ab", "abcd"], name="echo")
        assert result.input_tokens == [2, 4] and result.cost_usd == [pytest.approx(7e-6), pytest.approx(9e-6)]
    finally:
        STRATEGIES.pop("echo_test", None)
    with pytest.raises(ValueError, match="snake_case"):
        register_strategy("Bad Name", Echo)
    with pytest.raises(TypeError, match="not a strategy"):
        simulate(object(), ["hi"])


# ---------------------------------------------------------------------------- simulator

def test_simulation_is_deterministic(offline_settings):
    a = naive_run(offline_settings, 30)
    b = naive_run(offline_settings, 30)
    assert a.to_dict() == b.to_dict() and a.replies == b.replies
    json.dumps(a.to_dict())  # JSON-ready


def test_simulation_result_totals_and_per_turn_lists(offline_settings):
    r = naive_run(offline_settings, 12)
    d = r.to_dict()
    assert d["turns"] == 12 == len(d["per_turn_input_tokens"]) == len(d["per_turn_cost_usd"])
    assert d["total_input_tokens"] == sum(d["per_turn_input_tokens"])
    assert d["total_output_tokens"] == sum(d["per_turn_output_tokens"])
    assert d["cost_usd"] == pytest.approx(sum(d["per_turn_cost_usd"]))
    assert d["max_turn_input_tokens"] == max(d["per_turn_input_tokens"]) == d["per_turn_input_tokens"][-1]
    assert all(c == pytest.approx(cost_of({"input_tokens": i, "output_tokens": o}, MODEL))
               for i, o, c in zip(r.input_tokens, r.output_tokens, r.cost_usd))
    assert r.cumulative_input_tokens()[-1] == r.total_input_tokens


def test_naive_growth_is_quadratic_and_last_k_is_linear(offline_settings):
    naive = naive_run(offline_settings, 120)
    assert naive.fit_power_law() > 1.5
    client = simulation_client(offline_settings)
    last_k = simulate(make_strategy("last_k", client, offline_settings, system=TRIP_PERSONA, keep_last=6),
                      trip_script(120), name="last_k")
    assert last_k.fit_power_law() < 1.2
    assert last_k.max_turn_input_tokens < naive.max_turn_input_tokens / 10
    a, _b, _c = naive.fit_quadratic()
    assert a > 0
    with pytest.raises(ValueError, match="at least 4"):
        SimulationResult("x", MODEL, [1, 2], [1, 1], [0.0, 0.0]).fit_power_law()


def test_overflow_raises_bad_request_at_the_configured_window_and_not_below(offline_settings):
    messages = [{"role": "user", "content": text} for text in trip_script(1)]
    size = count_request_tokens(get_client(offline_settings), MODEL, TRIP_PERSONA, messages)
    fits = get_client(offline_settings, context_window=size, max_retries=0)
    assert fits.messages.create(model=MODEL, max_tokens=50, system=TRIP_PERSONA, messages=messages).usage.input_tokens == size
    too_small = get_client(offline_settings, context_window=size - 1, max_retries=0)
    with pytest.raises(anthropic.BadRequestError, match="prompt is too long") as info:
        too_small.messages.create(model=MODEL, max_tokens=50, system=TRIP_PERSONA, messages=messages)
    assert info.value.status_code == 400 and is_overflow(info.value)


def test_simulation_stops_or_raises_at_the_first_overflow(offline_settings):
    unbounded = naive_run(offline_settings, 40)
    window = unbounded.input_tokens[24]  # turn 25 fits exactly; turn 26 does not
    client = simulation_client(offline_settings, context_window=window)
    stopped = simulate(make_strategy("naive", client, offline_settings, system=TRIP_PERSONA), trip_script(40),
                       on_overflow="stop")
    assert stopped.input_tokens == unbounded.input_tokens[:25]  # nothing below the window overflowed
    assert stopped.overflow_turn == 26 and "prompt is too long" in stopped.overflow_message
    client = simulation_client(offline_settings, context_window=window)
    with pytest.raises(TurnError) as info:
        simulate(make_strategy("naive", client, offline_settings, system=TRIP_PERSONA), trip_script(40))
    assert isinstance(info.value.cause, anthropic.BadRequestError) and is_overflow(info.value)


def test_recall_with_full_history_but_not_with_last_k(offline_settings):
    client = simulation_client(offline_settings)
    naive = make_strategy("naive", client, offline_settings, system=TRIP_PERSONA)
    last_k = make_strategy("last_k", client, offline_settings, system=TRIP_PERSONA, keep_last=6)
    for strategy in (naive, last_k):
        simulate(strategy, trip_script(20))
    for question, expected in PLANTED_FACTS:
        full, short = naive.turn(question), last_k.turn(question)
        assert expected in json.dumps(full.request)  # the full history carries every planted fact
        assert expected not in json.dumps(short.request) and expected not in short.reply


# ---------------------------------------------------------------------------- plots

def test_plots_return_labelled_figures_and_leave_pyplot_clean(offline_settings):
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    r = naive_run(offline_settings, 10)
    before = plt.get_fignums()
    fig = plot_input_tokens({"naive": r}, context_window=500)
    ax = fig.axes[0]
    assert isinstance(fig, Figure) and "Naive history" in ax.get_title()
    assert "tokens" in ax.get_ylabel() and ax.get_xlabel() == "turn"
    window_lines = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    assert len(window_lines) == 1 and set(window_lines[0].get_ydata()) == {500}
    fig = plot_cumulative_cost({"naive": r}, fit=True)
    ax = fig.axes[0]
    assert "USD" in ax.get_ylabel() and any("quadratic" in t.get_text() for t in ax.get_legend().get_texts())
    assert plt.get_fignums() == before
    with pytest.raises(ValueError):
        plot_input_tokens({})


def test_plot_input_tokens_log_axis_keeps_flat_strategies_readable():
    naive = SimulationResult(strategy="naive", model="claude-haiku-4-5", input_tokens=[100 * t for t in range(1, 41)],
                             output_tokens=[10] * 40, cost_usd=[0.0] * 40)
    flat = SimulationResult(strategy="bounded", model="claude-haiku-4-5", input_tokens=[300] * 40,
                            output_tokens=[10] * 40, cost_usd=[0.0] * 40)
    ax = plot_input_tokens({"naive": naive, "bounded": flat}, log=True).axes[0]
    assert ax.get_yscale() == "log" and "log scale" in ax.get_ylabel()
    assert plot_input_tokens({"naive": naive}).axes[0].get_yscale() == "linear"
