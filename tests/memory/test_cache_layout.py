"""helpers.memory.caching and cache-aware bounded memory (04): the window's marks and breakpoints per model."""

import math

import pytest

from helpers.config import load_settings
from helpers.db.store import mongomock_store
from helpers.llm import get_client
from helpers.memory import BoundedMemory, reuses_prefix
from helpers.memory.caching import FOLD_PROMPT_TOKENS, Conditions, choose_layout, fold_cycle_usd
from helpers.offline import min_cacheable_tokens
from helpers.pricing import CostLedger, price_of
from helpers.prompts import SCOUT_PERSONA

FILLER = "What should we do near Griffith Park on day {i}, maybe something with a view?"
HAIKU, SONNET = "claude-haiku-4-5", "claude-sonnet-4-6"
# the trip chat's measured sizes: persona + summary ~200 tokens, one exchange (a question + a 150-token reply) ~180
TRIP = {"base_tokens": 200, "exchange_tokens": 180, "summary_tokens": 300}
# a persona with house rules, about 1,000 tokens: with it a 300-token window's prefix passes sonnet's 1,024
LONG_PERSONA = "\n".join(
    [SCOUT_PERSONA, "House rules:"]
    + [f"{i}. Keep answers short, and check every date and place twice." for i in range(70)]
)


@pytest.fixture
def settings():
    return load_settings({})


@pytest.fixture
def client(settings):
    return get_client(settings, max_retries=0)


def bounded(client, settings, **kw):
    kw.setdefault("budget", 300)
    return BoundedMemory(client, settings, store=mongomock_store(), user_id="u1", session_id=kw.pop("sid", "s1"), **kw)


def _marks(request):
    """Where the request carries cache_control: 'system' and/or the index of each marked message."""
    found = []
    if isinstance(request["system"], list) and any("cache_control" in b for b in request["system"]):
        found.append("system")
    for i, m in enumerate(request["messages"]):
        if isinstance(m["content"], list) and any("cache_control" in b for b in m["content"]):
            found.append(i)
    return found


# ---------------------------------------------------------------------------- the cost model


def test_haiku_grows_its_window_until_the_prefix_after_a_fold_is_cacheable():
    layout = choose_layout(Conditions(HAIKU, budget=2000, low_water=0.5, **TRIP))
    assert layout.breakpoints and layout.minimum == min_cacheable_tokens(HAIKU) == 4096
    # the prefix right after a fold (base + at least low - one exchange) reaches the minimum; the budget's did not
    assert TRIP["base_tokens"] + layout.low - TRIP["exchange_tokens"] >= 4096 > TRIP["base_tokens"] + 1000
    assert layout.high > 2000 and layout.high - layout.low + 2 * TRIP["exchange_tokens"] <= 4000  # one summary call
    assert layout.usd_per_turn < layout.plain_usd_per_turn  # chosen because the model says it is cheaper
    kept = choose_layout(Conditions(HAIKU, budget=2000, low_water=0.5, grow=False, **TRIP))
    assert (kept.low, kept.high, kept.breakpoints) == (1000, 2000, False)  # the budget's window: nothing to cache


def test_grow_to_cache_false_keeps_the_budgets_marks(client, settings):
    memory = bounded(client, settings, cache_aware=True, model=HAIKU, budget=2000, grow_to_cache=False)
    layout = memory.cache_layout({"window": [], "base_tokens": 200})
    assert (layout.low, layout.high, layout.breakpoints) == (1000, 2000, False)
    grown = bounded(client, settings, cache_aware=True, model=HAIKU, budget=2000).cache_layout(
        {"window": [], "base_tokens": 200}
    )
    assert grown.breakpoints and grown.low > 2000


