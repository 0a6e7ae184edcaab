"""The notebooks' kernels forked from a zygote (tests/_forked_kernels.py, tests/_kernel_zygote.py): each is a process
of its own, in its notebook's directory, with the environment jupyter_client built, a fresh namespace and nothing of
the package under test imported; jupyter_client interrupts, shuts down and outlives it as it does a Popen kernel;
and where the zygote cannot serve, the kernel is started the usual way."""

from __future__ import annotations

import os
import subprocess
import time
import warnings

import pytest

from tests import _forked_kernels
from tests._forked_kernels import ForkedKernelManager, ForkedProcess, Zygote

PROBE = """
import os, random, sys
print(repr((os.getcwd(), os.getpid(), os.getppid(), os.getpgid(0), os.environ.get("GTE_PROBE"),
            "helpers" in sys.modules, "anthropic" in sys.modules, random.random(), sorted(k for k in dir() if k[0] != "_"))))
"""


@pytest.fixture(autouse=True)
def switched_on(monkeypatch):
    """These tests are of the forked start itself: on, whatever GTE_FORKED_KERNELS says for the run."""
    monkeypatch.delenv(_forked_kernels.SWITCH, raising=False)


def serving(zygote: Zygote):
    """`zygote` put in place of the run's, then stopped."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_forked_kernels, "ZYGOTE", zygote)
        try:
            yield zygote
        finally:
            zygote.stop()


@pytest.fixture(scope="module")
def zygote():
    """The run's zygote where this process has one (it runs notebooks), else one of the module's own."""
    if _forked_kernels.ZYGOTE.process is not None:
        assert _forked_kernels.ZYGOTE.ready(), "the run's zygote is not serving"
        yield _forked_kernels.ZYGOTE
        return
    own = Zygote()
    own.start()
    assert own.ready(), "the zygote did not print 'ready'"
    yield from serving(own)


@pytest.fixture
def bare_zygote():
    """A zygote of this test's own that imports nothing first (ready at once): for the tests that end it."""
    own = Zygote(preload=())
    own.start()
    yield from serving(own)


def start(cwd, **env):
    km = ForkedKernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(cwd), env={**os.environ, **env})
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    return km, kc


def run(kc, code, timeout=30):
    out = []
    reply = kc.execute_interactive(
        code, timeout=timeout, output_hook=lambda m: out.append(m["content"].get("text", ""))
    )
    return reply["content"], "".join(out)


def test_each_kernel_is_a_fresh_process_in_its_notebooks_dir_and_is_interrupted_and_shut_down(zygote, tmp_path):
    seen = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        km, kc = start(tmp_path / name, GTE_PROBE=name)
        try:
            assert isinstance(km.provisioner.process, ForkedProcess), "the kernel was not forked"
            status, out = run(kc, PROBE)
            assert status["status"] == "ok", status
            cwd, pid, ppid, pgid, probe, has_helpers, has_sdk, draw, names = eval(out)
            assert (cwd, probe) == (str(tmp_path / name), name)  # its notebook's dir, the environment it was given
            assert ppid == zygote.process.pid and pgid == pid == km.provisioner.pid  # the zygote's child, own group
            assert has_sdk and not has_helpers  # third-party code imported; the package under test is not
            assert {"In", "Out", "get_ipython", "os", "random", "sys"} <= set(names)  # IPython's namespace
            assert run(kc, "left_behind = 1")[0]["status"] == "ok"
            seen.append((pid, draw, names))
            if name == "a":  # nbval interrupts a cell that runs past its timeout
                kc.execute("import time; time.sleep(60)")
                time.sleep(0.3)
                km.interrupt_kernel()
                reply = kc.get_shell_msg(timeout=10)["content"]
                assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=False)
        assert not km.is_alive()
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # ended and reaped: no zombie left behind
    (pid_a, draw_a, names_a), (pid_b, draw_b, names_b) = seen
    assert pid_a != pid_b and draw_a != draw_b  # each kernel draws its own random state
    assert names_a == names_b and "left_behind" not in names_b  # a fresh namespace: nothing of the kernel before
    assert zygote.process.poll() is None  # the zygote serves the next one


def test_the_zygote_ends_at_end_of_input_and_its_kernels_end_with_it(bare_zygote, tmp_path):
    km, kc = start(tmp_path)
    kc.stop_channels()
    process = km.provisioner.process
    assert isinstance(process, ForkedProcess) and process.poll() is None
    bare_zygote.process.stdin.close()  # what happens when the pytest worker that started it ends
    assert bare_zygote.process.wait(timeout=10) == 0  # it left on its own, not killed
    process.wait(timeout=15)  # the kernel's parent poller (it looks every second) saw its parent go
    km.cleanup_resources()


def test_without_a_serving_zygote_the_kernel_starts_the_usual_way(monkeypatch, zygote, tmp_path):
    assert _forked_kernels.enabled()
    monkeypatch.setenv(_forked_kernels.SWITCH, "0")
    assert not _forked_kernels.enabled()  # switched off: the provisioner starts kernels as LocalProvisioner does
    monkeypatch.delenv(_forked_kernels.SWITCH)
    monkeypatch.setattr(zygote, "fork", lambda *a: (_ for _ in ()).throw(OSError("the kernel zygote did not fork")))
    with pytest.warns(UserWarning, match="did not fork"):
        km, kc = start(tmp_path)
    try:
        assert isinstance(km.provisioner.process, subprocess.Popen)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


@pytest.mark.parametrize(
    "argv, cwd, env",
    [
        (["python", "-c", "pass"], "/", {}),  # not a kernel
        (["python", "-m", "ipykernel_launcher"], "/no/such/dir", {}),
        (["python", "-m", "ipykernel_launcher"], "/", None),
        (["python", "-m", "ipykernel_launcher"], "/", {"A": 1}),
    ],
)
def test_a_bad_request_is_refused_by_name_and_the_zygote_keeps_serving(zygote, argv, cwd, env):
    with pytest.raises(OSError, match="bad request: (argv|cwd|env) must"):
        zygote.fork(argv, cwd, env)
    assert zygote.process.poll() is None


def test_a_process_that_already_ended_reads_as_ended():
    done = subprocess.Popen(["true"])
    done.wait()
    process = ForkedProcess(done.pid)
    assert process.poll() == 0 and process.wait(timeout=1) == 0
    process.kill()  # nothing to signal: no error
    assert not _forked_kernels.forkable(["/bin/sh", "-m", "ipykernel_launcher"])


def test_a_zygote_that_died_is_reported_once_and_not_used():
    dead = Zygote()
    dead.start()
    dead.process.kill()
    dead.process.wait()
    try:
        with pytest.warns(UserWarning, match="not serving .*status -9"):
            assert not dead.ready()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # warned once
            assert not dead.ready()
    finally:
        dead.stop()
    assert dead.dir is None and dead.process is None
