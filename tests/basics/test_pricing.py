"""helpers.pricing: prices, usage counts and the cost ledger, all offline."""

import anthropic
import pytest

from helpers.config import load_settings
from helpers.llm import get_client
from helpers.offline import SimClock
from helpers.pricing import (
    CACHE_READ_MULTIPLIER,
    CACHE_WRITE_1H_MULTIPLIER,
    CACHE_WRITE_MULTIPLIER,
    PRICES,
    CostLedger,
    Price,
    cache_write_split,
    cost_of,
    price_of,
)
from helpers.sim.strategies import make_strategy

MODEL = "claude-haiku-4-5"


@pytest.fixture(scope="module")
def offline_settings():
    return load_settings({})


# ---------------------------------------------------------------------------- pricing


@pytest.mark.parametrize(
    "model, expected", [("claude-haiku-4-5", 6.0), ("claude-sonnet-4-5", 18.0), ("claude-opus-4-5", 30.0)]
)
def test_a_million_in_and_out_costs_the_list_price(model, expected):
    assert cost_of({"input_tokens": 1_000_000, "output_tokens": 1_000_000}, model) == pytest.approx(expected, abs=1e-12)


def test_pricing_arithmetic_exact_numbers():
    assert cost_of({"input_tokens": 1234, "output_tokens": 567}, MODEL) == pytest.approx(0.004069, abs=1e-15)
    assert cost_of({"input_tokens": 1234, "output_tokens": 567}, "claude-sonnet-4-5") == pytest.approx(
        0.012207, abs=1e-15
    )
    assert cost_of({"input_tokens": 0, "output_tokens": 0}, MODEL) == 0.0


def test_cache_multipliers():
    assert (CACHE_WRITE_MULTIPLIER, CACHE_READ_MULTIPLIER) == (1.25, 0.1)
    write = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 1_000_000}
    read = {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 1_000_000}
    assert cost_of(write, MODEL) == pytest.approx(1.25) and cost_of(read, MODEL) == pytest.approx(0.10)
    assert cost_of(write, "claude-opus-4-5") == pytest.approx(6.25) and cost_of(
        read, "claude-opus-4-5"
    ) == pytest.approx(0.50)
    mixed = {
        "input_tokens": 100,
        "output_tokens": 10,
        "cache_creation_input_tokens": 200,
        "cache_read_input_tokens": 4000,
    }
    assert cost_of(mixed, "claude-sonnet-4-5") == pytest.approx((100 * 3 + 10 * 15 + 200 * 3.75 + 4000 * 0.3) / 1e6)


def test_one_hour_cache_writes_cost_twice_the_input_price():
    assert CACHE_WRITE_1H_MULTIPLIER == 2.0 and PRICES[MODEL].cache_write_1h_per_mtok == pytest.approx(2.0)
    split = {
        "input_tokens": 10,
        "output_tokens": 20,
        "cache_creation_input_tokens": 3000,
        "cache_read_input_tokens": 500,
        "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000},
    }
    assert cache_write_split(split) == (1000, 2000)
    assert cost_of(split, MODEL) == pytest.approx((10 * 1 + 20 * 5 + 1000 * 1.25 + 2000 * 2 + 500 * 0.1) / 1e6)
    sdk = anthropic.types.Usage(**split)  # the SDK's own type, with its CacheCreation object
    assert cache_write_split(sdk) == (1000, 2000) and cost_of(sdk, MODEL) == pytest.approx(cost_of(split, MODEL))
    no_split = {k: v for k, v in split.items() if k != "cache_creation"}  # no breakdown: every write is 5-minute
    assert cache_write_split(no_split) == (3000, 0)
    assert cost_of(no_split, MODEL) == pytest.approx((10 + 100 + 3000 * 1.25 + 50) / 1e6)


def test_sdk_usage_objects_are_priced_and_none_cache_fields_count_as_zero():
    usage = anthropic.types.Usage(
        input_tokens=2000, output_tokens=100, cache_creation_input_tokens=None, cache_read_input_tokens=1000
    )
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
    assert (
        totals["chat"]["calls"] == 2
        and totals["chat"]["input_tokens"] == 3000
        and totals["chat"]["output_tokens"] == 300
    )
    assert totals["chat"]["cost_usd"] == pytest.approx((1000 + 500) / 1e6 + (6000 + 3000) / 1e6)
    assert totals["summary"] == {
        "calls": 1,
        "input_tokens": 400,
        "output_tokens": 50,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "cost_usd": pytest.approx(650 / 1e6),
    }
    assert ledger.total_cost() == pytest.approx(sum(t["cost_usd"] for t in totals.values()))
    assert len(ledger.entries) == 3 and ledger.entries[1].purpose == "summary"