def test_a_small_minimum_model_keeps_the_budgets_low_mark_and_folds_less_often_when_that_is_cheaper():
    conditions = Conditions(SONNET, budget=3000, low_water=0.5, **TRIP)
    layout = choose_layout(conditions)
    # its prefix is cacheable at the budget's marks; each fold rewrites it, so a higher mark (fewer folds) is cheaper
    assert (layout.low, layout.breakpoints, layout.ttl) == (1500, True, "5m") and layout.high > 3000
    assert layout.usd_per_turn < fold_cycle_usd(1500, 3000, conditions, breakpoints=True)
    # the cheapest of every high mark the cost model may try: a fold stays one summary call (4,000 tokens, 40
    # messages: at most 18 exchanges of 180 tokens dropped past the low mark)
    for high in range(3000, 1500 + 18 * 180 + 1, 100):
        assert fold_cycle_usd(1500, high, conditions, breakpoints=True) >= layout.usd_per_turn - 1e-12
    kept = choose_layout(Conditions(SONNET, budget=3000, low_water=0.5, grow=False, **TRIP))
    assert (kept.low, kept.high, kept.breakpoints) == (1500, 3000, True)  # grow=False: the budget's marks
    small = choose_layout(Conditions(SONNET, budget=400, low_water=0.5, **TRIP))  # 200 + 200 < 1,024: it grows
    assert small.breakpoints and small.low > 200 and 200 + small.low - 180 >= 1024


def test_upkeep_on_a_cheaper_model_is_priced_at_that_model_in_the_cost_model():
    on_sonnet = Conditions(SONNET, budget=2000, low_water=0.5, **TRIP)
    on_haiku = Conditions(SONNET, budget=2000, low_water=0.5, upkeep_model=HAIKU, **TRIP)
    a, b = (fold_cycle_usd(1000, 3000, c, breakpoints=True) for c in (on_sonnet, on_haiku))
    # the same chat tokens; only the fold's calls change price: a cycle from 1,000 - 90 tokens, 180 a turn, past
    # 3,000 is 12 turns; the fold reads 2 x 12 x 180 folded tokens + its prompts + the summary, writes the summary
    sonnet, haiku = price_of(SONNET), price_of(HAIKU)
    read, written = 2 * 12 * 180 + FOLD_PROMPT_TOKENS + 300, 300
    saved = read * (sonnet.input_per_mtok - haiku.input_per_mtok) + written * (
        sonnet.output_per_mtok - haiku.output_per_mtok
    )
    assert (a - b) * 1e6 == pytest.approx(saved / 12)
    assert choose_layout(on_haiku).usd_per_turn < choose_layout(on_sonnet).usd_per_turn


def test_a_pace_beyond_the_ttl_turns_breakpoints_off_or_chooses_the_hour():
    slow = Conditions(HAIKU, budget=2000, low_water=0.5, pace_seconds=360, **TRIP)
    five = choose_layout(Conditions(**{**slow.__dict__, "ttl": "5m"}))
    assert (five.low, five.high, five.breakpoints) == (1000, 2000, False)  # every entry dies before it is read
    hour = choose_layout(slow)  # ttl None: the cheaper of the two
    assert hour.breakpoints and hour.ttl == "1h" and hour.cache_control == {"type": "ephemeral", "ttl": "1h"}
    fast = choose_layout(Conditions(HAIKU, budget=2000, low_water=0.5, **TRIP))
    assert fast.ttl == "5m" and fast.cache_control == {"type": "ephemeral"}  # 1-hour writes cost 2x: not at 30 s


def test_fold_cycle_cost_follows_the_cache_rules():
    """One cycle by hand: base 4,000, exchanges of 100, low 100 (window 50 after a fold), high 250: three turns
    sending prefixes 4,050, 4,150 and 4,250; then a fold reading 300 tokens of turns twice."""
    c = Conditions(HAIKU, budget=250, low_water=0.4, base_tokens=4000, exchange_tokens=100, summary_tokens=0)
    p = price_of(HAIKU)
    fold = (2 * 300 + FOLD_PROMPT_TOKENS) * p.input_per_mtok
    plain = fold_cycle_usd(100, 250, c, breakpoints=False)
    assert plain == pytest.approx(((4050 + 4150 + 4250) * p.input_per_mtok + fold) / 3 / 1e6)
    # 4,050 < 4,096 is not cached; 4,150 is written; the third turn reads it and writes its new 100 tokens
    cached = fold_cycle_usd(100, 250, c, breakpoints=True)
    turns = 4050 * p.input_per_mtok + 4150 * p.cache_write_per_mtok + 4150 * p.cache_read_per_mtok
    assert cached == pytest.approx((turns + 100 * p.cache_write_per_mtok + fold) / 3 / 1e6)
    slow = Conditions(**{**c.__dict__, "pace_seconds": 301})  # the 5-minute entry died: written again in full
    expired = 4050 * p.input_per_mtok + (4150 + 4250) * p.cache_write_per_mtok
    assert fold_cycle_usd(100, 250, slow, breakpoints=True) == pytest.approx((expired + fold) / 3 / 1e6)
    hour = 4050 * p.input_per_mtok + 4150 * p.cache_write_1h_per_mtok + 4150 * p.cache_read_per_mtok
    assert fold_cycle_usd(100, 250, slow, breakpoints=True, ttl="1h") == pytest.approx(
        (hour + 100 * p.cache_write_1h_per_mtok + fold) / 3 / 1e6
    )


