"""Shared pieces of the reliability tests (tests/tools/test_reliability_*.py): CLI runners and small fakes."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FILLER = "What should we do near Griffith Park on day {i}, maybe something with a view?"
CHAT = [sys.executable, "-m", "helpers.chat", "--stage", "bounded"]


def cli_env(**extra: str) -> dict:
    """The test session's environment (temp data dir, offline) plus `extra`; no API key, no MONGODB_URI."""
    env = {**os.environ, "ANTHROPIC_API_KEY": "", "MONGODB_URI": "", "PYTHONUNBUFFERED": "1"}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_chat(
    lines: list[str] | bytes, *args: str, env: dict | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    """Run `python -m helpers.chat --stage bounded ARGS` with `lines` on stdin; bytes stdout/stderr."""
    data = lines if isinstance(lines, bytes) else ("\n".join(lines) + "\n").encode("utf-8")
    return subprocess.run(
        [*CHAT, *args], input=data, capture_output=True, timeout=timeout, cwd=ROOT, env=env or cli_env()
    )


class LiveChat:
    """A chat CLI we talk to line by line (stdin open), reading replies as they come."""

    def __init__(self, *args: str, env: dict | None = None):
        self.proc = subprocess.Popen(
            [*CHAT, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=env or cli_env(),
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self.lines: queue.Queue = queue.Queue()
        self.replies: list[str] = []  # every complete stdout line seen so far
        self.stderr = ""
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            if line.endswith("\n"):
                self.replies.append(line.rstrip("\n"))
                self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def send(self, text: str) -> None:
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def reply(self, timeout: float = 60) -> str | None:
        """The next stdout line, or None at EOF."""
        return self.lines.get(timeout=timeout)

    def ask(self, text: str, timeout: float = 60) -> str | None:
        self.send(text)
        return self.reply(timeout)

    def close(self, timeout: float = 60) -> int:
        """Send EOF and wait; returns the exit code (stderr collected in `.stderr`)."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        self.stderr = self.proc.stderr.read()
        return self.proc.wait(timeout=timeout)

    def kill(self) -> None:
        """SIGKILL the process; `.replies` then holds every line it printed before dying."""
        self.proc.kill()
        self.proc.wait(timeout=30)
        self._reader.join(timeout=10)
        try:
            self.proc.stdin.close()
        except OSError:  # the pipe is broken: the reader is dead
            pass


def record_sleeps(monkeypatch) -> list[float]:
    """Make the anthropic SDK's waits between retries instant and observable (only the SDK's `time.sleep`)."""
    import time as real_time
    import types

    import anthropic._base_client as base

    slept: list[float] = []
    fake = types.SimpleNamespace(
        **{name: getattr(real_time, name) for name in dir(real_time) if not name.startswith("__")}
    )
    fake.sleep = slept.append
    monkeypatch.setattr(base, "time", fake)
    return slept


def model_requests(client) -> list[dict]:
    """Bodies of the `/v1/messages` requests the offline transport saw (retries included)."""
    from helpers.llm import offline_transport

    return [body for path, body in offline_transport(client).requests if path.endswith("/v1/messages")]
