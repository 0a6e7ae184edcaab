"""A process token names one process: alive while it runs, not once it has ended, even before its parent reaps it
(kill -9 leaves a zombie until then; its entries must not wait for a lease)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys

import pytest

from helpers.db.processes import process_token, token_alive


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_killed_process_not_yet_reaped_is_not_alive():
    child = subprocess.Popen(["sleep", "30"])
    try:
        started = open(f"/proc/{child.pid}/stat").read().rsplit(")", 1)[-1].split()[19]
        token = f"{socket.gethostname()}:{child.pid}:{started}"
        assert token_alive(token) is True
        assert token_alive(f"{socket.gethostname()}:{child.pid}:{int(started) + 1}") is False  # the pid, reused
        child.send_signal(signal.SIGKILL)
        for _ in range(200):  # until the kernel has ended it (a zombie: its parent, this test, has not waited)
            if open(f"/proc/{child.pid}/stat").read().rsplit(")", 1)[-1].split()[0] == "Z":
                break
            subprocess.run(["sleep", "0.01"])
        assert token_alive(token) is False
    finally:
        child.kill()
        child.wait()
    assert token_alive(token) is False
    assert token_alive(process_token()) is True
    assert token_alive("another-host:1:1") is None
