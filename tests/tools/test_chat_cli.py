"""`python -m helpers.chat` as a black box: stdin lines in, one reply per line out, no network."""

import os
import subprocess
import sys

import pytest


def run_chat(
    stdin: bytes | str, *args: str, env: dict | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    full_env = {**os.environ, **(env or {})}
    full_env.pop("ANTHROPIC_API_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "helpers.chat", *args], input=data, capture_output=True, timeout=timeout, env=full_env
    )


SCRIPT = "My favorite color is green\nWhat is my favorite color?\nquit\n"


def replies(proc) -> list[str]:
    return proc.stdout.decode().strip().splitlines()


@pytest.mark.slow  # a CLI subprocess (seconds): the full set runs it
def test_stateless_forgets():
    out = run_chat(SCRIPT, "--stage", "stateless")
    assert out.returncode == 0, out.stderr
    lines = replies(out)
    assert len(lines) == 2 and "green" not in lines[1].lower()


def test_history_remembers():
    out = run_chat(SCRIPT, "--stage", "history")
    lines = replies(out)
    assert out.returncode == 0 and len(lines) == 2 and "green" in lines[1].lower()


@pytest.mark.slow  # a CLI subprocess (seconds each): the full set runs it
def test_eof_ends_like_quit_and_lines_after_quit_are_ignored():
    assert len(replies(run_chat("hello\nthere\n", "--stage", "history"))) == 2
    assert len(replies(run_chat("hello\nquit\nignored\n", "--stage", "history"))) == 1


@pytest.mark.slow  # a CLI subprocess (seconds): the full set runs it
def test_empty_lines_get_a_clear_message_and_are_not_sent():
    out = run_chat("\n   \nhello\n", "--stage", "history")
    assert len(replies(out)) == 1
    assert out.stderr.decode().count("empty message") == 2


@pytest.mark.slow  # a CLI subprocess (seconds each): the full set runs it
def test_invalid_utf8_does_not_crash():
    out = run_chat(b"caf\xe9 \xff\xfe near the beach?\n", "--stage", "history")
    assert out.returncode == 0 and len(replies(out)) == 1


@pytest.mark.slow  # a CLI subprocess (seconds): the full set runs it
def test_model_failure_is_reported_and_chat_continues():
    out = run_chat(
        "hello\nhello again\n", "--stage", "history", env={"GTE_OFFLINE_FAULTS": "500x1", "MAX_RETRIES": "0"}
    )
    assert "model call failed" in out.stderr.decode()
    assert len(replies(out)) == 1 and out.returncode == 1


@pytest.mark.slow  # a CLI subprocess (seconds each): the full set runs it
def test_multiline_replies_stay_on_one_line():
    out = run_chat("tell me about tacos\nand beaches\n", "--stage", "history")
    assert len(replies(out)) == 2


@pytest.mark.slow
def test_bounded_fact_survives_60_fillers_and_a_new_process(tmp_path):
    """Issue 4's acceptance: a turn-1 fact, 60 filler turns at --budget 300, recalled by a new process."""
    import json

    from helpers.sim.scripts import trip_script

    args = ["--stage", "bounded", "--session-file", str(tmp_path / ".session_id"), "--budget", "300"]
    fillers = trip_script(66)[6:]  # 60 questions that state nothing about the user
    first = run_chat("My favorite color is teal.\n" + "\n".join(fillers) + "\n", *args)
    assert first.returncode == 0 and len(replies(first)) == 61, first.stderr
    state = json.loads(run_chat("", *args, "--show-state").stdout)
    assert state["window_tokens"] <= state["budget"] == 300
    assert "teal" in state["summary"] and all("teal" not in m["text"] for m in state["window"])
    assert state["log_count"] == 2 * 61
    later = run_chat("What is my favorite color?\n", *args)  # a new process, same session file
    assert "teal" in replies(later)[0]
    assert json.loads(run_chat("", *args, "--show-state").stdout)["log_count"] == 2 * 62
