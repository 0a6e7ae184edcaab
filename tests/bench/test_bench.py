"""helpers.bench: the `cost` subcommand, as a subprocess and in-process."""

import json
import os
import subprocess
import sys

import pytest

from helpers.bench import build_parser, main
from helpers.bench.cost_pace import PACES, TTLS
from helpers.bench.cost_table import (
    CACHE_AWARE,
    KINDS,
    MAINTENANCE_MODEL,
    ROWS,
    cost_table,
    crossover_turn,
)
from helpers.bench.same_batches import SameBatches
from helpers.pricing import cost_of
from helpers.sim.scripts import recall_questions
from helpers.sim.simulate import REPLY_TOKENS

KEYS = {
    "turns",
    "total_input_tokens",
    "total_output_tokens",
    "max_turn_input_tokens",
    "cost_usd",
    "per_turn_input_tokens",
    "per_turn_output_tokens",
    "per_turn_cost_usd",
    "fitted_exponent",
    "strategy",
}


def run_bench(*args):
    env = {**os.environ, "ANTHROPIC_API_KEY": ""}
    return subprocess.run(
        [sys.executable, "-m", "helpers.bench", *args], capture_output=True, text=True, timeout=120, env=env
    )


@pytest.mark.slow  # a CLI subprocess (seconds each): the full set runs it
def test_cost_json_as_a_subprocess():
    run = run_bench("cost", "--strategy", "naive", "--turns", "40", "--json")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert KEYS <= set(report)
    assert report["strategy"] == "naive" and report["turns"] == 40
    assert report["total_input_tokens"] == sum(report["per_turn_input_tokens"])
    assert report["total_output_tokens"] == sum(report["per_turn_output_tokens"])
    assert report["cost_usd"] == pytest.approx(sum(report["per_turn_cost_usd"]))
    assert report["max_turn_input_tokens"] == max(report["per_turn_input_tokens"])
    assert report["fitted_exponent"] > 1.5
    assert report["cost_by_purpose"]["chat"]["calls"] == 40


