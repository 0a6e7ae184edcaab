"""The notebooks in a real browser, in JupyterLab opened the way the README says (`run.py lab`): code links, git status.

A fresh clone of the committed tree stands in for a learner's clone; its run.py installs the output filter (as
`run.py setup` does) and opens JupyterLab at the clone's root (installing skipped: this interpreter has everything).
For each notebook, headless Chromium clicks the first link to a helpers/ file in its rendered markdown and checks that
the file opens in a Lab editor tab showing its first docstring line. Then notebook 04 is run (Run All) and saved in
Lab, and `git status --porcelain` in the clone must be empty. Screenshots go to $TEST_ARTIFACTS or test-artifacts/
(git-ignored), in code_links/. Set GTE_SKIP_BROWSER=1 to skip; without it a missing /usr/bin/chromium is a failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tools.test_browser_widget import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_FLAGS,
    KERNEL_IDLE,
    _free_port,
    _require_chromium,
    _run_all,
    _wait_for_server,
)

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
run_py.strip_outputs_on_commit()  # what `run.py setup` does in a clone
run_py.lab(sys.argv[2:])
"""
RUN_NOTEBOOK = "04_bounded_memory_mongodb.ipynb"  # runs and saves in Lab; git status must stay clean


def _first_code_link(notebook: Path) -> str:
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "markdown":
            found = LINK.search("".join(cell["source"]))
            if found:
                return found[2]
    raise AssertionError(f"{notebook.name} links to no helpers/ file")


def _fresh_clone(target: Path) -> Path:
    """A clone of this checkout's HEAD (what a learner gets from `git clone`)."""
    subprocess.run(["git", "clone", "-q", str(ROOT), str(target)], check=True)
    return target


def _status(clone: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(clone), "status", "--porcelain"], capture_output=True, text=True, check=True
    ).stdout


@contextlib.contextmanager
def _lab_in_clone(tmp_path: Path) -> Iterator[tuple[Path, int, Path]]:
    """(clone, port, log): JupyterLab started through the clone's run.py; stopped by SIGTERM, which run.py forwards."""
    clone = _fresh_clone(tmp_path / "clone")
    env = {**os.environ, "PYTHONPATH": str(clone), "GTE_DATA_DIR": str(tmp_path / "data"), "MONGODB_URI": ""}
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR", "MPLCONFIGDIR"):
        env[name] = str(tmp_path / name.lower())
    (tmp_path / "jupyter_config_dir" / "labconfig").mkdir(parents=True)
    (tmp_path / "jupyter_config_dir" / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}})
    )
    port = _free_port()
    log = tmp_path / "lab.log"
    lab = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _DRIVER,
            str(clone / "run.py"),
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            "--ServerApp.port_retries=0",
            "--ServerApp.token=",
            "--ServerApp.password=",
            f"--LabApp.workspaces_dir={tmp_path / 'ws'}",
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.expose_app_in_browser=True",
        ],
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_for_server(lab, port, log)
        yield clone, port, log
    finally:
        if lab.poll() is None:
            lab.send_signal(signal.SIGTERM)  # run.py forwards it: JupyterLab stops its kernels, then the server
            try:
                lab.wait(timeout=60)
            except subprocess.TimeoutExpired:
                lab.kill()
                lab.wait()


@contextlib.contextmanager
def _browser(pw, tmp_path: Path):
    context = pw.chromium.launch_persistent_context(
        str(tmp_path / "profile"),
        executable_path=str(CHROMIUM),
        headless=True,
        args=CHROMIUM_FLAGS,
        viewport={"width": 1400, "height": 900},
    )
    try:
        yield context.pages[0] if context.pages else context.new_page()
    finally:
        context.close()


