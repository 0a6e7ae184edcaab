"""The notebooks' "The code:" links in a real browser, in JupyterLab opened the way the README says (`run.py lab`).

A fresh copy of the committed tree (git archive) stands in for a fresh clone; its run.py opens JupyterLab at the
copy's root (setup skipped: this interpreter has everything). For each notebook, headless Chromium clicks the first
link to a helpers/ file in its rendered markdown and checks that the file opens in a Lab editor tab showing its
first docstring line. Screenshots of each opened file go to $TEST_ARTIFACTS or test-artifacts/ (git-ignored), in
code_links/. Set GTE_SKIP_BROWSER=1 to skip; without it a missing /usr/bin/chromium is a failure, not a skip.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.tools.test_browser_widget import (ARTIFACTS, CHROMIUM, CHROMIUM_FLAGS, _free_port, _require_chromium,
                                             _wait_for_server)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ARTIFACTS / "code_links"
LINK = re.compile(r"\[(helpers/[\w/]+\.py)\]\(\.\./(helpers/[\w/]+\.py)\)")
_DRIVER = """
import importlib.util, sys
from pathlib import Path
spec = importlib.util.spec_from_file_location("run_py", sys.argv[1])
run_py = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run_py)
run_py.setup = lambda: None
run_py.BIN, run_py.PY = Path(sys.executable).parent, Path(sys.executable)
run_py.lab(sys.argv[2:])
"""


def _first_code_link(notebook: Path) -> str:
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "markdown":
            found = LINK.search("".join(cell["source"]))
            if found:
                return found[2]
    raise AssertionError(f"{notebook.name} links to no helpers/ file")


def _fresh_copy(target: Path) -> Path:
    target.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "HEAD"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def test_each_notebooks_code_link_opens_the_helper_file_in_lab(tmp_path):
    _require_chromium()
    from playwright.sync_api import sync_playwright

    clone = _fresh_copy(tmp_path / "clone")
    notebooks = sorted((clone / "notebooks").glob("0*.ipynb"))
    assert len(notebooks) >= 7
    env = {**os.environ, "PYTHONPATH": str(clone), "GTE_DATA_DIR": str(tmp_path / "data"), "MONGODB_URI": ""}
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR", "MPLCONFIGDIR"):
        env[name] = str(tmp_path / name.lower())
    (tmp_path / "jupyter_config_dir" / "labconfig").mkdir(parents=True)
    (tmp_path / "jupyter_config_dir" / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
    port = _free_port()
    log = tmp_path / "lab.log"
    lab = subprocess.Popen([sys.executable, "-c", _DRIVER, str(clone / "run.py"), "--no-browser", "--ip=127.0.0.1",
                            f"--port={port}", "--ServerApp.port_retries=0", "--ServerApp.token=",
                            "--ServerApp.password=", f"--LabApp.workspaces_dir={tmp_path / 'ws'}",
                            "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                            "--LabApp.expose_app_in_browser=True"],
                           env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    SHOTS.mkdir(parents=True, exist_ok=True)
    opened: dict[str, str] = {}
    try:
        _wait_for_server(lab, port, log)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/contents/helpers", timeout=10) as answer:
            assert json.loads(answer.read())["type"] == "directory"  # the root is the repository, not notebooks/
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                str(tmp_path / "profile"), executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS,
                viewport={"width": 1400, "height": 900})
            try:
                page = context.pages[0] if context.pages else context.new_page()
                for notebook in notebooks:
                    target = _first_code_link(notebook)
                    page.goto(f"http://127.0.0.1:{port}/lab/tree/notebooks/{notebook.name}?reset", timeout=60_000)
                    # Lab rewrites a relative href to its own URL; the link's text is the path it names
                    link = page.locator(".jp-RenderedMarkdown a:visible", has_text=re.compile(rf"^{re.escape(target)}$")).first
                    link.wait_for(timeout=60_000)
                    link.scroll_into_view_if_needed()
                    link.click()
                    first_line = (clone / target).read_text(encoding="utf-8").splitlines()[0].strip('"')[:40]
                    tab = page.locator(".lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel",
                                       has_text=Path(target).name)
                    tab.first.wait_for(timeout=30_000)
                    page.wait_for_function("t => [...document.querySelectorAll('.jp-FileEditor .cm-content')]"
                                           ".some(e => e.innerText.includes(t))", arg=first_line, timeout=30_000)
                    page.screenshot(path=str(SHOTS / f"{notebook.stem}__{Path(target).stem}.png"))
                    opened[notebook.name] = target
                    page.evaluate("window.jupyterapp && window.jupyterapp.commands.execute('application:close-all')")
            finally:
                context.close()
    except Exception:
        if "page" in locals():
            page.screenshot(path=str(SHOTS / "failure.png"))
        raise
    finally:
        if lab.poll() is None:
            lab.send_signal(signal.SIGTERM)  # run.py forwards it: JupyterLab stops its kernels, then the server
            try:
                lab.wait(timeout=60)
            except subprocess.TimeoutExpired:
                lab.kill()
                lab.wait()
    assert sorted(opened) == [n.name for n in notebooks], (opened, log.read_text(errors="replace")[-2000:])
