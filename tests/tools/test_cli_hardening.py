"""Issue 31, item 7: a `.env` FIFO no longer hangs every command, one huge stdin line is read past in bounded memory,
`--forget-user` on an unwritable data dir is one line, a MONGODB_URI that is only a password is never echoed, and no
message advises deleting a file the project did not create."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import threading
import tracemalloc
import uuid
from pathlib import Path

import pytest
from test_chat_cli_errors import ROOT, assert_usage_error, run_main

from helpers import config
from helpers.config import ConfigError, load_settings
from helpers.db.store import StoreUnavailable, open_store
from helpers.memory.history import MAX_USER_CHARS
from helpers.tools import chat


def _within(seconds: float, call) -> tuple[bool, object]:
    """Run `call` in a thread; (finished in time, its result or exception)."""
    box: list = []

    def run():
        try:
            box.append(call())
        except BaseException as err:  # noqa: BLE001 - handed back to the test
            box.append(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    return (not thread.is_alive()), (box[0] if box else None)


def _release(fifo: Path) -> None:
    """Open the FIFO for writing once, so a reader still blocked in open() (today's code) gets EOF and ends."""
    with contextlib.suppress(OSError):
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


def test_a_dotenv_that_is_a_fifo_is_refused_at_once(tmp_path, monkeypatch):
    fifo = tmp_path / ".env"
    os.mkfifo(fifo)
    try:
        done, result = _within(5, lambda: load_settings(dotenv_path=fifo))
        assert done, "load_settings blocked on a .env FIFO"
        assert isinstance(result, ConfigError) and "not a regular file" in str(result) and str(fifo) in str(result)
        monkeypatch.setattr(config, "project_root", lambda: tmp_path)
        done, result = _within(10, lambda: run_main(["--stage", "history"], stdin=b"hello\n"))
        assert done, "the chat blocked on a .env FIFO"
        code, out, err = result
        assert_usage_error(code, err, ".env")
    finally:
        _release(fifo)


def test_a_huge_dotenv_is_refused(tmp_path):
    big = tmp_path / ".env"
    big.write_text("X=" + "y" * 1_200_000 + "\n")
    with pytest.raises(ConfigError, match="a .env holds a few settings"):
        load_settings(dotenv_path=big)


class _Stdin:
    """sys.stdin over bytes, with `.buffer` as the real one has."""

    def __init__(self, data: bytes):
        self.buffer = io.BytesIO(data)


def test_one_huge_stdin_line_is_read_past_in_bounded_memory(monkeypatch):
    size = 20_000_000  # 20 MB in one line: read whole, it costs more than 60 MB (bytes, text, the stripped copy)
    monkeypatch.setattr(sys, "stdin", _Stdin(b"a" * size + b"\nhello\n" + b"b" * (MAX_USER_CHARS + 1) + b"\n"))
    tracemalloc.start()
    try:
        lines = list(chat._stdin_lines())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert lines[0] is chat.TOO_LONG and lines[1] == "hello"
    assert len(lines) == 3 and len(lines[2]) == MAX_USER_CHARS + 1  # one over the limit: refused by the turn
    assert peak < 8 * MAX_USER_CHARS, f"peak {peak / 1e6:.1f} MB while reading one {size / 1e6:.0f} MB line"


def test_the_chat_says_a_huge_line_was_not_sent_and_goes_on():
    code, out, err = run_main(["--stage", "stateless"], stdin=b"x" * (MAX_USER_CHARS * 3) + b"\nMy name is Ana\nquit\n")
    assert code == 0 and "message too long" in err and "nothing was sent or saved" in err
    assert len(out.strip().splitlines()) == 1  # the next line got its answer


# The chat's own peak: VmHWM, the high-water mark of this process's memory since its exec. (Not ru_maxrss: Linux
# carries the forking process's peak into it, so late in the full run it read 850 MB, the pytest process's peak, not the chat's.)
_MEASURED = (
    "import atexit, runpy, sys\n"
    "def peak():\n"
    "    with open('/proc/self/status') as status:\n"
    "        return next(int(line.split()[1]) for line in status if line.startswith('VmHWM:'))\n"
    "atexit.register(lambda: print(f'peak_kb={peak()}', file=sys.stderr))\n"
    "sys.argv = ['helpers.chat', '--stage', 'stateless']\n"
    "runpy.run_module('helpers.chat', run_name='__main__')\n"
)


@pytest.mark.slow
def test_a_300_mb_line_on_stdin_keeps_the_chat_small():
    """The issue's measurement: one 300 MB line took the chat to ~1 GB before it was refused."""
    if not Path("/proc/self/status").is_file():
        pytest.skip("reads the process's peak memory from /proc (Linux)")
    feeder = subprocess.Popen(
        ["sh", "-c", "head -c 300000000 /dev/zero | tr '\\0' a; printf '\\nhello\\nquit\\n'"], stdout=subprocess.PIPE
    )
    env = {**os.environ, "ANTHROPIC_API_KEY": "", "MONGODB_URI": ""}
    measured = subprocess.Popen(
        [sys.executable, "-c", _MEASURED],
        stdin=feeder.stdout,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=env,
        text=True,
    )
    feeder.stdout.close()
    out, err = measured.communicate(timeout=600)
    feeder.wait(timeout=60)
    assert measured.returncode == 0, err
    assert "message too long" in err and len(out.strip().splitlines()) == 1
    peak_kb = int(err.rsplit("peak_kb=", 1)[1].split()[0])
    assert peak_kb < 300_000, f"{peak_kb / 1000:.0f} MB peak while reading one 300 MB line"


def _unwritable(tmp_path: Path) -> Path:
    if os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        return locked / "data"
    if not Path("/sys/kernel").is_dir():
        pytest.skip("no directory here that root cannot write to")
    return Path("/sys/kernel") / f"gte-test-{uuid.uuid4().hex[:8]}"  # sysfs: mkdir is refused even to root


def test_forget_user_on_an_unwritable_data_dir_is_one_line(tmp_path):
    data = _unwritable(tmp_path)
    code, out, err = run_main(["--forget-user", "bob"], env={"GTE_DATA_DIR": str(data)})
    assert "Traceback" not in err, err
    assert code == 2 and err.startswith("error:") and str(data.parent) in err and "cannot be used" in err
    assert out == ""  # no report of an erasure that did not happen


@pytest.mark.parametrize("uri", ["s3cr3tP4ssw0rd", "  Hunter2Hunter2  ", "s3cr3tP4ssw0rd:27017/app"])
def test_a_mongodb_uri_that_is_only_a_password_is_never_echoed(uri):
    with pytest.raises(StoreUnavailable) as info:
        open_store(load_settings({}).with_(mongodb_uri=uri))
    message = str(info.value)
    secret = uri.strip().split(":")[0]
    assert secret.lower() not in message.lower(), message
    assert "MONGODB_URI" in message and "mongodb://" in message


def test_a_session_file_the_chat_did_not_write_is_never_advised_deleted(tmp_path):
    code, _, err = run_main(
        ["--stage", "bounded", "--session-file", "/etc/passwd"], env={"GTE_DATA_DIR": str(tmp_path)}, stdin=b""
    )
    assert_usage_error(code, err, "/etc/passwd")
    assert "delete" not in err.lower() and "not a session file" in err