def test_memory_strategies_record_their_calls_in_the_ledger(offline_settings):
    ledger = CostLedger()
    memory = make_strategy("naive", get_client(offline_settings), offline_settings, ledger=ledger)
    result = memory.turn("Hi, my name is Maya.")
    assert ledger.totals_by_purpose()["chat"]["input_tokens"] == result.input_tokens
    assert ledger.total_cost() == pytest.approx(
        cost_of({"input_tokens": result.input_tokens, "output_tokens": result.output_tokens}, MODEL)
    )


def test_ledger_keeps_all_four_token_kinds_and_separates_memory_maintenance():
    ledger = CostLedger()
    chat = {
        "input_tokens": 20,
        "output_tokens": 150,
        "cache_creation_input_tokens": 300,
        "cache_read_input_tokens": 5000,
    }
    one_hour = {
        "input_tokens": 10,
        "output_tokens": 60,
        "cache_creation_input_tokens": 4200,
        "cache_read_input_tokens": 0,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 4200},
    }
    ledger.record("chat", MODEL, chat)
    ledger.record("summary", MODEL, one_hour)
    ledger.record("extraction", MODEL, {"input_tokens": 900, "output_tokens": 80})
    ledger.record("chat", MODEL, chat)
    ledger.record("retention", MODEL, {"input_tokens": 100, "output_tokens": 5}, kind="chat")  # explicit kind wins
    assert [e.kind for e in ledger.entries] == ["chat", "memory", "memory", "chat", "chat"]
    first = ledger.entries[0]
    assert (
        first.input_tokens,
        first.output_tokens,
        first.cache_creation_input_tokens,
        first.cache_read_input_tokens,
        first.prompt_tokens,
    ) == (20, 150, 300, 5000, 5320)
    assert ledger.entries[1].cache_creation_1h_input_tokens == 4200
    assert ledger.entries[1].cost_usd == pytest.approx((10 + 300 + 4200 * 2) / 1e6)
    by_kind = ledger.totals_by_kind()
    assert list(by_kind) == ["chat", "memory"]
    assert by_kind["chat"]["calls"] == 3 and by_kind["chat"]["cache_read_input_tokens"] == 10_000
    assert by_kind["chat"]["cache_creation_input_tokens"] == 600 and by_kind["chat"]["input_tokens"] == 140
    assert by_kind["memory"] == {
        "calls": 2,
        "input_tokens": 910,
        "output_tokens": 140,
        "cache_creation_input_tokens": 4200,
        "cache_read_input_tokens": 0,
        "cost_usd": pytest.approx((10 + 300 + 8400 + 900 + 400) / 1e6),
    }
    assert ledger.totals_by_purpose()["chat"]["cache_read_input_tokens"] == 10_000
    everything = ledger.totals()
    assert everything["calls"] == 5 and everything["cost_usd"] == pytest.approx(ledger.total_cost())
    assert everything["cache_creation_input_tokens"] == 4800
    assert CostLedger().totals() == {
        "calls": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "cost_usd": 0.0,
    }


def test_cached_calls_through_the_offline_model_are_priced_from_their_usage(offline_settings):
    """A write then a read of the same prefix: the read call costs less, by exactly the priced token kinds."""
    client = get_client(offline_settings, clock=SimClock())
    system = [
        {
            "type": "text",
            "text": " ".join(f"Rule {i}: keep item {i} in bin {i % 9}." for i in range(600)),
            "cache_control": {"type": "ephemeral"},
        }
    ]
    ledger = CostLedger()
    for question in ("Where is item 3?", "Where is item 4?"):
        reply = client.messages.create(
            model=MODEL, max_tokens=30, system=system, messages=[{"role": "user", "content": question}]
        )
        ledger.record("chat", reply.model, reply.usage)
    write, read = ledger.entries
    assert write.cache_creation_input_tokens > 4096 and write.cache_read_input_tokens == 0
    assert read.cache_read_input_tokens == write.cache_creation_input_tokens and read.cache_creation_input_tokens == 0
    assert write.cost_usd == pytest.approx(
        (write.input_tokens + write.output_tokens * 5 + write.cache_creation_input_tokens * 1.25) / 1e6
    )
    assert read.cost_usd == pytest.approx(
        (read.input_tokens + read.output_tokens * 5 + read.cache_read_input_tokens * 0.1) / 1e6
    )
    assert read.cost_usd < write.cost_usd / 5
