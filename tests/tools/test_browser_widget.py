"""helpers.tools.widget in a real browser: JupyterLab + headless system Chromium run a notebook and chat through the widget.

Follows /work/shared/BROWSER_TESTING.md: JupyterLab on a free port (no token, temp JUPYTER_* dirs), the
system Chromium driven by playwright (never `playwright install`), a copy of the notebook in a temp root.
Screenshots go to $TEST_ARTIFACTS or test-artifacts/ (git-ignored): one on failure, and on every run a set of the
widget (before the first message, after a few turns, retrieved panel filled, long messages, narrow and wide
viewport) in widget_screenshots/, each taken after the layout check that asserts nothing is clipped, and one of each
panel (gauge, summary, window, retrieved) after a turn-1 fact came back through retrieval (panel_*.png).
Set GTE_SKIP_BROWSER=1 to skip; without it a missing /usr/bin/chromium is a failure, not a skip.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from helpers.bench.reader_eval import declines

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
WIDGET_NOTEBOOK = "07_elephant.ipynb"  # the notebook readers open: no stand-in notebook could hide its regression
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("TEST_ARTIFACTS") or ROOT / "test-artifacts")
SHOTS = ARTIFACTS / "widget_screenshots"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
# Long enough that the second exchange pushes the first out of an 80-token window (so a summary appears).
MESSAGES = [
    "Hi Scout, my name is Maya and my favorite color is teal.",
    "I live in Portland and I am flying down to Los Angeles next month for a week.",
]
# Issue 12's exchanges, typed after MESSAGES: (message, a word the reply must contain, or None for a statement).
EXCHANGES = [
    ("My sister Priya lives in Pasadena and she is a nurse.", None),
    ("Any good tacos near Echo Park?", None),
    ("Which beach is nice for a morning walk?", None),
    ("Where does my sister live?", "Pasadena"),
    ("My cousin Theo works at the Getty Center.", None),
    ("Where does my cousin work?", "Getty"),
    ("I'm vegetarian, so no meat please.", None),
    ("What should I avoid eating?", "meat"),
]
# Issue 23: a fact told in turn 1 (MESSAGES[0]) that the capped summary has dropped by then, asked in other words:
# it can only come back through retrieval, and the retrieved panel shows it, labelled.
PARAPHRASE, RECALLED = "What do people call me?", "Maya"
PANELS = ("gauge", "summary", "window", "retrieved")  # each saved as its own screenshot after the paraphrase
# Long messages: a paragraph, and unbroken strings (a URL, a code) that must wrap inside the log, not widen it.
LONG_MESSAGES = [
    "Quick update before I forget, it's a long one: my partner Alejandra and I are moving from Portland to a small "
    "flat in Glendale at the end of March, the movers come on the 28th between eight and ten in the morning, the "
    "new landlord is called Mr. Okonkwo, and the parking permit for the street still has to be sorted out at the "
    "city office, which is only open on weekdays.",
    "The booking link they sent me is https://example.com/reservations/confirm?id=8f3a2c91d4e74b0f9a1c2d3e4f5a6b7c"
    "&guest=maya.teal.portland&ref=LAXWEEKNEXTMONTH and the code is GTE-7Q4M-XXLR-2219-PQDA-ZZZZ-0000-LONGCODE.",
]
# Viewports for the layout check: a narrow one (the side panel must wrap below the chat) and a wide one.
VIEWPORTS = {"narrow": {"width": 900, "height": 1000}, "wide": {"width": 1920, "height": 1080}}
KERNEL_IDLE = "Python 3 (ipykernel) | Idle"
# The widget the reader types into carries this class (notebook 07 also shows a scripted demo widget above it).
CHAT = ".gte-chat.gte-reader"


def _require_chromium() -> None:
    if os.environ.get("GTE_SKIP_BROWSER") == "1":
        pytest.skip("GTE_SKIP_BROWSER=1: browser test skipped on request")
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: install it with `apt-get install -y chromium` (the widget's browser "
            "test needs the system Chromium), or set GTE_SKIP_BROWSER=1 to skip this test explicitly.",
            pytrace=False,
        )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _notebook_under_test(root: Path) -> Path:
    """Copy notebooks/WIDGET_NOTEBOOK into `root` (a missing notebook is a failure, not a reason to test another)."""
    repo_notebook = ROOT / "notebooks" / WIDGET_NOTEBOOK
    assert repo_notebook.is_file(), f"{repo_notebook} is missing: the widget's browser test runs that notebook"
    target = root / repo_notebook.name
    shutil.copy(repo_notebook, target)
    return target


def _start_lab(tmp: Path, root: Path, port: int) -> subprocess.Popen:
    dirs = {
        name: tmp / name.lower()
        for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR", "MPLCONFIGDIR")
    }
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    (dirs["JUPYTER_CONFIG_DIR"] / "labconfig").mkdir()
    (dirs["JUPYTER_CONFIG_DIR"] / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}})
    )
    # The kernel inherits this environment: GTE_DATA_DIR (root conftest's temp dir) and the offline key setting.
    env = {**os.environ, **{k: str(v) for k, v in dirs.items()}}
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        "--ServerApp.token=",
        "--ServerApp.password=",
        "--allow-root",
        f"--ServerApp.root_dir={root}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        f"--LabApp.workspaces_dir={tmp / 'workspaces'}",
        "--LabApp.expose_app_in_browser=True",
    ]
    log = open(tmp / "jupyterlab.log", "wb")
    return subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=root)


def _wait_for_server(proc: subprocess.Popen, port: int, log: Path, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(
        f"jupyter lab did not answer on port {port} within {timeout:.0f}s:\n{log.read_text(errors='replace')[-3000:]}"
    )


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)  # the server's own PID; it shuts its kernels down
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def _run_all(page) -> None:
    """Run > Run All Cells from the menu bar; the exposed app command if the menu is not there."""
    try:
        page.locator("#jp-MainMenu .lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click(timeout=5000)
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click(timeout=5000)
    except Exception:  # noqa: BLE001 - fall back to the command the menu item runs
        page.keyboard.press("Escape")
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")


def _outputs_text(page) -> str:
    try:
        return page.locator(".jp-OutputArea").all_inner_texts().__str__()[-3000:]
    except Exception:  # noqa: BLE001 - only for the failure message
        return "(could not read outputs)"


def _chat(page, text: str, replies_before: int, enter: bool = False) -> None:
    """Type `text` into the widget, click Send (or press Enter), wait for the next reply and for Send to come back."""
    box = page.locator(f"{CHAT} .gte-input input")
    if enter:  # key by key at full speed, then Enter: the Enter event must not overtake the last keystrokes
        box.press_sequentially(text, delay=0)
        box.press("Enter")
    else:
        box.fill(text)
        page.locator(f"{CHAT} .gte-send").click()
    page.wait_for_function(
        f"n => document.querySelectorAll('{CHAT} .gte-log .gte-msg-assistant, {CHAT} .gte-log .gte-msg-error')"
        ".length > n",
        arg=replies_before,
        timeout=30_000,
    )
    page.wait_for_function(f"() => !document.querySelector('{CHAT} .gte-send').disabled", timeout=15_000)


# Run in the page: every way the widget can be clipped or hide something, as a list of problems (empty = fine).
_LAYOUT_PROBLEMS = """
(sel) => {
  const chat = document.querySelector(sel);
  if (!chat) return [`no ${sel} in the page`];
  const out = chat.closest('.jp-OutputArea-output');
  const panel = chat.closest('.jp-NotebookPanel-notebook') || chat.closest('.jp-Notebook');
  if (!out || !panel) return ['the chat widget is not inside a cell output area of a notebook'];
  const area = out.getBoundingClientRect(), view = panel.getBoundingClientRect();
  const problems = [];
  const name = el => el.className && typeof el.className === 'string'
      ? el.className.split(/\\s+/).filter(c => c.startsWith('gte-')).join('.') || el.tagName : el.tagName;
  if (area.right > view.right + 1)
    problems.push(`output area right edge ${area.right.toFixed(0)} is past the notebook's ${view.right.toFixed(0)}`);
  const parts = ['.gte-log', '.gte-log-scroll', '.gte-input', '.gte-send', '.gte-gauge', '.gte-summary', '.gte-window',
                 '.gte-retrieved', '.gte-cost', '.gte-gauge-body', '.gte-summary-body', '.gte-window-body',
                 '.gte-retrieved-body', '.gte-cost-body'];
  const elements = [chat, ...parts.flatMap(p => [...chat.querySelectorAll(p)])];
  for (const p of parts)
    if (!p.endsWith('-body') && !chat.querySelector(p)) problems.push(`${p} is missing`);
  for (const el of elements) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) { problems.push(`${name(el)} is not displayed`); continue; }
    if (!el.classList.contains('gte-input') && el.scrollWidth > el.clientWidth + 1)
      problems.push(`${name(el)}: content ${el.scrollWidth}px wide in a ${el.clientWidth}px box (cut or scrolled)`);
    if (r.right > area.right + 1) problems.push(`${name(el)}: right edge ${r.right.toFixed(0)} past the output `
                                                + `area's ${area.right.toFixed(0)}`);
    if (r.left < area.left - 1) problems.push(`${name(el)}: left edge ${r.left.toFixed(0)} before the output area's`);
  }
  const labels = [...chat.querySelectorAll('.gte-gauge [class^="gte-gauge-label-"]')];
  if (labels.length !== 4) problems.push(`gauge legend has ${labels.length} labels, not 4`);
  const tops = new Set(labels.map(l => Math.round(l.getBoundingClientRect().top)));
  if (tops.size > 1) problems.push(`gauge legend wraps onto ${tops.size} lines: `
                                   + labels.map(l => l.innerText).join(' | '));
  for (const l of labels) if (l.getClientRects().length > 1) problems.push(`gauge label "${l.innerText}" breaks`);
  return problems;
}
"""

# The log's state: how many lines, whether it scrolls, whether its count line and scrollbar show, and whether the
# oldest line can be scrolled into view (then the view goes back to the newest line).
_LOG_STATE = """
(sel) => {
  const chat = document.querySelector(sel);
  const scroll = chat.querySelector('.gte-log-scroll');
  const count = chat.querySelector('.gte-log-count');
  const lines = scroll.querySelectorAll('.gte-msg');
  const state = {lines: lines.length, overflowY: getComputedStyle(scroll).overflowY,
                 scrolls: scroll.scrollHeight > scroll.clientHeight + 1,
                 scrollbar: scroll.offsetWidth - scroll.clientWidth - 2 > 0,
                 count: count ? count.innerText : null,
                 countShown: !!count && count.getBoundingClientRect().height > 0};
  const newestBefore = lines.length && lines[lines.length - 1].getBoundingClientRect().bottom
                       <= scroll.getBoundingClientRect().bottom + 1;
  scroll.scrollTop = -scroll.scrollHeight;  // column-reverse: scrolling up is negative
  const box = scroll.getBoundingClientRect();
  state.oldestReachable = lines.length > 0 && lines[0].getBoundingClientRect().top >= box.top - 1;
  scroll.scrollTop = 0;
  state.newestShown = !!newestBefore;
  return state;
}
"""


def _check_layout(page, stage: str) -> list[str]:
    """What of the widget is clipped or hidden at this point (empty: nothing); screenshots of it as `stage`."""
    chat = page.locator(CHAT)
    chat.scroll_into_view_if_needed()
    page.wait_for_timeout(300)  # let the layout settle after a resize or a new message
    problems = page.evaluate(_LAYOUT_PROBLEMS, CHAT)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{stage}_page.png"))
    # The notebook scrolls inside the page, so an output taller than the viewport is cut off in an element
    # screenshot: make the window tall enough for the whole output for that picture, then put it back.
    area = chat.locator(
        "xpath=ancestor::div[contains(concat(' ', normalize-space(@class), ' '), ' jp-OutputArea-output ')][1]"
    )
    size = page.viewport_size
    tall = max(size["height"], int(area.bounding_box()["height"]) + 300)
    page.set_viewport_size({"width": size["width"], "height": tall})
    page.wait_for_timeout(300)
    area.scroll_into_view_if_needed()
    area.screenshot(path=str(SHOTS / f"{stage}_widget.png"))
    page.set_viewport_size(size)
    page.wait_for_timeout(300)
    return problems


def _check_log(page, messages: int) -> list[str]:
    """What is wrong with the log holding `messages` lines: it must scroll with a visible scrollbar and count line,
    and reach its oldest line."""
    state = page.evaluate(_LOG_STATE, CHAT)
    count = state["count"] or ""
    checks = {
        f"holds {messages} lines": state["lines"] == messages,
        "scrolls": state["scrolls"] and state["overflowY"] in ("scroll", "auto"),
        "shows a scrollbar": state["scrollbar"],
        f"shows the count '{messages} messages'": state["countShown"] and f"{messages} messages" in count,
        "can be scrolled back to its oldest line": state["oldestReachable"],
        "shows its newest line": state["newestShown"],
    }
    return [f"the log fails '{what}': {state}" for what, ok in checks.items() if not ok]


def _recalled_through_retrieval(page, chat, replies_before: int) -> None:
    """Issue 23: the turn-1 fact the summary no longer holds comes back, for a question in other words, through the
    retrieved panel (labelled [fact] or [episode]); every memory sent is at or above the floor the panel states, and
    its counts (ranked, above the floor, sent) agree. Then a screenshot of each panel."""
    summary = chat.locator(".gte-summary-text").inner_text()  # the summary itself, not its "lost" list
    assert RECALLED not in summary, f"the summary still holds {RECALLED!r}, so retrieval proves nothing: {summary}"
    _chat(page, PARAPHRASE, replies_before=replies_before)
    reply = chat.locator(".gte-log .gte-msg-assistant").nth(replies_before).inner_text()
    assert RECALLED in reply and not declines(reply), reply
    panel = chat.locator(".gte-retrieved")
    text = panel.inner_text()
    items = panel.locator(".gte-retrieved-body > ul > li").all_inner_texts()  # sent, not the stored list
    assert text.startswith("Retrieved for the last turn"), text
    assert any(RECALLED in item and re.match(r"\[(fact|episode)\]", item) for item in items), items
    floor = re.search(r"relevance floor: similarity (-?[\d.]+)", text)
    sims = [float(m) for item in items for m in re.findall(r"similarity (-?[\d.]+)", item)]
    assert floor and sims and min(sims) >= float(floor[1]), (text, sims)
    counts = re.search(r"(\d+) ranked, (\d+) at or above the floor [-\d.]+, (\d+) sent in the last request", text)
    assert counts and len(items) == int(counts[3]) <= int(counts[2]) <= int(counts[1]), text
    assert re.search(r"\d+ stored facts \+ \d+ stored turns", text), text
    SHOTS.mkdir(parents=True, exist_ok=True)
    for name in PANELS:
        part = chat.locator(f".gte-{name}")
        part.scroll_into_view_if_needed()
        part.screenshot(path=str(SHOTS / f"panel_{name}.png"))


def test_chat_widget_in_jupyterlab(tmp_path):
    _require_chromium()
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(SHOTS, ignore_errors=True)  # the set on disk is always this run's
    root = tmp_path / "root"
    root.mkdir()
    notebook = _notebook_under_test(root)
    port = _free_port()
    lab = _start_lab(tmp_path, root, port)
    page = None
    layout: dict[str, list[str]] = {}  # stage -> what is clipped or hidden; asserted empty at the end
    try:
        _wait_for_server(lab, port, tmp_path / "jupyterlab.log")
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                str(tmp_path / "chromium-profile"),
                executable_path=str(CHROMIUM),
                headless=True,
                args=CHROMIUM_FLAGS,
                viewport={"width": 1500, "height": 1000},
                # playwright hides scrollbars in headless mode; show them as a person sees them (the log's one
                # is checked, and it takes width from every scrolled panel)
                ignore_default_args=["--hide-scrollbars"],
            )
            try:
                page = context.pages[0] if context.pages else context.new_page()
                page.goto(f"http://127.0.0.1:{port}/lab/tree/{notebook.name}", timeout=30_000)
                # The toolbar says "idle" before the kernel exists; the status bar names the kernel once it does.
                page.wait_for_function(
                    f"() => (document.querySelector('#jp-main-statusbar') || {{}}).innerText"
                    f"?.includes({KERNEL_IDLE!r})",
                    timeout=30_000,
                )
                _run_all(page)
                try:
                    # every cell runs first (notebook 07 measures all strategies before the reader's chat)
                    page.wait_for_selector(f"{CHAT} .gte-input input", timeout=240_000)
                except Exception as err:
                    raise AssertionError(
                        f"the ChatWidget did not render (no {CHAT} in the DOM); notebook outputs: {_outputs_text(page)}"
                    ) from err
                chat = page.locator(CHAT)
                chat.scroll_into_view_if_needed()
                cells = page.locator(".jp-Notebook .jp-Cell").count()
                summary_before = chat.locator(".gte-summary").inner_text()
                window_before = chat.locator(".gte-window").inner_text()
                assert chat.locator(".gte-msg-user").count() == 0
                assert "?" not in chat.locator(".gte-gauge").inner_text(), chat.locator(".gte-gauge").inner_text()
                layout["01_before_first_message"] = _check_layout(page, "01_before_first_message")

                for i, text in enumerate(MESSAGES):
                    _chat(page, text, replies_before=i)

                log = chat.locator(".gte-log")
                assert log.locator(".gte-msg-error").count() == 0, log.inner_text()
                users = log.locator(".gte-msg-user").all_inner_texts()
                assert len(users) == 2 and all(m in u for m, u in zip(MESSAGES, users)), users
                assert log.locator(".gte-msg-assistant").count() == 2, log.inner_text()
                assert page.locator(".jp-Notebook .jp-Cell").count() == cells, "typing triggered notebook shortcuts"
                summary_after = chat.locator(".gte-summary").inner_text()
                window_after = chat.locator(".gte-window").inner_text()
                assert summary_after != summary_before and "Maya" in summary_after, summary_after
                assert window_after != window_before and MESSAGES[1] in window_after, window_after
                assert "$" in chat.locator(".gte-cost").inner_text()
                assert chat.locator(".gte-gauge .gte-gauge-window").count() == 1
                layout["02_after_two_turns"] = _check_layout(page, "02_after_two_turns")
                # Enter in the text box sends too
                _chat(page, "What is my name, and where do I live?", replies_before=2, enter=True)
                assert "What is my name, and where do I live?" in log.locator(".gte-msg-user").nth(2).inner_text()
                assert "Maya" in log.locator(".gte-msg-assistant").nth(2).inner_text()
                assert chat.locator(".gte-input input").input_value() == ""
                # issue 12: what the user said in their own words is read back from the request
                for n, (text, expected) in enumerate(EXCHANGES, start=3):
                    _chat(page, text, replies_before=n)
                    if expected:
                        reply = log.locator(".gte-msg-assistant").nth(n).inner_text()
                        assert expected.lower() in reply.lower() and not declines(reply), (text, reply)
                assert log.locator(".gte-msg-error").count() == 0, log.inner_text()
                assert chat.locator(".gte-retrieved li").count() >= 3, chat.locator(".gte-retrieved").inner_text()
                turns = 3 + len(EXCHANGES)
                _recalled_through_retrieval(page, chat, turns)
                turns += 1
                layout["03_retrieved_panel_filled"] = _check_layout(page, "03_retrieved_panel_filled") + _check_log(
                    page, 2 * turns
                )
                for n, text in enumerate(LONG_MESSAGES, start=turns):
                    _chat(page, text, replies_before=n)
                turns += len(LONG_MESSAGES)
                assert log.locator(".gte-msg-error").count() == 0, log.inner_text()
                layout["04_long_messages"] = _check_layout(page, "04_long_messages") + _check_log(page, 2 * turns)
                for name, size in VIEWPORTS.items():
                    page.set_viewport_size(size)
                    stage = f"05_{name}_{size['width']}px"
                    layout[stage] = _check_layout(page, stage) + _check_log(page, 2 * turns)
                assert len(list(SHOTS.glob("*.png"))) == 2 * (4 + len(VIEWPORTS)) + len(PANELS), sorted(SHOTS.iterdir())
                assert not any(layout.values()), (
                    f"the widget is clipped or hides something (see {SHOTS}): "
                    + "; ".join(f"{stage}: {problems}" for stage, problems in layout.items() if problems)
                )
            except BaseException:
                if page is not None:
                    page.screenshot(path=str(ARTIFACTS / "browser_widget_failure.png"))
                raise
            finally:
                context.close()
    finally:
        _stop(lab)
