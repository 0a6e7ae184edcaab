"""helpers.sim.plots: the simulator's figures, all offline."""

import pytest

from helpers.config import load_settings
from helpers.sim.plots import (
    COST_PARTS,
    plot_cumulative_cost,
    plot_input_tokens,
    plot_recall_and_cost,
    plot_request_parts,
)
from helpers.sim.scripts import TRIP_PERSONA, trip_script
from helpers.sim.simulate import SimulationResult, simulate, simulation_client
from helpers.sim.strategies import make_strategy

MODEL = "claude-haiku-4-5"


@pytest.fixture(scope="module")
def offline_settings():
    return load_settings({})


def naive_run(settings, n):
    client = simulation_client(settings)
    return simulate(make_strategy("naive", client, settings, system=TRIP_PERSONA), trip_script(n), name="naive")


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
    naive = SimulationResult(
        strategy="naive",
        model="claude-haiku-4-5",
        input_tokens=[100 * t for t in range(1, 41)],
        output_tokens=[10] * 40,
        cost_usd=[0.0] * 40,
    )
    flat = SimulationResult(
        strategy="bounded",
        model="claude-haiku-4-5",
        input_tokens=[300] * 40,
        output_tokens=[10] * 40,
        cost_usd=[0.0] * 40,
    )
    ax = plot_input_tokens({"naive": naive, "bounded": flat}, log=True).axes[0]
    assert ax.get_yscale() == "log" and "log scale" in ax.get_ylabel()
    assert plot_input_tokens({"naive": naive}).axes[0].get_yscale() == "linear"


def _cached_run(turns=40):
    """A naive + caching run in miniature: the request grows by 100 a turn, all but the newest 100 read."""
    return SimulationResult(
        strategy="naive + caching",
        model=MODEL,
        input_tokens=[3] * turns,
        cache_write_tokens=[100] * turns,
        cache_read_tokens=[100 * t for t in range(turns)],
        output_tokens=[10] * turns,
        cost_usd=[0.0] * turns,
    )


def test_a_cached_run_is_drawn_as_whole_requests_with_the_part_not_read_dotted():
    cached = _cached_run()
    ax = plot_input_tokens({"naive + caching": cached}).axes[0]
    (line,) = [line for line in ax.get_lines() if line.get_label().startswith("naive + caching: whole request")]
    assert list(line.get_ydata()) == cached.request_tokens  # not the 3 uncached tokens per request
    assert max(line.get_ydata()) == 103 + 100 * 39
    (dotted,) = [line for line in ax.get_lines() if line.get_linestyle() == ":"]
    assert list(dotted.get_ydata()) == [103] * 40 and "not read from the cache" in dotted.get_label()
    assert "the part not read from the cache (dotted)" in ax.get_title()  # the default title says what is drawn


def test_request_parts_stack_read_written_and_uncached_per_strategy():
    plain = SimulationResult(
        strategy="bounded", model=MODEL, input_tokens=[500] * 10, output_tokens=[10] * 10, cost_usd=[0.0] * 10
    )
    fig = plot_request_parts({"bounded": plain, "naive + caching": _cached_run(10)})
    left, right = fig.axes[:2]
    assert left.get_title() == "bounded\n0% of request tokens read from the cache"
    cached = _cached_run(10)
    share = sum(cached.cache_read_tokens) / sum(cached.request_tokens)
    assert right.get_title() == f"naive + caching\n{share:.0%} of request tokens read from the cache"
    assert [t.get_text() for t in left.get_legend().get_texts()] == [
        "read from the cache",
        "written to the cache",
        "uncached",
    ]


def test_recall_and_cost_bars_stack_what_was_paid_for_under_a_title_that_states_it():
    table = {
        "naive + caching": {
            "recall": 1.0,
            "cost_usd": 0.4,
            "usd_by_kind": {"input": 0.05, "cache_write": 0.05, "cache_read": 0.2, "output": 0.1},
        },
        "vector": {
            "recall": 0.95,
            "cost_usd": 0.5,
            "usd_by_kind": {"input": 0.35, "cache_write": 0.0, "cache_read": 0.0, "output": 0.15},
        },
    }
    fig = plot_recall_and_cost(table)
    right = fig.axes[1]
    widths = {}
    for bar in right.patches:
        widths.setdefault(round(bar.get_y(), 3), []).append(bar.get_width())
    assert sorted(round(sum(w), 6) for w in widths.values()) == [0.4, 0.5]  # each stack is the row's whole cost
    assert [t.get_text() for t in right.get_legend().get_texts()] == [label for _k, label, _c in COST_PARTS]
    assert fig.get_suptitle().startswith("Recall of planted facts and details (left)")
    assert "recalls nearly everything" not in fig.get_suptitle()  # no finding in a default title