def test_unknown_model_keeps_the_budgets_marks_and_a_bad_ttl_is_refused():
    unknown = choose_layout(Conditions("m", budget=400, low_water=0.5, **TRIP))
    assert (unknown.low, unknown.high, unknown.breakpoints) == (200, 400, True) and math.isnan(unknown.usd_per_turn)
    with pytest.raises(ValueError, match="one of \\['1h', '5m'\\]"):
        choose_layout(Conditions(HAIKU, budget=400, low_water=0.5, ttl="2h", **TRIP))


def test_bounded_memory_refuses_a_bad_ttl_or_pace(client, settings):
    with pytest.raises(ValueError, match="'5m' or '1h'"):
        bounded(client, settings, cache_aware=True, cache_ttl="10m")
    with pytest.raises(ValueError, match="pace_seconds"):
        bounded(client, settings, cache_aware=True, pace_seconds=-1)


# ---------------------------------------------------------------------------- cache-aware bounded memory


def test_plain_bounded_sends_no_breakpoints_and_cache_aware_marks_what_its_layout_says(client, settings):
    plain = bounded(client, settings)
    aware = bounded(client, settings, sid="s2", cache_aware=True, model=SONNET, budget=2000)
    for memory in (plain, aware):
        memory.turn("Hi Scout, my name is Maya and my favorite color is teal.")
    assert _marks(plain.build_request("Hello again")) == []
    request = aware.build_request("Hello again")
    assert aware.layout.breakpoints and _marks(request) == ["system", len(request["messages"]) - 1]
    assert request["system"][0]["text"] == aware.system_prompt(aware.load())  # same text, only marked
    assert request["system"][0]["cache_control"] == aware.layout.cache_control
    assert aware.state()["cache_layout"] == aware.layout.to_dict()


def test_cache_aware_bounded_keeps_its_prefix_between_folds_and_folds_less_often(client, settings):
    runs = {}
    for aware in (False, True):
        memory = bounded(client, settings, sid=f"fold-{aware}", cache_aware=aware, budget=400, model=SONNET)
        memory.ledger = CostLedger()
        memory.turn("Hi Scout, my name is Maya and my favorite color is teal.")
        sent = [memory.turn(FILLER.format(i=i)) for i in range(24)]
        high = memory.layout.high if aware else 400
        assert all(r.window_tokens <= high for r in sent)
        reused = sum(reuses_prefix(a.request, b.request) for a, b in zip(sent, sent[1:]))
        runs[aware] = (reused, memory.ledger.totals_by_purpose().get("summary", {}).get("calls", 0), memory)
    assert runs[True][0] > 2 * runs[False][0]  # the cached prefix survives most turns, not the plain one's
    assert runs[True][1] < runs[False][1]  # and the summary is folded in fewer, larger calls
    assert "Maya" in runs[True][2].turn("What is my name?").reply


def test_cache_aware_bounded_reads_its_prefix_from_the_cache_between_folds(settings):
    from helpers.sim.simulate import simulation_client

    memory = bounded(simulation_client(settings), settings, cache_aware=True, model=SONNET, budget=400)
    memory.ledger = CostLedger()
    for i in range(12):
        memory.turn(FILLER.format(i=i))
    chats = [e for e in memory.ledger.entries if e.purpose == "chat"]
    assert memory.layout.breakpoints and memory.layout.low > 200  # 400's marks are too short for 1,024 tokens
    assert sum(e.cache_read_input_tokens for e in chats[-4:]) > 0  # once the prefix passes the minimum
    assert all(e.prompt_tokens < 1024 for e in chats if e.cache_read_input_tokens == e.cache_creation_input_tokens == 0)


