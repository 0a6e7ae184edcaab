"""Test-session setup shared by tests/ and notebooks/: offline by default, one throwaway data dir and local server."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import uuid
import warnings
from pathlib import Path

import pytest

_SAVED_ENV = "_gte_saved_env"
_OWNED_DIR = "_gte_owned_data_dir"
_OWNED_CACHES = "_gte_owned_caches"
_STOP_SERVER = "_gte_stop_server_in"
_SERVERS_AT_START = "_gte_servers_at_start"


def database_servers() -> dict[int, list[str]]:
    """Every local database server process on this machine (pid -> command line), found via /proc."""
    from helpers.db.processes import cmdline
    from helpers.db.server import SERVER_BINARY

    proc = Path("/proc")
    found = {}
    for entry in proc.iterdir() if proc.is_dir() else ():
        args = cmdline(int(entry.name)) if entry.name.isdigit() else None
        if args and any(SERVER_BINARY in a for a in args):
            found[int(entry.name)] = args
    return found


def leftover_servers(before: set[int], roots: list[str | os.PathLike]) -> dict[int, list[str]]:
    """Servers started since `before` whose storage lies under one of `roots` (this run's temp dirs): the tests'
    own. Servers of other runs on the machine (another checkout's tests, a developer's lab) are not counted."""
    roots = [str(Path(r).resolve()) for r in roots if r]

    def under(arg: str) -> bool:
        return any(arg == root or arg.startswith(root + os.sep) for root in roots)

    return {pid: args for pid, args in database_servers().items() if pid not in before and any(map(under, args))}


def retrying(start_kernel):
    """nbval's `start_new_kernel`, started once more when the kernel dies before its first reply. It happened once
    in dozens of runs, at a run's first kernel, with the kernel's stderr sent to /dev/null by nbval (so its reason is
    unknown); a notebook whose kernel never started is not a failing lesson. A second death fails as before."""

    def start_with_one_retry(*args, **kwargs):
        try:
            return start_kernel(*args, **kwargs)
        except RuntimeError as first:
            warnings.warn(f"a notebook's kernel died at start ({first}): starting it once more", stacklevel=2)
            return start_kernel(*args, **kwargs)

    start_with_one_retry.retries = start_kernel
    return start_with_one_retry


def pytest_configure(config: pytest.Config) -> None:
    """Point GTE_DATA_DIR at a temp dir (unless set), go offline unless GTE_LIVE_TESTS=1, plot headless, and share two
    caches on disk between every process of the run, in temp dirs removed at the end: embeddings
    (helpers.retrieval.minilm.DISK_CACHE_ENV) and the offline model's chat replies (helpers.offline.memo.REPLY_CACHE_ENV).
    The notebooks' kernels, the terminal chats and the workers embed the same texts and replay the same scripts; each
    batch and each reply is worked out once per run, by the code under test, and read back by the others."""
    from helpers.db.server import local_server_status
    from helpers.offline.memo import REPLY_CACHE_ENV
    from helpers.retrieval.minilm import DISK_CACHE_ENV

    names = ("GTE_DATA_DIR", "ANTHROPIC_API_KEY", "MPLBACKEND", "EMBEDDER", DISK_CACHE_ENV, REPLY_CACHE_ENV)
    setattr(config, _SAVED_ENV, {name: os.environ.get(name) for name in names})
    owned = []
    for name, prefix in ((DISK_CACHE_ENV, "gte-embeddings-"), (REPLY_CACHE_ENV, "gte-replies-")):
        if not os.environ.get(name, "").strip():  # xdist workers inherit the controller's
            os.environ[name] = tempfile.mkdtemp(prefix=prefix)
            owned.append(os.environ[name])
    setattr(config, _OWNED_CACHES, owned)
    if not os.environ.get("GTE_DATA_DIR", "").strip():
        data_dir = tempfile.mkdtemp(prefix="gte-tests-")
        os.environ["GTE_DATA_DIR"] = data_dir
        setattr(config, _OWNED_DIR, data_dir)
    data_dir = os.environ["GTE_DATA_DIR"]
    # Stop at the end only a server this run started (an env-provided dir may have the developer's running);
    # xdist workers inherit the controller's dir and leave stopping to it.
    if not os.environ.get("PYTEST_XDIST_WORKER") and not local_server_status(data_dir)["running"]:
        setattr(config, _STOP_SERVER, data_dir)
    if os.environ.get("GTE_LIVE_TESTS") != "1":
        # Empty rather than unset: an empty value also overrides a key in .env (load_settings treats it as unset).
        os.environ["ANTHROPIC_API_KEY"] = ""
        os.environ["EMBEDDER"] = "local"  # never send test text to a hosted embedder (VOYAGE_API_KEY)
    os.environ["MPLBACKEND"] = "Agg"
    if config.pluginmanager.has_plugin("nbval"):
        import nbval.kernel

        from tests import _forked_kernels

        if not hasattr(nbval.kernel.start_new_kernel, "retries"):  # RunningKernel calls the module's function
            nbval.kernel.start_new_kernel = retrying(_forked_kernels.start_new_kernel)
    setattr(config, _SERVERS_AT_START, set(database_servers()))


SOLUTIONS = Path(__file__).resolve().parent / "notebooks" / "solutions"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The solution sources (notebooks/solutions/) run in the full set only: the fast set runs the notebooks a learner
    opens, every exercise left blank (their checks fall back to the package), which proves the lessons still run."""
    for item in items:
        if SOLUTIONS in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.slow)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start this process's kernel zygote (tests/_kernel_zygote.py) in the background when it will run a notebook:
    its imports (3 s) overlap the first tests; each notebook's kernel is then forked from it, already imported."""
    from tests import _forked_kernels

    notebooks = [item for item in session.items if str(item.path).endswith(".ipynb")]
    runs = not session.config.option.collectonly and session.config.pluginmanager.has_plugin("nbval")
    if notebooks and runs and _forked_kernels.enabled():
        _forked_kernels.ZYGOTE.start()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Stop the local server this run started; then FAIL the run if a server a test started is still running."""
    config = session.config
    if "tests._forked_kernels" in sys.modules:
        sys.modules["tests._forked_kernels"].ZYGOTE.stop()
    data_dir = getattr(config, _STOP_SERVER, None)
    if data_dir:
        from helpers.db.server import stop_local_server

        stop_local_server(data_dir)
        setattr(config, _STOP_SERVER, None)
    if os.environ.get("PYTEST_XDIST_WORKER") or not hasattr(config, _SERVERS_AT_START):
        return
    # this run's own dirs: its data dir and pytest's base temp dir (tmp_path of every test lies under it)
    roots = [getattr(config, _OWNED_DIR, None), os.environ.get("GTE_DATA_DIR"), config._tmp_path_factory.getbasetemp()]
    left = leftover_servers(getattr(config, _SERVERS_AT_START), roots)
    if left:
        from helpers.db.processes import port_of, terminate

        for pid in left:
            terminate(pid, timeout=5.0, port=port_of(pid))
        lines = "\n".join(f"  pid {pid}: {' '.join(args)}" for pid, args in left.items())
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        message = (
            f"FAILED: {len(left)} local database server(s) started by the tests were still running at the end "
            f"(now stopped); a test that starts a server must stop it:\n{lines}"
        )
        if reporter:
            reporter.write_line("\n" + message, red=True, bold=True)
        else:
            print(message)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the local server this run started (if the session did not get to), remove the temp data dir, restore
    the environment."""
    data_dir = getattr(config, _STOP_SERVER, None)
    if data_dir:
        from helpers.db.server import stop_local_server

        stop_local_server(data_dir)
    for owned in (getattr(config, _OWNED_DIR, None), *getattr(config, _OWNED_CACHES, ())):
        if owned:
            shutil.rmtree(owned, ignore_errors=True)
    for name, value in getattr(config, _SAVED_ENV, {}).items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture
def settings():
    """Settings as the helpers would load them in this test session (temp data dir, offline)."""
    from helpers.config import load_settings

    return load_settings()


@pytest.fixture(scope="session")
def local_store_session():
    """A Store on the real local SecantusDB server of this test session (ignores MONGODB_URI)."""
    from helpers.config import load_settings
    from helpers.db.store import open_store

    store = open_store(load_settings().with_(mongodb_uri=None), fallback=False)
    yield store
    store.close()


@pytest.fixture
def local_store(local_store_session):
    """The session's local server, with a fresh database for this test (dropped afterwards)."""
    store = local_store_session.with_db(f"test_{uuid.uuid4().hex[:12]}")
    yield store
    store.client.drop_database(store.db.name)


@pytest.fixture
def mock_store():
    """A fresh in-memory mongomock Store (no server, nothing persists)."""
    from helpers.db.store import mongomock_store

    return mongomock_store(db_name=f"test_{uuid.uuid4().hex[:12]}")
