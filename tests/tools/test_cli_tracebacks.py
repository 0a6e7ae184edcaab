"""Issue 20, item 5: two tracebacks become one-line messages - a `.env` that is not UTF-8, and a reader that closes
the pipe early (`python -m helpers.chat ... | head`)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from test_chat_cli_errors import ROOT, assert_usage_error, run_main

from helpers import config


def test_a_dotenv_that_is_not_utf8_gets_one_line(tmp_path, monkeypatch):
    (tmp_path / ".env").write_bytes(b"CHAT_MODEL=\xff\xfeclaude\n")
    monkeypatch.setattr(config, "project_root", lambda: tmp_path)
    code, out, err = run_main(["--stage", "history"], stdin=b"hello\n")
    assert_usage_error(code, err, ".env")
    assert "UTF-8" in err and out == ""


@pytest.mark.slow  # a CLI subprocess (seconds): the full set runs it
def test_a_closed_output_pipe_is_one_line_not_a_traceback(tmp_path):
    env = {**os.environ, "ANTHROPIC_API_KEY": "", "MONGODB_URI": ""}
    questions = tmp_path / "questions.txt"
    questions.write_text("".join(f"Question {i}: what is a good hike near Griffith Park?\n" for i in range(40)))
    with open(questions, "rb") as stdin:
        chat = subprocess.Popen(
            [sys.executable, "-m", "helpers.chat", "--stage", "history"],
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=env,
        )
        try:
            head = subprocess.run(["head", "-n", "1"], stdin=chat.stdout, capture_output=True, timeout=120)
            chat.stdout.close()  # only `head` read: once it exited, the chat's next print meets a closed pipe
            err = chat.stderr.read()
            chat.wait(timeout=120)
        finally:
            if chat.poll() is None:
                chat.kill()
                chat.wait()
    err = err.decode()
    assert head.stdout.strip()
    assert "Traceback" not in err, err
    assert chat.returncode == 1 and "output was closed early" in err.splitlines()[-1], err
