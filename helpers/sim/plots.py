"""Plots of simulated conversations: tokens per turn, cumulative cost, recall against cost. Taught in 03_context_window_overflow, "The cost of resending everything".

A chart that shows caching draws a request's tokens with their cached and uncached parts (a cached request is as
large as an uncached one: only its price changes), and every default title says what the chart shows, never a
finding its data could contradict; a title passed in is the caller's claim.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from helpers.sim.simulate import SimulationResult

__all__ = [
    "plot_input_tokens", "plot_request_parts", "plot_cumulative_cost", "plot_recall_and_cost", "plot_similarity",
    "COST_PARTS",
]  # fmt: skip

# What a bar of USD is made of, in stacking order: (key in a row's "usd_by_kind", legend label, colour)
COST_PARTS = (
    ("input", "input, uncached", "tab:blue"),
    ("cache_write", "cache writes", "tab:orange"),
    ("cache_read", "cache reads", "tab:cyan"),
    ("output", "output (replies, summaries)", "tab:gray"),
)


def _new_axes() -> tuple[Figure, Axes]:
    """A figure + axes from pyplot, closed at once: returned figures display once and never pile up."""
    fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
    plt.close(fig)
    return fig, ax


def _title_for(results: Mapping[str, SimulationResult], finding: str, fallback: str) -> str:
    return finding if "naive" in results else fallback


def _cached(results: Mapping[str, SimulationResult]) -> bool:
    return any(sum(r.cache_read_tokens) or sum(r.cache_write_tokens) for r in results.values())


def plot_input_tokens(
    results: Mapping[str, SimulationResult],
    context_window: int | None = None,
    *,
    title: str | None = None,
    log: bool = False,
) -> Figure:
    """Each turn's whole request per strategy (uncached input + cache writes + cache reads: what must fit the
    context window), with the context window as a dashed line. For a strategy with prompt caching, a dotted line
    in the same colour draws the part of each request not read from the cache (uncached input + cache writes).

    `log=True` uses a logarithmic token axis, so flat strategies stay readable beside naive history's growth.
    """
    if not results:
        raise ValueError("results is empty: pass {name: SimulationResult}")
    fig, ax = _new_axes()
    for name, r in results.items():
        turns = range(1, r.turns + 1)
        (line,) = ax.plot(
            turns, r.request_tokens, label=f"{name}: whole request (max {r.max_turn_input_tokens:,})", lw=2
        )
        if sum(r.cache_read_tokens) or sum(r.cache_write_tokens):  # what this strategy pays for at full price
            reads = list(r.cache_read_tokens) + [0] * (r.turns - len(r.cache_read_tokens))
            ax.plot(
                turns,
                [max(1, n - read) if log else n - read for n, read in zip(r.request_tokens, reads)],
                color=line.get_color(),
                ls=":",
                lw=2,
                label=f"{name}: the part not read from the cache "
                f"({1 - sum(reads) / max(1, sum(r.request_tokens)):.0%} of its tokens)",
            )
        if r.overflow_turn:
            ax.axvline(r.overflow_turn, color="grey", lw=0.8, ls=":")
    if context_window:
        ax.axhline(
            context_window, color="crimson", ls="--", lw=1.5, label=f"context window ({context_window:,} tokens)"
        )
    ax.set_xlabel("turn")
    ax.set_ylabel("tokens per request (" + ("log scale)" if log else "cached or not)"))
    if title is None and _cached(results):
        title = "Tokens per request (solid) and the part not read from the cache (dotted)"
    ax.set_title(
        title or _title_for(results, "Naive history: every turn re-sends all earlier turns", "Tokens per request")
    )
    if log:
        ax.set_yscale("log")
    ax.yaxis.set_major_formatter(lambda v, _pos: f"{v:,.0f}")
    ax.set_xlim(left=0)
    if not log:
        ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize="small")
    return fig


def plot_request_parts(results: Mapping[str, SimulationResult], *, title: str | None = None) -> Figure:
    """One panel per strategy: each turn's request stacked as read from the cache, written to it, and sent
    uncached (the three input counts of `usage`); each panel's title gives the share read from the cache."""
    if not results:
        raise ValueError("results is empty: pass {name: SimulationResult}")
    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 3.8), layout="constrained", squeeze=False)
    plt.close(fig)
    for ax, (name, r) in zip(axes[0], results.items()):
        turns = np.arange(1, r.turns + 1)
        pad = [0] * (r.turns - len(r.cache_read_tokens))
        parts = [list(r.cache_read_tokens) + pad, list(r.cache_write_tokens) + pad, r.input_tokens]
        ax.stackplot(
            turns,
            parts,
            labels=["read from the cache", "written to the cache", "uncached"],
            colors=["tab:cyan", "tab:orange", "tab:blue"],
            alpha=0.8,
        )
        total = sum(r.request_tokens)
        ax.set_title(f"{name}\n{sum(parts[0]) / total if total else 0:.0%} of request tokens read from the cache")
        ax.set_xlabel("turn")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(lambda v, _pos: f"{v:,.0f}")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("tokens per request")
    axes[0][0].legend(loc="upper left", fontsize="small")
    fig.suptitle(title or "What each request is made of: read from the cache, written to it, or sent uncached")
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
    """Side-by-side bars per strategy: recall of planted items (%) and total cost (USD). Taught in 07_elephant.

    A row with `usd_by_kind` (helpers.bench.compare) gets its cost bar stacked by what was paid for (COST_PARTS:
    uncached input, cache writes, cache reads, output); the default title says what the bars show."""
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
    if all("usd_by_kind" in table[n] for n in names):
        start = np.zeros(len(names))
        for key, label, colour in COST_PARTS:
            part = np.array([table[n]["usd_by_kind"].get(key, 0.0) for n in names])
            right.barh(names, part, left=start, color=colour, label=label)
            start += part
        right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize="small")
        right.set_xlabel("total cost of the conversation (USD), by what was paid for")
    else:
        right.barh(names, cost, color="tab:blue")
        right.set_xlabel("total cost of the conversation (USD)")
    for y, v in enumerate(cost):
        right.text(v, y, f" ${v:.3f}", va="center")
    right.set_xlim(0, max(cost) * 1.3 if max(cost) > 0 else 1)
    right.set_yticklabels([])
    for ax in (left, right):
        ax.invert_yaxis()
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle(
        title or "Recall of planted facts and details (left) and what each strategy's conversation cost (right)"
    )
    return fig


def plot_similarity(sentences: list[str], sims: np.ndarray, *, title: str) -> Figure:
    """A heatmap of pairwise cosine similarities, each cell labelled. Taught in 05_vector_memory, 'Embeddings as
    geometry' (the caller's `title` states its finding; the notebook asserts it)."""
    labels = [s if len(s) < 24 else s[:22] + "…" for s in sentences]
    fig, ax = plt.subplots(figsize=(7, 5.5), layout="constrained")
    plt.close(fig)
    image = ax.imshow(sims, cmap="viridis", vmin=0, vmax=1)
    for (i, j), value in np.ndenumerate(sims):
        ax.text(j, i, f"{value:.2f}", ha="center", va="center", color="white" if value < 0.6 else "black")
    ax.set_xticks(range(len(labels)), labels, rotation=35, ha="right")
    ax.set_yticks(range(len(labels)), labels)
    fig.colorbar(image, label="cosine similarity")
    ax.set_title(title)
    return fig