def test_cache_aware_vector_memory_sends_memories_after_the_cached_prefix(settings):
    from helpers.memory import VectorMemory
    from helpers.prompts import MEMORY_OPEN

    client = get_client(settings, max_retries=0)
    memory = VectorMemory(
        client,
        settings,
        store=mongomock_store(),
        user_id="u1",
        session_id="v1",
        budget=300,
        memory_budget=200,
        cache_aware=True,
        model=SONNET,
        system=LONG_PERSONA,  # long enough that the budget's own window is cached
        grow_to_cache=False,  # the budget's marks: the reservation leaves the window and is recalled as a memory
    )
    memory.turn("Our dinner reservation at Bestia is at 7:45pm on Friday, table for three.")
    sent = [memory.turn(FILLER.format(i=i)).request for i in range(8)]
    result = memory.turn("What time is our dinner reservation at Bestia?")
    memory.close()
    request = result.request
    system = request["system"][0]["text"]
    newest, before = request["messages"][-1]["content"], request["messages"][-2]["content"]
    assert MEMORY_OPEN.strip() not in system and MEMORY_OPEN.strip() in newest[-1]["text"]  # memories come last
    assert "cache_control" in before[-1] and all("cache_control" not in b for b in newest)  # cached to the window's end
    assert "7:45" in newest[-1]["text"] and "7:45" in result.reply
    assert (memory.layout.low, memory.layout.high) == (150, 300)  # the budget's marks, their prefix cacheable
    assert sum(reuses_prefix({**a, "messages": a["messages"][:-1]}, b) for a, b in zip(sent, sent[1:])) >= 4


def test_one_context_budget_keeps_the_budgets_marks(settings):
    """A retriever that plans each request's window (one context budget) sends a different window per question:
    a larger stored window would not be read from the cache, so the layout keeps the budget's marks."""
    from helpers.memory import VectorMemory

    memory = VectorMemory(
        get_client(settings, max_retries=0),
        settings,
        store=mongomock_store(),
        user_id="u1",
        session_id="v2",
        context_budget=600,
        cache_aware=True,
    )
    memory.turn("Hi Scout, my name is Maya.")
    layout = memory.cache_layout(memory.load())
    memory.close()
    assert (layout.low, layout.high) in {(300, 600)}


@pytest.mark.slow  # forty simulated turns with padded replies (seconds)
def test_on_haiku_the_grown_window_is_read_from_the_cache(settings):
    """haiku caches nothing under 4,096 tokens: the budget's 2,000-token window would never be read from the cache;
    the layout's larger window is, once the conversation is long enough to fill it."""
    from helpers.sim.scripts import TRIP_PERSONA, trip_script
    from helpers.sim.simulate import simulation_client

    memory = bounded(simulation_client(settings), settings, cache_aware=True, model=HAIKU, budget=2000)
    memory.system, memory.ledger = TRIP_PERSONA, CostLedger()
    results = [memory.turn(text) for text in trip_script(40)]
    chats = [e for e in memory.ledger.entries if e.purpose == "chat"]
    assert memory.layout.breakpoints and memory.layout.low >= 4096 - memory.base_tokens(memory.load())
    assert max(r.window_tokens for r in results) > 2000  # past the budget ...
    assert all(e.cache_read_input_tokens == 0 for e in chats if e.prompt_tokens < 4096)  # ... nothing under 4,096
    assert sum(e.cache_read_input_tokens > 0 for e in chats[-10:]) >= 9  # ... and read from the cache above it


# ---------------------------------------------------------------------------- padded to the minimum


