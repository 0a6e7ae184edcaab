"""helpers.pricing: prices, usage counts and the cost ledger, all offline."""

import anthropic
import pytest

from helpers.config import load_settings
from helpers.llm import get_client
from helpers.pricing import (CACHE_READ_MULTIPLIER, CACHE_WRITE_MULTIPLIER, PRICES, CostLedger, Price, cost_of,
                             price_of)
from helpers.sim.simulate import make_strategy

MODEL = "claude-haiku-4-5"


@pytest.fixture(scope="module")
def offline_settings():
    return load_settings({})


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
