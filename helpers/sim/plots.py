"""Plots of simulated conversations: tokens per turn, cumulative cost, recall against cost. Taught in 03_context_window_overflow, "The cost of resending everything"."""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from helpers.sim.simulate import SimulationResult

__all__ = ["plot_input_tokens", "plot_cumulative_cost", "plot_recall_and_cost"]


def _new_axes() -> tuple[Figure, Axes]:
    """A figure + axes from pyplot, closed at once: returned figures display once and never pile up."""
    fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
    plt.close(fig)
    return fig, ax


def _title_for(results: Mapping[str, SimulationResult], finding: str, fallback: str) -> str:
    return finding if "naive" in results else fallback


def plot_input_tokens(
    results: Mapping[str, SimulationResult],
    context_window: int | None = None,
    *,
    title: str | None = None,
    log: bool = False,
) -> Figure:
    """Input tokens of each turn's request per strategy, with the context window as a dashed line.

    `log=True` uses a logarithmic token axis, so flat strategies stay readable beside naive history's growth.
    """
    if not results:
        raise ValueError("results is empty: pass {name: SimulationResult}")
    fig, ax = _new_axes()
    for name, r in results.items():
        ax.plot(range(1, r.turns + 1), r.input_tokens, label=f"{name} (max {r.max_turn_input_tokens:,})", lw=2)
        if r.overflow_turn:
            ax.axvline(r.overflow_turn, color="grey", lw=0.8, ls=":")
    if context_window:
        ax.axhline(
            context_window, color="crimson", ls="--", lw=1.5, label=f"context window ({context_window:,} tokens)"
        )
    ax.set_xlabel("turn")
    ax.set_ylabel("input tokens per request (tokens" + (", log scale)" if log else ")"))
    ax.set_title(
        title or _title_for(results, "Naive history: every turn re-sends all earlier turns", "Input tokens per turn")
    )
    if log:
        ax.set_yscale("log")
    ax.yaxis.set_major_formatter(lambda v, _pos: f"{v:,.0f}")
    ax.set_xlim(left=0)
    if not log:
        ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left")
    return fig


def plot_cumulative_cost(
    results: Mapping[str, SimulationResult], fit: bool = True, *, title: str | None = None
) -> Figure:
    """Cumulative USD per strategy; with `fit`, the fitted quadratic a·t² + b·t + c over the naive curve."""
    if not results:
        raise ValueError("results is empty: pass {name: SimulationResult}")
    fig, ax = _new_axes()
    for name, r in results.items():
        t = np.arange(1, r.turns + 1)
        fitted = fit and name == "naive" and r.turns >= 3
        ax.plot(
            t,
            r.cumulative_cost_usd(),
            lw=4 if fitted else 2,
            alpha=0.55 if fitted else 1.0,
            label=f"{name} (total ${r.total_cost_usd:,.4f})",
        )
        if fitted:
            a, b, c = r.fit_quadratic()
            ax.plot(
                t,
                a * t**2 + b * t + c,
                color="black",
                ls="--",
                lw=1.2,
                label=f"quadratic fit a·t² + b·t + c (a = {a:.2g} USD/turn²)",
            )
    ax.set_xlabel("turn")
    ax.set_ylabel("cumulative cost (USD)")
    model = next(iter(results.values())).model
    ax.set_title(
        title
        or _title_for(
            results,
            f"Naive history: cumulative cost grows with turns² ({model} prices)",
            f"Cumulative cost ({model} prices)",
        )
    )
    ax.yaxis.set_major_formatter(lambda v, _pos: f"${v:,.2f}" if v >= 0.1 or v == 0 else f"${v:,.3f}")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left")
    return fig


def plot_recall_and_cost(table: Mapping[str, Mapping[str, float]], *, title: str | None = None) -> Figure:
    """Side-by-side bars per strategy: recall of planted items (%) and total cost (USD). Taught in 07_elephant."""
    names = list(table)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
    plt.close(fig)
    recall = [100 * table[n]["recall"] for n in names]
    cost = [table[n]["cost_usd"] for n in names]
    left.barh(names, recall, color="tab:green")
    left.set_xlim(0, 118)  # room for the "100%" label right of a full bar
    left.set_xticks(range(0, 101, 20))
    left.set_xlabel("planted facts and details recalled (%)")
    for y, v in enumerate(recall):
        left.text(v + 1, y, f"{v:.0f}%", va="center")
    right.barh(names, cost, color="tab:blue")
    right.set_xlabel("total cost of the conversation (USD)")
    for y, v in enumerate(cost):
        right.text(v, y, f" ${v:.3f}", va="center")
    right.set_xlim(0, max(cost) * 1.3 if max(cost) > 0 else 1)
    right.set_yticklabels([])
    for ax in (left, right):
        ax.invert_yaxis()
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle(title or "Only memory that retrieves what matters recalls nearly everything at a flat cost")
    return fig
