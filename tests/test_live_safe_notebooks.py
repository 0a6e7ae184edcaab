"""Live-safe classroom mode, whole notebooks (issue 22): with a dummy key and the live transport counting calls (answered
by the offline model, GTE_LIVE_STUB=1, never sent), a notebook's replays, recall tables and imports make no live call
unless SIMULATE_LIVE=1; only its chats do, and the notebook's cost cell reports them."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


def _run(name: str, monkeypatch, **env: str) -> str:
    """Execute notebook `name` with `env` set; return the text its live-cost cell printed."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-dummy-never-sent")
    monkeypatch.setenv("GTE_LIVE_STUB", "1")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    path = next((ROOT / "notebooks").glob(f"{name}_*.ipynb"))
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    cell = next(c for c in nb.cells if c.get("id", "").endswith("-live-cost"))
    return "".join(o.get("text", "") for o in cell.outputs)


@pytest.mark.slow
def test_04_replays_stay_offline_with_a_key_and_go_live_only_on_purpose(monkeypatch):
    out = _run("04", monkeypatch)
    live = int(re.search(r"this kernel sent ([\d,]+) API calls", out).group(1).replace(",", ""))
    replays = int(
        re.search(r"replays, benchmarks and imports .*?: ([\d,]+) model calls", out).group(1).replace(",", "")
    )
    assert replays >= 41 and live < replays  # the forty turns, their summaries and the simulations stayed offline
    on = _run("04", monkeypatch, SIMULATE_LIVE="1", MAX_LIVE_CALLS="100000")
    live_on = int(re.search(r"this kernel sent ([\d,]+) API calls", on).group(1).replace(",", ""))
    assert live_on >= live + replays  # SIMULATE_LIVE=1: the replays went to the (stubbed) live API too