def test_each_notebooks_code_link_opens_the_helper_file_in_lab(tmp_path):
    _require_chromium()
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    opened: dict[str, str] = {}
    with _lab_in_clone(tmp_path) as (clone, port, log):
        notebooks = sorted((clone / "notebooks").glob("0*.ipynb"))
        assert len(notebooks) >= 7  # the core lessons, 01 to the capstone (07_elephant)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/contents/helpers", timeout=10) as answer:
            assert json.loads(answer.read())["type"] == "directory"  # the root is the repository, not notebooks/
        with sync_playwright() as pw, _browser(pw, tmp_path) as page:
            try:
                for notebook in notebooks:
                    target = _first_code_link(notebook)
                    page.goto(f"http://127.0.0.1:{port}/lab/tree/notebooks/{notebook.name}?reset", timeout=60_000)
                    # Lab rewrites a relative href to its own URL; the link's text is the path it names
                    link = page.locator(
                        ".jp-RenderedMarkdown a:visible", has_text=re.compile(rf"^{re.escape(target)}$")
                    ).first
                    link.wait_for(timeout=60_000)
                    link.scroll_into_view_if_needed()
                    link.click()
                    first_line = (clone / target).read_text(encoding="utf-8").splitlines()[0].strip('"')[:40]
                    tab = page.locator(".lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel", has_text=Path(target).name)
                    tab.first.wait_for(timeout=30_000)
                    page.wait_for_function(
                        "t => [...document.querySelectorAll('.jp-FileEditor .cm-content')]"
                        ".some(e => e.innerText.includes(t))",
                        arg=first_line,
                        timeout=30_000,
                    )
                    page.screenshot(path=str(SHOTS / f"{notebook.stem}__{Path(target).stem}.png"))
                    opened[notebook.name] = target
                    page.evaluate("window.jupyterapp && window.jupyterapp.commands.execute('application:close-all')")
            except Exception:
                page.screenshot(path=str(SHOTS / "failure.png"))
                raise
    assert sorted(opened) == [n.name for n in notebooks], (opened, log.read_text(errors="replace")[-2000:])


def test_running_and_saving_notebook_04_in_lab_leaves_git_status_clean(tmp_path):
    """Issue 23: open 04 in Lab started by run.py in a fresh clone, Run All, save; `git status --porcelain` stays
    empty (the filter run.py installs, and the post-save hook run.py lab configures)."""
    _require_chromium()
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with _lab_in_clone(tmp_path) as (clone, port, log):
        path = clone / "notebooks" / RUN_NOTEBOOK
        committed = path.read_bytes()
        code_cells = sum(c["cell_type"] == "code" for c in json.loads(committed)["cells"])
        assert _status(clone) == "", "the fresh clone is not clean before anything ran"
        with sync_playwright() as pw, _browser(pw, tmp_path) as page:
            try:
                page.goto(f"http://127.0.0.1:{port}/lab/tree/notebooks/{RUN_NOTEBOOK}?reset", timeout=60_000)
                page.wait_for_function(
                    f"() => (document.querySelector('#jp-main-statusbar') || {{}}).innerText"
                    f"?.includes({KERNEL_IDLE!r})",
                    timeout=60_000,
                )
                _run_all(page)
                # every code cell has run when each has an execution count (the notebook's model: Lab may not
                # render cells out of view) and the kernel is idle again
                page.wait_for_function(
                    "n => { const nb = window.jupyterapp.shell.currentWidget; const cells = nb.content.model.cells;"
                    " let done = 0, failed = false; for (let i = 0; i < cells.length; i++) { const c = cells.get(i);"
                    " if (c.type !== 'code') continue; if (c.executionCount) done++;"
                    " for (let j = 0; j < c.outputs.length; j++) failed ||= c.outputs.get(j).type === 'error'; }"
                    " const idle = nb.sessionContext.session?.kernel?.status === 'idle';"
                    " return idle && (done === n || failed); }",  # an error stops Run All: fail below, not wait
                    arg=code_cells,
                    timeout=300_000,
                )
                page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")
                page.wait_for_function("() => !document.querySelector('.jp-mod-dirty')", timeout=30_000)
                page.screenshot(path=str(SHOTS / "04_after_run_all_and_save.png"))
            except Exception:
                page.screenshot(path=str(SHOTS / "failure_04_run.png"))
                raise
        saved = json.loads(path.read_text(encoding="utf-8"))
        outputs = [o for c in saved["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
        assert outputs and not [o for o in outputs if o["output_type"] == "error"], (
            "the run left no outputs (or an error): the check below would prove nothing"
        )
        assert path.read_bytes() != committed  # the saved file differs from the commit: only the filter hides it
        deadline = time.monotonic() + 60  # the hook refreshes git's index beside the server
        while _status(clone) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _status(clone) == "", (_status(clone), log.read_text(errors="replace")[-2000:])
