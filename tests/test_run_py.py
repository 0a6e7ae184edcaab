"""run.py: notebook outputs never reach git, and `lab` stops the local database server it started."""

from __future__ import annotations

import importlib.util
import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run_py():
    spec = importlib.util.spec_from_file_location("run_py", ROOT / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gitattributes_route_notebooks_through_nbstripout():
    out = subprocess.run(["git", "check-attr", "filter", "--", "notebooks/01_goldfish_stateless.ipynb"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("filter: nbstripout")


def test_clean_filter_strips_outputs_and_keeps_cell_ids(tmp_path, monkeypatch):
    run_py = _run_py()
    monkeypatch.setattr(run_py, "PY", Path(sys.executable))  # this interpreter has nbstripout
    clone = tmp_path / "clone"  # a throwaway repository: the test never rewrites this checkout's git config
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    run_py.strip_outputs_on_commit(clone)  # what `run.py setup` does
    clean = subprocess.run(["git", "config", "--get", "filter.nbstripout.clean"], cwd=clone,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert "nbstripout" in clean
    nb = json.loads((ROOT / "notebooks" / "01_goldfish_stateless.ipynb").read_text(encoding="utf-8"))
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    code["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["a saved output\n"]}]
    code["execution_count"] = 7
    cleaned = subprocess.run(clean, shell=True, input=json.dumps(nb), capture_output=True, text=True,
                             check=True).stdout
    after = json.loads(cleaned)
    assert all(not c.get("outputs") for c in after["cells"] if c["cell_type"] == "code")
    assert [c["id"] for c in after["cells"]] == [c["id"] for c in nb["cells"]]


@pytest.mark.slow
def test_lab_stops_the_local_server_it_started(tmp_path, monkeypatch):
    run_py = _run_py()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "jupyter"  # stands in for JupyterLab: starts the local server (as a notebook would), exits
    fake.write_text(f"#!/bin/sh\nexec '{sys.executable}' -m helpers.db.server start >/dev/null\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(run_py, "BIN", bin_dir)
    monkeypatch.setattr(run_py, "PY", Path(sys.executable))
    monkeypatch.setattr(run_py, "setup", lambda: None)
    monkeypatch.setenv("GTE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MONGODB_URI", "")
    from helpers.db.server import local_server_status, stop_local_server

    try:
        run_py.lab()
        assert (tmp_path / "data").exists(), "the stand-in never started a server: the test proves nothing"
        assert not local_server_status(tmp_path / "data")["running"]
    finally:
        stop_local_server(tmp_path / "data")
