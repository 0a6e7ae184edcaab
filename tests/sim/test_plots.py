"""helpers.sim.plots: the simulator's figures, all offline."""

import pytest

from helpers.config import load_settings
from helpers.sim.plots import plot_cumulative_cost, plot_input_tokens
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
