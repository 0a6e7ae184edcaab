"""Issue 41, the terminal chat's low items: escape codes from stored text never reach the terminal, one person is
one user (`alice\\u200b` is refused, fullwidth `ａｌｉｃｅ` is `alice`), a huge --session-file is refused by its size
before it is read, and a bare `\\r` does not split a line into two turns."""

from __future__ import annotations

import io
import json
import os
import sys
import uuid

import pytest
from test_chat_cli_errors import assert_usage_error, run_main

from helpers.tools import chat
from helpers.tools.cli_checks import terminal_safe

ESCAPES = "\x1b]0;owned\x07\x1b[2J\x9b31m"


def test_terminal_safe_writes_out_every_control_character_but_line_breaks():
    assert terminal_safe(f"a{ESCAPES}b\n\tc") == "a\\u001b]0;owned\\u0007\\u001b[2J\\u009b31mb\n\tc"
    json.loads(terminal_safe(json.dumps({"t": "\x9b\x7f"}, ensure_ascii=False)))  # still JSON


def test_escape_codes_in_stored_text_never_reach_the_terminal(tmp_path):
    env = {"GTE_DB_NAME": f"esc_{uuid.uuid4().hex[:10]}", "GTE_DATA_DIR": os.environ["GTE_DATA_DIR"]}
    argv = ["--stage", "bounded", "--session-file", str(tmp_path / ".session_id")]
    transcript = tmp_path / "t.jsonl"
    rows = [
        {"role": "user", "content": f"My name is Ana{ESCAPES} and I like teal."},
        {"role": "assistant", "content": f"Hi Ana{ESCAPES}"},
    ]
    transcript.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    code, out, err = run_main([*argv, "--import", str(transcript)], env)
    assert code == 0, err
    code, out, err = run_main([*argv, "--show-state"], env)
    assert code == 0 and "owned" in out  # the stored text is shown ...
    assert not any(c in out + err for c in "\x1b\x07\x9b")  # ... with its control characters written out
    code, out, err = run_main(argv, env, stdin=f"What is my name{ESCAPES}?\nquit\n".encode())
    assert code == 0, err
    assert not any(c in out + err for c in "\x1b\x07\x9b")


@pytest.mark.parametrize("user", ["alice\u200b", "al\u2060ice", "\u3164alice", "alice\ufe0f"])
def test_a_user_id_with_an_invisible_character_is_refused(user, tmp_path):
    code, _, err = run_main(["--stage", "bounded", "--user", user, "--session-file", str(tmp_path / "s")], stdin=b"")
    assert_usage_error(code, err, "--user")
    assert "invisible" in err
    code, _, err = run_main(["--forget-user", user])
    assert_usage_error(code, err, "--forget-user")


def test_a_fullwidth_user_id_is_the_same_user(monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(chat, "make_memory", lambda args, settings, client: seen.append(args.user) or 1 / 0)
    run_main(["--stage", "bounded", "--user", "ａｌｉｃｅ", "--session-file", str(tmp_path / "s")], stdin=b"")
    assert seen == ["alice"]


def test_a_huge_session_file_is_refused_by_its_size_before_reading(tmp_path, monkeypatch):
    huge = tmp_path / "huge"
    with open(huge, "wb") as f:
        f.truncate(1 << 30)  # 1 GiB, sparse: costs no disk
    read = []
    real = type(huge).read_text
    monkeypatch.setattr(type(huge), "read_text", lambda self, *a, **k: read.append(self) or real(self, *a, **k))
    code, _, err = run_main(["--stage", "bounded", "--session-file", str(huge)], stdin=b"")
    assert_usage_error(code, err, "--session-file")
    assert "1,073,741,824 bytes" in err and huge not in read


class _Stdin:
    def __init__(self, data: bytes):
        self.buffer = io.BytesIO(data)


def test_a_bare_carriage_return_does_not_end_a_line(monkeypatch):
    monkeypatch.setattr(sys, "stdin", _Stdin(b"one\rtwo\r\nthree\nfour\r\n"))
    assert list(chat._stdin_lines()) == ["one\rtwo", "three", "four"]
