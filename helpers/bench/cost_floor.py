"""Tools: the `cost` benchmark's floor: the least a cache-aware bounded memory could cost on the same chat, and so the most times cheaper than naive history with caching it could be.

Every cost of naive history with caching but one is also a cost of any memory that keeps the budget's window:
the replies (output, the same in every strategy), the turns before the conversation reaches the model's minimum
cacheable prefix (a bounded memory sends the same requests until its first fold, and they are paid uncached in
both), the first write of a cacheable prefix and, on every later turn, the new exchange written at the cache-write
price (the next turn's prefix holds it). The one cost a memory can cut is the cache read: naive history reads the
whole conversation, a memory whose request is cached reads at least the model's minimum. So the floor is naive
history with caching's own bill with every cache read cut to `minimum` tokens, and no fold and no upkeep call at
all: priced from its ledger (helpers.pricing), not typed. A memory that sends no breakpoints pays its whole
request at the input price each turn, at least the budget's low mark (WINDOW_BUDGET x low_water tokens), which is
dearer than a read of the minimum plus the exchange's write on every model here, so it does not go below the floor
either. The real memory pays more: the prefix rewritten at each fold, reads above the minimum between folds, and
its summary and extraction calls.

The floor is a bound of this chat as simulated, not of every chat: it assumes the simulated replies
(REPLY_TOKENS, 150 tokens) kept verbatim in the history, SECONDS_PER_TURN (30 s) between turns, 5-minute cache
entries, and the turns before the history reaches the model's minimum paid uncached. With 300-token replies the
same computation gives a higher bound (the output and the writes are a smaller share: 2.17x instead of 1.88x on
claude-haiku-4-5 at 200 turns), and a layout that pads a stable prefix to the minimum reads from the cache from
turn 2, which this floor does not allow for: `padded_floor` is the same idealisation with every turn from the second
reading exactly the minimum (a padded prefix) and writing only what naive history adds to its prompt (2.10x there).
The padded layout itself is measured by `cost --only naive_cached,bounded_cached,bounded_padded`.
"""

from __future__ import annotations

from helpers.bench.cost_table import cumulative_usd
from helpers.offline import min_cacheable_tokens
from helpers.pricing import CHAT_KIND, price_of

__all__ = ["cost_floor", "padded_floor"]


def cost_floor(naive_cached_run: dict, model: str, turns: int) -> dict:
    """The floor at `turns` for `model`, from the naive + caching run (cost_table.run_strategy's result): its USD
    (`naive_caching_usd`), the turns it read from the cache (`reading_turns`), its cache reads, those reads cut to
    the minimum (`reads_at_minimum`), the floor's USD (`floor_usd`) and naive + caching USD / floor
    (`max_times_cheaper`: no cache-aware bounded memory of this chat is more times cheaper)."""
    marks = naive_cached_run["marks"][:turns]
    chat = [e for e in naive_cached_run["entries"][: marks[-1]] if e.kind == CHAT_KIND]
    minimum, price = min_cacheable_tokens(model), price_of(model)
    reading = [e for e in chat if e.cache_read_input_tokens > 0]
    reads = sum(e.cache_read_input_tokens for e in reading)
    at_minimum = len(reading) * minimum
    naive = cumulative_usd(naive_cached_run, model, turns)[-1]
    floor = naive - (reads - at_minimum) * price.cache_read_per_mtok / 1_000_000
    return {
        "minimum": minimum,
        "naive_caching_usd": naive,
        "reading_turns": len(reading),
        "cache_read": reads,
        "reads_at_minimum": at_minimum,
        "cache_read_usd_per_mtok": price.cache_read_per_mtok,
        "floor_usd": floor,
        "max_times_cheaper": naive / floor,
    }


def padded_floor(naive_cached_run: dict, model: str, turns: int) -> dict:
    """The floor of a layout padded to the minimum, from the naive + caching run: turn 1 writes its prompt (at least
    `minimum`), every later turn reads exactly `minimum` tokens and writes what naive history added to its prompt
    since the turn before (the new exchange); the same replies; no fold, no upkeep. `floor_usd` and naive + caching
    USD / floor (`max_times_cheaper`)."""
    marks = naive_cached_run["marks"][:turns]
    chat = [e for e in naive_cached_run["entries"][: marks[-1]] if e.kind == CHAT_KIND]
    minimum, price = min_cacheable_tokens(model), price_of(model)
    prompts = [e.input_tokens + e.cache_creation_input_tokens + e.cache_read_input_tokens for e in chat]
    writes = [max(minimum, prompts[0])] + [now - before for before, now in zip(prompts, prompts[1:])]
    floor = (
        (len(chat) - 1) * minimum * price.cache_read_per_mtok
        + sum(writes) * price.cache_write_per_mtok
        + sum(e.output_tokens for e in chat) * price.output_per_mtok
    ) / 1_000_000
    naive = cumulative_usd(naive_cached_run, model, turns)[-1]
    return {"minimum": minimum, "naive_caching_usd": naive, "floor_usd": floor, "max_times_cheaper": naive / floor}
