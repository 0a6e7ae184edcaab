"""`python -m helpers.chat --stage memory_tool`: persistent per user like bounded and vector (--user, --session-file,
--show-request, --show-state, --rebuild, --forget-user), run in-process through `main(argv)` on a shared mongomock
store, with tests/memory_tool/_scripted.py's policy as the model; the last test runs the offline model's own policy."""

from __future__ import annotations

import contextlib
import io
import json
import sys

import pytest
from _scripted import ScriptedModel, note_taker

from helpers.db import store as store_mod
from helpers.memory_tool import AUDIT, FILES
from helpers.tools import chat


@pytest.fixture
def cli(monkeypatch, tmp_path):
    """main(argv, stdin) with one shared in-memory store and the scripted model; returns (code, stdout, stderr)."""
    shared = store_mod.mongomock_store("cli")
    model = ScriptedModel(note_taker)
    monkeypatch.setattr(store_mod, "open_store", lambda *a, **k: shared)
    monkeypatch.setattr(chat, "get_client", lambda *a, **k: model.client())
    monkeypatch.setenv("GTE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "")

    def run(*argv: str, stdin: str = "") -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8"))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = chat.main(["--stage", "memory_tool", *argv])
        return code, out.getvalue(), err.getvalue()

    run.store, run.model, run.dir = shared, model, tmp_path
    return run


def test_a_fact_told_in_one_session_is_answered_in_a_new_session_of_the_same_user_only(cli):
    one, two, three = (str(cli.dir / name) for name in ("one.sid", "two.sid", "three.sid"))
    code, out, err = cli("--user", "maya", "--session-file", one, stdin="My favourite tea is genmaicha.\nquit\n")
    assert code == 0 and out.strip() == "Noted.", err
    code, out, _ = cli("--user", "maya", "--session-file", two, stdin="What is my favourite tea?\n")
    assert code == 0 and "genmaicha" in out
    code, out, _ = cli("--user", "bob", "--session-file", three, stdin="What is my favourite tea?\n")
    assert code == 0 and "genmaicha" not in out
    assert open(one).read().strip() != open(two).read().strip()  # two sessions, one user's files


def test_show_request_prints_the_tool_and_the_guidance_and_sends_nothing(cli):
    code, out, _ = cli("--user", "maya", "--session-file", str(cli.dir / "s"), "--show-request", "Hello")
    request = json.loads(out)
    assert code == 0 and request["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    assert "Only write down information about the user in your memory" in request["system"]
    assert request["messages"] == [{"role": "user", "content": "Hello"}] and cli.model.requests == []


def test_show_state_lists_the_files_and_rebuild_restores_the_window(cli):
    session = str(cli.dir / "s")
    cli("--user", "maya", "--session-file", session, stdin="My favourite tea is genmaicha.\n")
    code, out, _ = cli("--user", "maya", "--session-file", session, "--show-state")
    state = json.loads(out)
    assert (
        code == 0 and state["stage"] == "memory_tool" and [f["path"] for f in state["files"]] == ["/memories/user.md"]
    )
    code, out, _ = cli("--user", "maya", "--session-file", session, "--rebuild")
    assert code == 0 and json.loads(out)["window"] == 2


def test_import_is_refused_at_this_stage_and_nothing_is_written(cli):
    transcript = cli.dir / "chat.jsonl"
    transcript.write_text('{"role": "user", "content": "My favourite tea is genmaicha."}\n')
    code, out, err = cli("--session-file", str(cli.dir / "s"), "--import", str(transcript))
    assert code == 2 and out == "" and "--import is not available at --stage memory_tool" in err
    assert cli.store.logs.count_documents({}) == 0 and cli.store.sessions.count_documents({}) == 0
    assert not (cli.dir / "s").exists()


def test_forget_user_erases_the_memory_files_and_their_audit(cli):
    cli("--user", "maya", "--session-file", str(cli.dir / "m"), stdin="My favourite tea is genmaicha.\n")
    cli("--user", "bob", "--session-file", str(cli.dir / "b"), stdin="My favourite tea is sencha.\n")
    code, out, _ = cli("--forget-user", "maya")
    result = json.loads(out)
    assert code == 0 and result["left"] == 0 and result["deleted"][FILES] == 1 and result["deleted"][AUDIT] >= 1
    assert cli.store.db[FILES].count_documents({"user_id": "maya"}) == 0
    assert cli.store.db[AUDIT].count_documents({"user_id": "maya"}) == 0
    assert cli.store.db[FILES].count_documents({"user_id": "bob"}) == 1


def test_the_offline_model_itself_recalls_across_sessions_of_one_user_only(monkeypatch, tmp_path):
    """Issue 33's "Done when": the real offline client (no scripted model), through the SDK's tool runner."""
    shared = store_mod.mongomock_store("cli-offline")
    monkeypatch.setattr(store_mod, "open_store", lambda *a, **k: shared)
    monkeypatch.setenv("GTE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "")

    def run(user: str, sid: str, stdin: str) -> tuple[int, str]:
        out = io.StringIO()
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8"))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = chat.main(["--stage", "memory_tool", "--user", user, "--session-file", str(tmp_path / sid)])
        return code, out.getvalue()

    assert run("maya", "one", "My favourite tea is genmaicha.\nquit\n")[0] == 0
    assert [f["path"] for f in shared.db[FILES].find_one({"user_id": "maya"})["files"]] == ["/memories/user.md"]
    code, out = run("maya", "two", "What is my favourite tea?\n")
    assert code == 0 and "genmaicha" in out
    code, out = run("bob", "three", "What is my favourite tea?\n")
    assert code == 0 and "genmaicha" not in out
