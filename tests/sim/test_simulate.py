"""helpers.sim.strategies and helpers.sim.simulate: the strategy table and the conversation simulator, all offline."""

import json
import subprocess
import sys

import anthropic
import pytest

from helpers.config import load_settings
from helpers.llm import get_client
from helpers.memory import BoundedMemory, StatelessMemory, TurnError, TurnResult, VectorMemory
from helpers.offline import MESSAGE_OVERHEAD, REQUEST_OVERHEAD, SYSTEM_OVERHEAD, count_text_tokens
from helpers.offline.memo import REPLY_CACHE_ENV
from helpers.pricing import CostLedger, cost_of
from helpers.sim.scripts import PLANTED_FACTS, TRIP_PERSONA, trip_script
from helpers.sim.simulate import SimulationResult, is_overflow, simulate, simulation_client
from helpers.sim.strategies import STRATEGIES, make_strategy, register_strategy
from helpers.tokens import count_request_tokens, per_message_tokens, request_base_tokens, whole_context_counts

MODEL = "claude-haiku-4-5"


@pytest.fixture(scope="module")
def offline_settings():
    return load_settings({})


def naive_run(settings, n):
    client = simulation_client(settings)
    return simulate(make_strategy("naive", client, settings, system=TRIP_PERSONA), trip_script(n), name="naive")


# ---------------------------------------------------------------------------- token counts (taught in 03)


def test_per_message_tokens_sum_to_the_request_count_minus_the_fixed_base(offline_settings):
    client = get_client(offline_settings)
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": text} for i, text in enumerate(trip_script(8))
    ]
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


@pytest.mark.slow  # a fresh interpreter (seconds): the full set runs it
def test_the_table_names_every_stage_and_importing_memory_registers_nothing():
    code = (
        "import sys, helpers.memory; assert 'helpers.sim.strategies' not in sys.modules, 'memory imported the table'; "
        "import helpers.sim.strategies as s; print(sorted(s.STRATEGIES))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert (
        out.strip()
        == "['bounded', 'bounded_cached', 'bounded_padded', 'last_k', 'memory_tool', 'naive', 'naive_cached', "
        "'stateless', 'vector', 'vector_cached']"
    )


@pytest.mark.parametrize(
    "name, cls", [("stateless", StatelessMemory), ("bounded", BoundedMemory), ("vector", VectorMemory)]
)
def test_table_entries_build_their_stage_on_an_in_memory_store(offline_settings, name, cls):
    ledger = CostLedger()
    strategy = make_strategy(name, simulation_client(offline_settings), offline_settings, ledger=ledger)
    assert type(strategy) is cls
    result = simulate(strategy, ["Hi, my name is Maya.", "What is my name?"], name=name)
    assert result.turns == 2 and result.cost_by_purpose["chat"]["calls"] == 2


def test_register_strategy_plugs_any_turn_object_into_the_simulator(offline_settings):
    class Echo:
        model = MODEL

        def __init__(self, client, settings, **kw):
            self.kw = kw

        def turn(self, text):
            return TurnResult(
                text, input_tokens=len(text), output_tokens=1, stop_reason="end_turn", request={}, stage="echo"
            )

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


def test_simulation_is_deterministic(offline_settings, monkeypatch):
    monkeypatch.delenv(REPLY_CACHE_ENV, raising=False)  # both runs' replies worked out, none read from the run's cache
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
    assert all(
        c == pytest.approx(cost_of({"input_tokens": i, "output_tokens": o}, MODEL))
        for i, o, c in zip(r.input_tokens, r.output_tokens, r.cost_usd)
    )
    assert r.cumulative_input_tokens()[-1] == r.total_input_tokens


@pytest.mark.slow
def test_naive_growth_is_quadratic_and_last_k_is_linear(offline_settings):
    naive = naive_run(offline_settings, 120)
    assert naive.fit_power_law() > 1.5
    client = simulation_client(offline_settings)
    last_k = simulate(
        make_strategy("last_k", client, offline_settings, system=TRIP_PERSONA, keep_last=6),
        trip_script(120),
        name="last_k",
    )
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
    assert (
        fits.messages.create(model=MODEL, max_tokens=50, system=TRIP_PERSONA, messages=messages).usage.input_tokens
        == size
    )
    too_small = get_client(offline_settings, context_window=size - 1, max_retries=0)
    with pytest.raises(anthropic.BadRequestError, match="prompt is too long") as info:
        too_small.messages.create(model=MODEL, max_tokens=50, system=TRIP_PERSONA, messages=messages)
    assert info.value.status_code == 400 and is_overflow(info.value)


def test_simulation_stops_or_raises_at_the_first_overflow(offline_settings):
    unbounded = naive_run(offline_settings, 40)
    # turn 25 and its whole reply fit exactly (a reply stops where the window is full); turn 26 does not fit
    window = unbounded.input_tokens[24] + unbounded.output_tokens[24]
    client = simulation_client(offline_settings, context_window=window)
    stopped = simulate(
        make_strategy("naive", client, offline_settings, system=TRIP_PERSONA), trip_script(40), on_overflow="stop"
    )
    assert stopped.input_tokens == unbounded.input_tokens[:25]  # nothing below the window overflowed
    assert stopped.output_tokens == unbounded.output_tokens[:25]  # ... nor was a reply cut
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


# ---------------------------------------------------------------------------- replies of real length


def test_simulated_replies_are_padded_to_the_stated_length_with_text_that_states_nothing(offline_settings):
    from helpers.offline.fact_rules import facts_from_text
    from helpers.offline.model import PADDING
    from helpers.sim.simulate import REPLY_TOKENS

    assert facts_from_text(PADDING, "assistant", True) == [] and facts_from_text(PADDING, "user") == []
    padded = simulation_client(offline_settings)
    plain = simulation_client(offline_settings, reply_tokens=None)
    runs = {}
    for name, client in (("padded", padded), ("plain", plain)):
        memory = make_strategy("naive", client, offline_settings, system=TRIP_PERSONA)
        result = simulate(memory, trip_script(8), name=name)
        runs[name] = (result, memory.turn("What is my name?").reply)
    padded_run, plain_run = runs["padded"][0], runs["plain"][0]
    assert padded_run.reply_tokens == REPLY_TOKENS and plain_run.reply_tokens is None
    assert padded_run.output_tokens == [REPLY_TOKENS] * 8 and max(plain_run.output_tokens) < REPLY_TOKENS
    assert all(p.startswith(q) for p, q in zip(padded_run.replies, plain_run.replies))  # same answer, then filler
    assert "Maya" in runs["padded"][1] and runs["padded"][1].startswith(runs["plain"][1])
