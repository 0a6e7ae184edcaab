"""Notebook kernels forked from a zygote that has already imported what every kernel imports (tests/_kernel_zygote.py).

conftest.py puts `start_new_kernel` below in place of nbval's: the same KernelManager and client, the same wait for
the kernel's first reply, but its provisioner asks this worker's zygote to fork the kernel instead of starting
`python -m ipykernel_launcher` from nothing. jupyter_client drives the forked kernel as it drives any local one
(interrupt and kill signal its process group; shutdown waits for it to end), through `ForkedProcess`, which stands
for the Popen a local kernel has. Where the zygote is switched off (GTE_FORKED_KERNELS=0), not running, or the kernel
is another interpreter's, the kernel is started the usual way; a zygote that fails says so in a warning.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path

from jupyter_client.manager import KernelManager
from jupyter_client.provisioning import LocalProvisioner

SWITCH = "GTE_FORKED_KERNELS"
ZYGOTE_SCRIPT = Path(__file__).with_name("_kernel_zygote.py")


def enabled() -> bool:
    return os.environ.get(SWITCH, "1") != "0" and hasattr(os, "fork") and hasattr(socket, "AF_UNIX")


class Zygote:
    """This process's zygote: started once (in the background, at collection), asked to fork, stopped at the end."""

    def __init__(self, preload: tuple[str, ...] | None = None) -> None:
        self.preload = preload  # None: the zygote's PRELOAD
        self.process: subprocess.Popen | None = None
        self.dir: str | None = None
        self.is_ready = self.warned = False

    @property
    def socket_path(self) -> str:
        return os.path.join(self.dir, "zygote.sock")

    def start(self) -> None:
        if self.process is None:
            self.dir = tempfile.mkdtemp(prefix="gte-zygote-")
            self.process = subprocess.Popen(
                [sys.executable, str(ZYGOTE_SCRIPT), self.socket_path]
                + ([] if self.preload is None else [",".join(self.preload)]),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )

    def ready(self, timeout: float = 60.0) -> bool:
        """Wait (once) for the zygote's "ready" line: False, with a warning, when it died or never imported."""
        if self.process is None:
            return False
        if not self.is_ready and self.process.poll() is None:
            readable, _, _ = select.select([self.process.stdout], [], [], timeout)
            self.is_ready = bool(readable) and self.process.stdout.readline().strip() == b"ready"
        serving = self.is_ready and self.process.poll() is None
        if not serving and not self.warned:
            self.warned = True
            status = self.process.poll()
            why = f"it ended with status {status}" if status is not None else f"not ready after {timeout:.0f} s"
            warnings.warn(f"the kernel zygote is not serving ({why}): kernels start the usual way", stacklevel=2)
        return serving

    def fork(self, argv: list[str], cwd: str, env: dict[str, str]) -> int:
        """The pid of a new kernel forked for this command line, directory and environment."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(30)
            conn.connect(self.socket_path)
            conn.sendall((json.dumps({"argv": argv, "cwd": cwd, "env": env}) + "\n").encode())
            reply = json.loads(conn.makefile("r").readline() or "{}")
        if "pid" not in reply:
            raise OSError(f"the kernel zygote did not fork: {reply.get('error', 'no reply')}")
        return int(reply["pid"])

    def stop(self) -> None:
        if self.process is not None:
            if not self.is_ready:
                self.process.kill()  # still importing (a run that ran no notebook): nothing to end cleanly
            self.process.stdin.close()  # the zygote ends at end of input; its kernels end with it
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process.stdout.close()
            self.process = None
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
        self.is_ready = self.warned = False


ZYGOTE = Zygote()


class ForkedProcess:
    """What jupyter_client asks of a kernel's Popen, for a kernel that is the zygote's child, not ours: its state is
    read from a pidfd (a pid number could be reused), or from `kill(pid, 0)` where pidfds are missing."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        try:
            self._pidfd: int | None = os.pidfd_open(pid)
        except ProcessLookupError:
            self._pidfd, self.returncode = None, 0  # already ended (and reaped by the zygote)
        except (AttributeError, OSError):
            self._pidfd = None

    def poll(self) -> int | None:
        if self.returncode is None:
            if self._pidfd is not None:
                ended = bool(select.select([self._pidfd], [], [], 0)[0])
            else:
                try:
                    os.kill(self.pid, 0)
                    ended = False
                except ProcessLookupError:
                    ended = True
            if ended:
                self.returncode = 0  # reaped by the zygote: the status is not ours to read
                if self._pidfd is not None:
                    os.close(self._pidfd)
                    self._pidfd = None
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout)
            time.sleep(0.02)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, signum)
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


def forkable(cmd: list[str]) -> bool:
    """An ipykernel of this interpreter: the only kernel the zygote can become."""
    exe = shutil.which(cmd[0]) if cmd else None
    return (
        exe is not None
        and os.path.realpath(exe) == os.path.realpath(sys.executable)
        and cmd[1:3] == ["-m", "ipykernel_launcher"]
    )


class ForkedProvisioner(LocalProvisioner):
    """LocalProvisioner, with the kernel forked by the zygote instead of started by Popen."""

    async def launch_kernel(self, cmd: list[str], **kwargs):
        if not (enabled() and forkable(cmd) and ZYGOTE.ready()):
            return await super().launch_kernel(cmd, **kwargs)
        env = dict(kwargs.get("env") or os.environ)
        cwd = str(kwargs.get("cwd") or os.getcwd())
        try:
            pid = ZYGOTE.fork(cmd, cwd, env)
        except OSError as failed:
            warnings.warn(f"kernel zygote: {failed}; starting the kernel the usual way", stacklevel=2)
            return await super().launch_kernel(cmd, **kwargs)
        self.process = ForkedProcess(pid)
        self.pid = self.pgid = pid  # the kernel calls setsid() first: its group is its pid
        self.cwd = cwd
        return self.connection_info


class ForkedKernelManager(KernelManager):
    """A KernelManager whose kernels are launched by ForkedProvisioner (a restart keeps the provisioner it has)."""

    async def _async_pre_start_kernel(self, **kw):
        if self.provisioner is None:
            self.kernel_id = self.kernel_id or kw.pop("kernel_id", str(uuid.uuid4()))
            self.provisioner = ForkedProvisioner(kernel_id=self.kernel_id, kernel_spec=self.kernel_spec, parent=self)
        return await super()._async_pre_start_kernel(**kw)


def start_new_kernel(startup_timeout: float = 60, kernel_name: str = "python", **kwargs):
    """nbval.kernel.start_new_kernel, with a ForkedKernelManager (see the module's docstring)."""
    from nbval.kernel import NbvalKernelspecManager

    km = ForkedKernelManager(kernel_name=kernel_name, kernel_spec_manager=NbvalKernelspecManager())
    km.start_kernel(**kwargs)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=startup_timeout)
    except RuntimeError:
        kc.stop_channels()
        km.shutdown_kernel()
        raise
    return km, kc