def test_last_k_with_keep_last(capsys):
    assert main(["cost", "--strategy", "last_k", "--keep-last", "2", "--turns", "12", "--json", "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    # one earlier exchange at most: its padded reply, two user messages and the persona
    assert report["keep_last"] == 2 and report["reply_tokens"] == REPLY_TOKENS
    assert report["max_turn_input_tokens"] < REPLY_TOKENS + 250


def test_table_output_and_context_window_overflow(capsys):
    assert main(["cost", "--strategy", "naive", "--turns", "30", "--context-window", "1500", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "overflow at turn" in out and "prompt is too long" in out and "total: input" in out
    assert (
        main(["cost", "--strategy", "naive", "--turns", "30", "--context-window", "1500", "--json", "--no-progress"])
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["overflow_turn"] == report["turns"] + 1 and report["max_turn_input_tokens"] <= 1500


def test_bad_arguments_are_refused(capsys):
    assert main(["cost", "--strategy", "naive", "--keep-last", "4", "--turns", "2"]) == 2
    assert "last_k" in capsys.readouterr().err
    for argv in (["cost", "--turns", "0"], ["cost", "--strategy", "nope"], []):
        with pytest.raises(SystemExit) as info:
            build_parser().parse_args(argv)
        assert info.value.code == 2


def test_crossover_is_the_first_turn_from_which_ours_stays_cheaper():
    assert crossover_turn([1, 2, 3, 4], [2, 2, 4, 5]) == 3  # below at 1, tied at 2, below from 3 on
    assert crossover_turn([1, 1], [2, 2]) == 1
    assert crossover_turn([3, 3], [2, 2]) is None
    assert crossover_turn([1, 5], [2, 2]) is None  # below first, not at the end: no crossover


def test_side_by_side_table_has_every_strategy_kind_and_checkpoint(capsys, tmp_path):
    out = tmp_path / "cost.json"
    argv = ["cost", "--checkpoints", "4,8", "--pace-turns", "6", "--json", "--no-progress", "--out", str(out)]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert json.loads(out.read_text()) == report
    prov = report["provenance"]
    assert prov["reply_tokens"] == REPLY_TOKENS and prov["command"].startswith("python -m helpers.bench")
    assert {"commit", "date", "data", "mode", "seconds_per_turn", "window_budget"} <= set(prov)
    assert {"wall_seconds", "cpu_seconds", "jobs", "load_average_at_start"} <= set(prov["run"])
    assert list(report["strategies"]) == [label for label, *_ in ROWS]
    assert report["recall_questions"] == len(recall_questions())
    for label, row in report["strategies"].items():
        for model in report["models"]:
            cells = row["by_model"][model]
            assert set(cells) == {"4", "8"}
            for cell in cells.values():
                total = cell["total"]
                assert set(KINDS) <= set(total)
                assert total["usd"] == pytest.approx(cell["chat"]["usd"] + cell["maintenance"]["usd"])
                assert cell["chat"]["output"] == cell["chat"]["calls"] * REPLY_TOKENS  # padded replies
                assert 0 <= cell["recall"] <= 1
            assert cells["8"]["total"]["usd"] > cells["4"]["total"]["usd"]
            # strategies without memory upkeep make no maintenance calls; bounded ones make some once trimming
            if label in ("naive", "naive + caching", "last-k"):
                assert cells["8"]["maintenance"]["calls"] == 0
        # the cache-aware rows name the layout they ran with, per model
        assert set(row.get("layout", {})) == (set(report["models"]) if row["registry"] in CACHE_AWARE else set())
    assert report["strategies"]["naive"]["by_model"]["claude-haiku-4-5"]["8"]["recall"] > 0
    found = report["comparison"]
    assert found["at_turns"] == 8
    for model in report["models"]:
        assert set(found[model]["times_cheaper_at"]) == {"4", "8"} and found[model]["ratio"] == pytest.approx(
            found[model]["times_cheaper_at"]["8"]
        )
        floor = found[model]["floor_at"]["8"]  # naive + caching with every read cut to the minimum: never dearer
        assert floor["naive_caching_usd"] == pytest.approx(report["cumulative_usd"]["naive + caching"][model][7])
        assert floor["floor_usd"] <= floor["naive_caching_usd"] and floor["max_times_cheaper"] >= 1
    assert prov["maintenance_model"] == MAINTENANCE_MODEL  # summary and extraction on it, whichever model chats
    upkept = [  # every row's maintenance at the maintenance model's price, on every chat model
        (row["by_model"][model]["8"]["maintenance"], model)
        for row in report["strategies"].values()
        for model in report["models"]
        if row["by_model"][model]["8"]["maintenance"]["calls"]
    ]
    assert {model for _upkeep, model in upkept} == set(report["models"])
    for upkeep, _model in upkept:
        usage = {f"{kind}_tokens": upkeep[kind] for kind in ("input", "output")}
        usage |= {"cache_creation_input_tokens": upkeep["cache_write"], "cache_read_input_tokens": upkeep["cache_read"]}
        assert upkeep["usd"] == pytest.approx(cost_of(usage, MAINTENANCE_MODEL))
    sweep = report["pace_and_ttl"]
    assert sweep["turns"] == 6 and set(sweep["by_model"]) == set(report["models"])
    for model, cases in sweep["by_model"].items():
        assert [(c["seconds_per_turn"], c["ttl"]) for c in cases] == [(p, t) for p in PACES for t in TTLS]
        for case in cases:
            assert case["times_cheaper"] == pytest.approx(case["naive_caching_usd"] / case["bounded_cache_aware_usd"])
            assert case["naive_usd"] == pytest.approx(report["cumulative_usd"]["naive"][model][5])
    markdown = out.with_suffix(".md").read_text()
    assert "Pace and TTL" in markdown and "| recall |" in markdown and "`crossover_turn`" in markdown


def test_the_padded_row_runs_only_when_named_and_reads_from_the_cache_from_turn_2(capsys):
    from helpers.bench.cost_table import OURS, PADDED, THEIRS
    from helpers.offline import min_cacheable_tokens

    only = "naive_cached,bounded_cached,bounded_padded"
    argv = ["cost", "--only", only, "--checkpoints", "1,3", "--pace-turns", "0", "--json", "--no-progress"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert list(report["strategies"]) == [THEIRS, OURS, PADDED]
    for model in report["models"]:
        minimum = min_cacheable_tokens(model)
        cells = report["strategies"][PADDED]["by_model"][model]
        # turn 1 writes the padded prefix, turns 2 and 3 read it: naive + caching and the unpadded layout read nothing
        assert cells["1"]["chat"]["cache_write"] >= minimum and cells["1"]["chat"]["cache_read"] == 0
        assert cells["3"]["chat"]["cache_read"] >= 2 * minimum
        for label in (THEIRS, OURS):
            assert report["strategies"][label]["by_model"][model]["3"]["chat"]["cache_read"] == 0
        padded, naive = report["comparison"][model]["padded"], report["strategies"][THEIRS]["by_model"][model]
        assert padded["usd"] == pytest.approx(cells["3"]["total"]["usd"])
        for t in ("1", "3"):
            assert padded["times_cheaper_at"][t] == pytest.approx(naive[t]["total"]["usd"] / cells[t]["total"]["usd"])
            assert padded["recall_at"][t] == cells[t]["recall"]
        assert report["strategies"][PADDED]["layout"][model]["minimum"] == minimum


def test_side_by_side_on_a_short_run_orders_as_expected():
    rows = [r for r in ROWS if r[1] in ("naive", "bounded")]
    rows = [(label, name, {**opts, "budget": 600} if name == "bounded" else opts, c) for label, name, opts, c in rows]
    report = cost_table([30], models=["claude-haiku-4-5"], rows=rows)
    naive = report["strategies"]["naive"]["by_model"]["claude-haiku-4-5"]["30"]
    bounded = report["strategies"]["bounded (plain)"]["by_model"]["claude-haiku-4-5"]["30"]
    # the bounded window never outgrows its budget by more than the newest exchange; naive keeps everything
    assert bounded["max_request_tokens"] < naive["max_request_tokens"]
    assert bounded["chat"]["input"] < naive["chat"]["input"] and bounded["maintenance"]["calls"] > 0


def test_the_vector_rows_embed_each_batch_once_and_get_the_embedders_own_vectors():
    import numpy as np

    class Counting:
        name, dim, calls = "counting", 3, []

        def embed(self, texts):
            self.calls.append(list(texts))
            return np.array([[len(t), i, 1.0] for i, t in enumerate(texts)], dtype=np.float32)

    inner = Counting()
    memo = SameBatches(inner)
    first = memo.embed(["a", "bb"])
    first[0, 0] = -1.0  # the caller may change what it got; the memo keeps its own copy
    again = memo.embed(["a", "bb"])
    assert inner.calls == [["a", "bb"]] and again.tolist() == [[1.0, 0.0, 1.0], [2.0, 1.0, 1.0]]
    # only the very same batch is reused: a text alone, or in another batch, is the embedder's own computation
    assert memo.embed_one("bb").tolist() == [2.0, 0.0, 1.0] and memo.embed(["bb", "a"])[0].tolist() == [2.0, 0.0, 1.0]
    assert inner.calls == [["a", "bb"], ["bb"], ["bb", "a"]]
    assert (memo.name, memo.dim) == ("counting", 3)


@pytest.mark.slow  # two vector runs in subprocesses
def test_side_by_side_in_two_processes_gives_the_same_figures_as_in_one():
    rows = [r for r in ROWS if r[1] in ("naive", "vector", "vector_cached")]
    one = cost_table([2, 4], models=["claude-haiku-4-5", "claude-sonnet-4-6"], rows=rows)
    two = cost_table([2, 4], models=["claude-haiku-4-5", "claude-sonnet-4-6"], rows=rows, jobs=2)
    assert (
        one == two
        and one["strategies"]["vector (cache-aware)"]["by_model"]["claude-sonnet-4-6"]["4"]["chat"]["calls"] == 4
    )


def test_cost_by_kind_adds_up_to_the_ledger_and_prices_an_hour_long_write_at_twice_the_input():
    from helpers.bench.compare import usd_by_kind
    from helpers.bench.cost_table import cumulative_usd
    from helpers.pricing import CostLedger, price_of

    ledger = CostLedger()
    ledger.record("chat", "claude-haiku-4-5", {"input_tokens": 10, "output_tokens": 150})
    ledger.record(
        "chat",
        "claude-haiku-4-5",
        {
            "input_tokens": 3,
            "output_tokens": 150,
            "cache_creation_input_tokens": 5000,
            "cache_read_input_tokens": 0,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 5000},
        },
    )
    ledger.record("summary", "claude-haiku-4-5", {"input_tokens": 900, "output_tokens": 100})
    parts = usd_by_kind(ledger)
    price = price_of("claude-haiku-4-5")
    assert sum(parts.values()) == pytest.approx(ledger.total_cost())
    assert parts["cache_write"] == pytest.approx(5000 * 2 * price.input_per_mtok / 1e6)  # 1-hour: 2x input
    # the cost table prices the same ledger the same way, turn by turn
    run = {"entries": ledger.entries, "marks": [1, 3]}
    assert cumulative_usd(run, "claude-haiku-4-5")[-1] == pytest.approx(ledger.total_cost())


def test_maintenance_calls_are_priced_at_the_maintenance_model_and_chat_calls_at_the_rows():
    from helpers.bench.cost_table import cumulative_usd, entry_cost
    from helpers.pricing import CostLedger

    ledger = CostLedger()
    chat = ledger.record("chat", "claude-haiku-4-5", {"input_tokens": 1_000_000, "output_tokens": 0})
    summary = ledger.record("summary", "claude-haiku-4-5", {"input_tokens": 1_000_000, "output_tokens": 0})
    assert entry_cost(chat, "claude-sonnet-4-6", "claude-haiku-4-5") == pytest.approx(3.0)  # the row's model
    assert entry_cost(summary, "claude-sonnet-4-6", "claude-haiku-4-5") == pytest.approx(1.0)  # the upkeep's
    assert entry_cost(summary, "claude-sonnet-4-6") == pytest.approx(3.0)  # no maintenance model: the row's
    run = {"entries": ledger.entries, "marks": [2], "maintenance_model": "claude-haiku-4-5"}
    assert cumulative_usd(run, "claude-sonnet-4-6") == pytest.approx([4.0])
    assert cumulative_usd({**run, "maintenance_model": None}, "claude-sonnet-4-6") == pytest.approx([6.0])


def test_the_floor_is_naive_caching_with_every_read_cut_to_the_minimum():
    from helpers.bench.cost_floor import cost_floor
    from helpers.pricing import CostLedger

    ledger = CostLedger()
    ledger.record("chat", "claude-haiku-4-5", {"input_tokens": 3000, "output_tokens": 150})  # under the minimum
    ledger.record(
        "chat", "claude-haiku-4-5", {"input_tokens": 5, "output_tokens": 150, "cache_creation_input_tokens": 4300}
    )
    for read in (4300, 4480):  # two turns read the conversation, each writing the newest exchange
        usage = {"input_tokens": 5, "output_tokens": 150, "cache_creation_input_tokens": 180}
        ledger.record("chat", "claude-haiku-4-5", {**usage, "cache_read_input_tokens": read})
    ledger.record("summary", "claude-haiku-4-5", {"input_tokens": 900, "output_tokens": 100})  # naive has none
    run = {"entries": ledger.entries, "marks": [1, 2, 3, 4, 5]}
    floor = cost_floor(run, "claude-haiku-4-5", 4)
    assert (floor["reading_turns"], floor["cache_read"], floor["reads_at_minimum"]) == (2, 8780, 2 * 4096)
    naive = sum(e.cost_usd for e in ledger.entries[:4])
    assert floor["naive_caching_usd"] == pytest.approx(naive)
    assert floor["floor_usd"] == pytest.approx(naive - (8780 - 8192) * 0.1 / 1e6)  # reads at 0.1x haiku's $1
    assert floor["max_times_cheaper"] == pytest.approx(naive / floor["floor_usd"])
    from helpers.bench.cost_floor import padded_floor

    padded = padded_floor(run, "claude-haiku-4-5", 4)  # turn 1 writes its 3,000 tokens padded to 4,096
    prompts = (3000, 5 + 4300, 5 + 180 + 4300, 5 + 180 + 4480)  # each turn's whole prompt
    writes = 4096 + sum(now - before for before, now in zip(prompts, prompts[1:]))
    assert padded["floor_usd"] == pytest.approx((3 * 4096 * 0.1 + writes * 1.25 + 4 * 150 * 5) / 1e6)
    assert padded["max_times_cheaper"] == pytest.approx(naive / padded["floor_usd"])