@pytest.mark.parametrize("model", [HAIKU, SONNET])
def test_the_padded_prefix_reaches_the_minimum_and_is_read_from_the_cache_from_turn_2(settings, model):
    from helpers.memory.caching import PAD_FILLER
    from helpers.sim.simulate import simulation_client

    client = simulation_client(settings)
    # the budget's own marks (grow_to_cache=False), so that 15 turns fold
    memory = bounded(
        client, settings, cache_aware=True, pad_to_cache=True, model=model, budget=400, grow_to_cache=False
    )
    memory.ledger = CostLedger()
    minimum = min_cacheable_tokens(model)
    # persona + pinned filler, measured by count_tokens, reaches the minimum on its own (the persona alone does not)
    assert memory.system.startswith(SCOUT_PERSONA) and PAD_FILLER.strip() in memory.system
    block = client.messages.count_tokens(model=model, system=memory.system, messages=[{"role": "user", "content": "."}])
    assert memory.pinned_tokens == block.input_tokens - 1 >= minimum > memory._count_base(SCOUT_PERSONA)
    memory.turn("Hi Scout, my name is Maya and my favorite color is teal.")
    for i in range(14):
        memory.turn(FILLER.format(i=i))
    chats = [e for e in memory.ledger.entries if e.purpose == "chat"]
    assert chats[0].cache_creation_input_tokens >= minimum and chats[0].cache_read_input_tokens == 0
    # turn 2 on, every request reads at least the pinned block, after the folds too
    assert all(e.cache_read_input_tokens >= minimum for e in chats[1:])
    assert memory.ledger.totals_by_purpose().get("summary", {}).get("calls", 0) > 0  # it folded
    request = memory.build_request("What is my favorite color?")
    assert [("cache_control" in b) for b in request["system"]] == [True, True]  # the pinned block, the summary
    assert request["system"][0]["text"] == memory.system and "teal" not in request["system"][0]["text"]
    assert "\n".join(b["text"] for b in request["system"]) == memory.system_prompt(memory.load())  # same text
    # free to grow, the layout needs no larger window to be cacheable after a fold: it keeps the budget's low mark
    grown = choose_layout(
        Conditions(model, 400, 0.5, memory.pinned_tokens + 100, 180, 300, pinned_tokens=memory.pinned_tokens)
    )
    assert grown.breakpoints and grown.low == 200 and grown.minimum == minimum


def test_pad_to_cache_needs_cache_aware_and_pins_the_apps_own_text_first(client, settings):
    with pytest.raises(ValueError, match="cache_aware"):
        bounded(client, settings, pad_to_cache=True)
    rules = "House rules:\n" + "\n".join(f"{i}. Check every date and place twice." for i in range(20))
    memory = bounded(client, settings, cache_aware=True, pad_to_cache=rules, model=SONNET)
    assert memory.system.startswith(f"{SCOUT_PERSONA}\n\n{rules}") and memory.pinned_tokens >= 1024
    long_rules = LONG_PERSONA + "\n" + rules  # already past sonnet's minimum: pinned as it is, no filler
    memory = bounded(client, settings, cache_aware=True, pad_to_cache=long_rules, model=SONNET, sid="s2")
    assert memory.system == f"{SCOUT_PERSONA}\n\n{long_rules}"


def test_the_registered_padded_strategy_is_cache_aware_bounded_with_the_option(client, settings):
    from helpers.sim.strategies import make_strategy

    memory = make_strategy("bounded_padded", client, settings, model=HAIKU, budget=2000)
    assert isinstance(memory, BoundedMemory) and memory.cache_aware and memory.pinned_tokens >= 4096
    plain = make_strategy("bounded_cached", client, settings, model=HAIKU, budget=2000)
    assert plain.pinned_tokens == 0 and plain.system == SCOUT_PERSONA


def test_a_pinned_block_past_the_minimum_is_read_after_every_fold_in_the_cost_model():
    padded = dict(TRIP, base_tokens=4400)
    unpinned = Conditions(HAIKU, budget=2000, low_water=0.5, **padded)
    pinned = Conditions(HAIKU, budget=2000, low_water=0.5, pinned_tokens=4200, **padded)
    for low, high in ((1000, 2000), (1000, 4000)):
        a = fold_cycle_usd(low, high, unpinned, breakpoints=True)
        b = fold_cycle_usd(low, high, pinned, breakpoints=True)
        # the first turn after a fold reads the 4,200 pinned tokens instead of writing them again
        price = price_of(HAIKU)
        assert b < a
        assert a - b == pytest.approx(
            4200 * (price.cache_write_per_mtok - price.cache_read_per_mtok) / 1e6 / _turns(low, high, 180), rel=1e-6
        )
    short = Conditions(HAIKU, budget=2000, low_water=0.5, pinned_tokens=4000, **padded)  # under the minimum
    assert fold_cycle_usd(1000, 2000, short, breakpoints=True) == fold_cycle_usd(1000, 2000, unpinned, breakpoints=True)


def _turns(low: float, high: float, e: float) -> int:
    """Turns of one fold cycle in the cost model (from low - e/2, one exchange a turn, until past high)."""
    window, n = low - e / 2, 0
    while True:
        n += 1
        window += e
        if window > high:
            return n
