"""helpers.pricing against the pricing page's table: every model priced with its own cache rates, 1-hour cache writes
at 2x input everywhere a bill is computed (cost_of, the ledger, the cost table, live_cost), one clear sentence for a
model with no price."""

from __future__ import annotations

from collections import Counter

import pytest

from helpers.bench.cost_table import entry_cost
from helpers.config import load_settings
from helpers.llm import OFFLINE_USAGE, live_cost
from helpers.offline import catalog
from helpers.pricing import PRICES, CostLedger, UnknownModelError, cost_of, price_of

ONE_HOUR = {
    "input_tokens": 0,
    "output_tokens": 0,
    "cache_creation_input_tokens": 1_000_000,
    "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 1_000_000},
}


def test_one_hour_writes_cost_twice_the_input_price_in_cost_of_and_the_ledger():
    assert cost_of(ONE_HOUR, "claude-haiku-4-5") == pytest.approx(2.0)
    assert cost_of(ONE_HOUR, "claude-opus-4-6") == pytest.approx(10.0)
    five = {**ONE_HOUR, "cache_creation": {"ephemeral_5m_input_tokens": 1_000_000, "ephemeral_1h_input_tokens": 0}}
    assert cost_of(five, "claude-haiku-4-5") == pytest.approx(1.25)
    entry = CostLedger().record("chat", "claude-haiku-4-5", ONE_HOUR)
    assert entry.cost_usd == pytest.approx(2.0) and entry.cache_creation_1h_input_tokens == 1_000_000


def test_one_hour_writes_cost_twice_in_the_cost_table():
    entry = CostLedger().record("chat", "claude-haiku-4-5", ONE_HOUR)
    assert entry_cost(entry, "claude-haiku-4-5") == pytest.approx(2.0)
    assert entry_cost(entry, "claude-sonnet-4-6") == pytest.approx(6.0)  # re-priced at another model: still 2x


def test_one_hour_writes_cost_twice_in_live_cost(monkeypatch):
    monkeypatch.setitem(
        OFFLINE_USAGE,
        "chat",
        Counter(calls=1, cache_creation_input_tokens=1_000_000, cache_creation_1h_input_tokens=1_000_000),
    )
    monkeypatch.setitem(OFFLINE_USAGE, "replay", Counter())
    line = live_cost(load_settings({})).splitlines()[0]
    assert "≈ $2.0000 at claude-haiku-4-5" in line


def test_every_model_of_the_table_is_priced_with_its_own_rates():
    assert len(PRICES) >= 20
    for name in PRICES:
        assert catalog.lookup(name) is not None, f"{name}: not a model name the API takes"
    assert price_of("claude-opus-5-5").cache_read_per_mtok == pytest.approx(0.20)  # 0.05x input
    assert price_of("claude-fable-5-1").cache_read_per_mtok == pytest.approx(0.25)  # 0.025x input
    assert price_of("claude-opus-4-1-20250805").input_per_mtok == 15.0  # retired, still priced
    assert price_of("claude-3-haiku-20240307").cache_write_per_mtok == pytest.approx(0.30)
    assert price_of("claude-haiku-4-5-20251001") is PRICES["claude-haiku-4-5"]


def test_haiku_5_5_prices_a_long_prompt_at_five_times():
    short = {"input_tokens": 100_000, "output_tokens": 1000}
    long = {"input_tokens": 100_001, "output_tokens": 1000}
    assert cost_of(short, "claude-haiku-5-5") == pytest.approx((100_000 * 0.10 + 1000 * 0.50) / 1e6)
    assert cost_of(long, "claude-haiku-5-5") == pytest.approx(5 * (100_001 * 0.10 + 1000 * 0.50) / 1e6)


def test_an_unknown_model_gets_one_sentence_naming_the_known_ones():
    with pytest.raises(UnknownModelError) as info:
        price_of("gpt-imaginary")
    message = str(info.value)
    assert message.startswith("No price for model 'gpt-imaginary':") and "claude-haiku-4-5" in message
    assert message.count("\n") == 0 and isinstance(info.value, KeyError)
