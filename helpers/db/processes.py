"""Plumbing: find, probe and stop OS processes and local ports (used by helpers.db.server); name this process so
another can tell later whether it is still alive (`process_token`, `token_alive`: helpers.memory.remember)."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

__all__ = [
    "pid_running",
    "cmdline",
    "port_of",
    "port_open",
    "free_port",
    "signal_main_thread",
    "terminate",
    "process_token",
    "token_alive",
]

LOCALHOST = "127.0.0.1"


def pid_running(pid: Any) -> bool:
    """True if `pid` is a live process (zombies count as dead)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc (macOS): trust kill(0)
    fields = stat.rsplit(")", 1)[-1].split()
    return not fields or fields[0] not in ("Z", "X")


def cmdline(pid: int) -> list[str] | None:
    """The command line of `pid` from /proc, or None where there is no /proc or no such process."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def port_of(pid: int) -> int | None:
    """The value of `--port N` on the command line of `pid`, or None."""
    args = cmdline(pid) or []
    for flag, value in zip(args, args[1:]):
        if flag == "--port" and value.isdigit():
            return int(value)
    return None


def port_open(port: int, host: str = LOCALHOST) -> bool:
    """A cheap TCP probe, so a dead port fails at once instead of after a driver timeout."""
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def signal_main_thread(pid: int, sig: int) -> bool:
    """Send `sig` to the process's main thread (Linux tgkill); False if that is not possible here."""
    # Python runs signal handlers only in the main thread. A process-directed SIGTERM that the kernel hands
    # to another thread leaves secantusd's main thread parked in Event.wait() for good (seen in ~5-25% of
    # stops), so on Linux we aim the signal at the main thread, whose thread id is the pid.
    if not sys.platform.startswith("linux"):
        return False

    tgkill = getattr(ctypes.CDLL(None, use_errno=True), "tgkill", None)
    if tgkill is None:
        return False
    if tgkill(pid, pid, sig) == 0:
        return True
    if ctypes.get_errno() == errno.ESRCH:
        raise ProcessLookupError(errno.ESRCH, f"no process {pid}")
    return False  # e.g. EPERM: let os.kill raise the usual error


def terminate(pid: int, timeout: float, port: int | None = None, host: str = LOCALHOST) -> None:
    """SIGTERM, wait up to `timeout`, then SIGKILL and wait a little more; `port` wakes a server blocked in accept()."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        try:
            aimed = sig == signal.SIGTERM and signal_main_thread(pid, sig)
            if not aimed:
                os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        resend_at = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            if not pid_running(pid):
                return
            if sig == signal.SIGTERM and not aimed and time.monotonic() > resend_at:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)  # no tgkill: the first signal may have landed on the wrong thread
                resend_at += 5.0
            if port and sig == signal.SIGTERM:
                # On SIGTERM the server joins its accept thread for up to 2 s; a connection wakes the blocked
                # accept() so it sees the stop flag at once (a clean stop then takes ~0.1 s instead of ~2 s).
                with contextlib.suppress(OSError):
                    socket.create_connection((host, port), timeout=0.1).close()
            time.sleep(0.05)


def free_port(host: str = LOCALHOST) -> int:
    """A TCP port free on `host` right now (another program may still take it before we bind)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _started(pid: int) -> str:
    """When `pid` started, in clock ticks since boot (/proc/PID/stat field 22), or "" where there is no /proc: with
    the pid it names one process, even after the pid is reused."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[19]
    except (OSError, IndexError):
        return ""


def process_token() -> str:
    """This process as `host:pid:start`, for records another process may later ask `token_alive` about."""
    return f"{socket.gethostname()}:{os.getpid()}:{_started(os.getpid())}"


def token_alive(token: str) -> bool | None:
    """Whether the process a `process_token` names still runs: True/False on this host, None on another host (or a
    token this function cannot read), where only a lease can tell."""
    host, _, rest = str(token).partition(":")
    pid, _, started = rest.partition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return None
    if not pid_running(int(pid)):
        return False
    return _started(int(pid)) == started if started else True
