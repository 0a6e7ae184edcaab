"""`python -m helpers.chat` under bad arguments, bad settings and failures after the reply (issue 11, item 7).

Most cases run the CLI in-process through `main(argv)` (captured stdout/stderr, a temp data dir, a mongomock
store) so the hypothesis fuzz stays fast; two run it as a real subprocess.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from pymongo.errors import AutoReconnect

from helpers.db import store as store_mod
from helpers.retrieval import embeddings
from helpers.retrieval.embeddings import EmbeddingError
from helpers.tools import chat
from helpers.tools.consistency import check_consistency

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = (
    "ANTHROPIC_API_KEY",
    "MONGODB_URI",
    "GTE_DATA_DIR",
    "GTE_DB_NAME",
    "WINDOW_BUDGET_TOKENS",
    "SUMMARY_MAX_TOKENS",
    "MEMORY_BUDGET_TOKENS",
    "REPLY_MAX_TOKENS",
    "OFFLINE_CONTEXT_WINDOW",
    "MAX_RETRIES",
    "EMBEDDER",
    "VOYAGE_API_KEY",
    "GTE_OFFLINE_FAULTS",
    "CHAT_MODEL",
)


def run_main(argv: list[str], env: dict[str, str] | None = None, stdin: bytes = b"") -> tuple[int, str, str]:
    """main(argv) in this process with `env` over a clean offline environment; returns (code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        for name in SETTINGS:
            mp.delenv(name, raising=False)
        mp.setenv("ANTHROPIC_API_KEY", "")
        mp.setenv("EMBEDDER", "local")
        for name, value in (env or {}).items():
            mp.setenv(name, value)
        mp.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = chat.main(argv)
            except SystemExit as exit_:  # argparse exits; main should return instead, but count it either way
                code = exit_.code if isinstance(exit_.code, int) else 1
                if not isinstance(exit_.code, int):
                    err.write(str(exit_.code))
            except BaseException:  # a traceback: report it as one (the assertions below then fail)
                import traceback

                err.write(traceback.format_exc())
                code = -1
    return code, out.getvalue(), err.getvalue()


def files_under(path: Path) -> list[Path]:
    return [p for p in path.rglob("*")] if path.exists() else []


def assert_usage_error(code: int, stderr: str, name: str) -> None:
    """Exit 2, one line on stderr starting 'error:', naming the argument or setting, no traceback."""
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == 2, (code, stderr)
    assert len(lines) == 1 and lines[0].startswith("error:"), stderr
    assert name in lines[0], (name, stderr)


@pytest.fixture
def place(tmp_path):
    """A data dir and a session-file path, both empty: a rejected run must leave them so."""
    data = tmp_path / "data"
    data.mkdir()
    return {"data": data, "session": tmp_path / "sid" / ".session_id", "tmp": tmp_path}


def check_nothing_written(place) -> None:
    assert files_under(place["data"]) == [], files_under(place["data"])
    assert not place["session"].exists() and not place["session"].parent.exists()


# ------------------------------------------------------------------------------------ named cases


@pytest.mark.parametrize(
    "extra, name",
    [
        (["--user", ""], "--user"),
        (["--user", "   "], "--user"),
        (["--user", "a\x00b"], "--user"),
        (["--budget", "abc"], "--budget"),
        (["--budget", "-5"], "--budget"),
        (["--budget", "0"], "--budget"),
        (["--budget", "99999999999999999999999"], "--budget"),
        (["--summary-max-tokens", "1.5"], "--summary-max-tokens"),
        (["--memory-budget", "-1"], "--memory-budget"),
        (["--system", ""], "--system"),
        (["--show-request", ""], "--show-request"),
        (["--import", "/nonexistent/turns.jsonl"], "--import"),
        (["--stage", "goldfish"], "--stage"),
        (["--no-such-flag"], "--no-such-flag"),
    ],
)
def test_bad_arguments_get_one_line_naming_them_and_nothing_is_written(place, extra, name):
    argv = ["--stage", "vector", "--session-file", str(place["session"]), *extra]
    code, out, err = run_main(argv, {"GTE_DATA_DIR": str(place["data"])})
    assert_usage_error(code, err, name)
    assert out == ""
    check_nothing_written(place)


def test_a_session_file_that_is_a_directory_is_refused(place):
    place["session"].mkdir(parents=True)
    code, out, err = run_main(
        ["--stage", "bounded", "--session-file", str(place["session"])],
        {"GTE_DATA_DIR": str(place["data"])},
        stdin=b"hello\n",
    )
    assert_usage_error(code, err, "--session-file")
    assert files_under(place["data"]) == [] and files_under(place["session"]) == []


def test_a_session_file_under_a_regular_file_is_refused(place):
    blocker = place["tmp"] / "blocker"
    blocker.write_text("x")
    code, _, err = run_main(
        ["--stage", "bounded", "--session-file", str(blocker / "sid")], {"GTE_DATA_DIR": str(place["data"])}
    )
    assert_usage_error(code, err, "--session-file")
    assert files_under(place["data"]) == []


def test_an_import_file_with_bad_json_is_refused_before_anything_is_written(place):
    bad = place["tmp"] / "turns.jsonl"
    bad.write_text('{"role": "user", "content": "hi"}\nnot json\n')
    code, _, err = run_main(
        ["--stage", "bounded", "--session-file", str(place["session"]), "--import", str(bad)],
        {"GTE_DATA_DIR": str(place["data"])},
    )
    assert_usage_error(code, err, "--import")
    check_nothing_written(place)


@pytest.mark.parametrize(
    "setting, value",
    [
        ("WINDOW_BUDGET_TOKENS", "abc"),
        ("WINDOW_BUDGET_TOKENS", "-5"),
        ("SUMMARY_MAX_TOKENS", "0"),
        ("MEMORY_BUDGET_TOKENS", "1e3"),
        ("REPLY_MAX_TOKENS", "99999999999999999999999"),
        ("OFFLINE_CONTEXT_WINDOW", "lots"),
        ("MAX_RETRIES", "-1"),
        ("MAX_RETRIES", "100000"),
        ("EMBEDDER", "openai"),
        ("EMBEDDER", "voyage"),
        ("GTE_OFFLINE_FAULTS", "meteor"),
        ("GTE_OFFLINE_FAULTS", "500xmany"),
        ("GTE_DB_NAME", "bad.name"),
        ("GTE_DB_NAME", "a/b"),
        ("ANTHROPIC_API_KEY", "sk ant with spaces"),
        ("ANTHROPIC_API_KEY", "sk-ünïcode"),
        ("VOYAGE_API_KEY", "line\nbreak"),
    ],
)
@pytest.mark.parametrize("stage", ["history", "vector"])
def test_bad_settings_get_one_line_naming_them_and_nothing_is_written(place, setting, value, stage):
    env = {"GTE_DATA_DIR": str(place["data"]), setting: value}
    code, out, err = run_main(["--stage", stage, "--session-file", str(place["session"])], env, stdin=b"hello\n")
    assert_usage_error(code, err, setting)
    assert out == ""
    check_nothing_written(place)


def test_a_data_dir_that_is_a_file_is_refused(place):
    not_a_dir = place["tmp"] / "data.txt"
    not_a_dir.write_text("x")
    code, _, err = run_main(
        ["--stage", "bounded", "--session-file", str(place["session"])],
        {"GTE_DATA_DIR": str(not_a_dir)},
        stdin=b"hello\n",
    )
    assert_usage_error(code, err, "GTE_DATA_DIR")
    assert not place["session"].exists()


# ------------------------------------------------------------------------------------ the fuzz

GOOD = {
    "--stage": ["bounded", "vector"],
    "--user": ["maya"],
    "--budget": ["300"],
    "--summary-max-tokens": ["200"],
    "--memory-budget": ["300"],
}
BAD_INTS = st.one_of(
    st.text(max_size=8).filter(lambda s: not s.strip().lstrip("+").isdigit()),
    st.integers(max_value=0).map(str),
    st.integers(min_value=10**10).map(str),
)
BAD_TEXT = st.one_of(
    st.just(""),
    st.text(alphabet=" \t\r\n", min_size=1, max_size=4),
    st.text(min_size=1, max_size=6).map(lambda s: s + "\x00"),
)
BAD_ARGS = st.one_of(
    st.tuples(st.just("--budget"), BAD_INTS),
    st.tuples(st.just("--summary-max-tokens"), BAD_INTS),
    st.tuples(st.just("--memory-budget"), BAD_INTS),
    st.tuples(st.just("--user"), BAD_TEXT),
    st.tuples(st.just("--system"), BAD_TEXT),
    st.tuples(st.just("--show-request"), BAD_TEXT),
)
INT_SETTINGS = [
    "WINDOW_BUDGET_TOKENS",
    "SUMMARY_MAX_TOKENS",
    "MEMORY_BUDGET_TOKENS",
    "REPLY_MAX_TOKENS",
    "OFFLINE_CONTEXT_WINDOW",
]
BAD_SETTINGS = st.one_of(
    st.tuples(
        st.sampled_from(INT_SETTINGS),
        st.one_of(
            st.text(alphabet="abcxyz.-e ", min_size=1, max_size=6).filter(lambda s: s.strip()),
            st.integers(max_value=0).map(str),
            st.integers(min_value=10**10).map(str),
        ),
    ),
    st.tuples(
        st.just("MAX_RETRIES"), st.one_of(st.integers(max_value=-1).map(str), st.integers(min_value=101).map(str))
    ),
    st.tuples(
        st.just("EMBEDDER"),
        st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8).filter(
            lambda s: s not in ("local", "voyage")
        ),
    ),
    st.tuples(
        st.just("GTE_DB_NAME"),
        st.text(alphabet='ab./\\ "$', min_size=1, max_size=6).filter(
            lambda s: s.strip() and any(c in s.strip() for c in './\\ "$')  # settings strip outer spaces
        ),
    ),
    st.tuples(
        st.just("ANTHROPIC_API_KEY"),
        st.text(alphabet="sk-é \t\x7f", min_size=1, max_size=8).filter(
            lambda s: s.strip() and any(c in s.strip() for c in "é \t\x7f")
        ),
    ),
)


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    bad=st.one_of(BAD_ARGS.map(lambda kv: ("arg", kv)), BAD_SETTINGS.map(lambda kv: ("setting", kv))),
    stage=st.sampled_from(["bounded", "vector"]),
    extra=st.dictionaries(st.sampled_from([k for k in sorted(GOOD) if k != "--stage"]), st.just(None), max_size=3),
)
def test_fuzz_bad_arguments_and_settings_exit_2_with_a_named_one_line_error_and_write_nothing(bad, stage, extra):
    with tempfile.TemporaryDirectory() as tmp:
        place = {"data": Path(tmp) / "data", "session": Path(tmp) / "sid" / ".session_id", "tmp": Path(tmp)}
        place["data"].mkdir()
        argv = ["--stage", stage, "--session-file", str(place["session"])]
        for flag in extra:
            argv += [flag, GOOD[flag][0]]
        env = {"GTE_DATA_DIR": str(place["data"])}
        kind, (name, value) = bad
        if kind == "arg":
            argv += [name, value] if not value.startswith("-") else [f"{name}={value}"]
        else:
            env[name] = value
        code, out, err = run_main(argv, env, stdin=b"hello\n")
        assert_usage_error(code, err, name)
        assert out == ""
        check_nothing_written(place)


@pytest.mark.parametrize("flag", ["--budget", "--user", "--memory-budget"])
def test_a_value_of_double_dash_is_a_usage_error_not_silently_dropped(flag, tmp_path):
    """argparse turns `--budget=--` into an empty list (found by the fuzz test above): it must not mean "not given"."""
    place = {"data": tmp_path / "data", "session": tmp_path / "sid" / ".session_id", "tmp": tmp_path}
    place["data"].mkdir()
    argv = ["--stage", "vector", "--session-file", str(place["session"]), f"{flag}=--"]
    code, out, err = run_main(argv, {"GTE_DATA_DIR": str(place["data"])}, stdin=b"hello\n")
    assert_usage_error(code, err, flag)
    assert "expected one argument" in err and out == ""
    check_nothing_written(place)


# ------------------------------------------------------------------------------------ failures after the reply


class FlakyEmbedder:
    """Embeds the user's query (before the reply) but fails on every memory document (after the reply)."""

    name, dim = "flaky-test-embedder", 16

    def __init__(self, error: BaseException):
        self.error = error

    def embed(self, texts: list[str], **_: object) -> np.ndarray:
        if any(t.startswith("User:") or "Assistant:" in t for t in texts) or len(texts) != 1 or self.failing(texts[0]):
            raise self.error
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        rows[:, hash(texts[0]) % self.dim] = 1.0
        return rows

    def failing(self, text: str) -> bool:
        return not text.endswith("?")  # the script's messages are questions; stored facts/episodes are not

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def run_with_store(monkeypatch, place, argv, stdin: bytes, embedder=None):
    shared = store_mod.mongomock_store()
    monkeypatch.setattr(store_mod, "open_store", lambda *a, **k: shared)
    if embedder is not None:
        monkeypatch.setattr(embeddings, "get_embedder", lambda *a, **k: embedder)
    code, out, err = run_main(argv, {"GTE_DATA_DIR": str(place["data"])}, stdin=stdin)
    return shared, code, out, err


def session_logs(shared, place, user="default"):
    sid = place["session"].read_text().strip()
    return sid, shared.logs_for(user, sid)


@pytest.mark.parametrize(
    "error",
    [
        EmbeddingError("Voyage AI could not be reached"),
        ConnectionResetError("connection reset by peer"),
        RuntimeError("embedder crashed"),
    ],
)
def test_an_embedder_failure_after_the_reply_is_one_line_and_leaves_nothing_pending(monkeypatch, place, error):
    argv = ["--stage", "vector", "--session-file", str(place["session"])]
    shared, code, out, err = run_with_store(
        monkeypatch, place, argv, b"Where is a good beach?\nAny tacos near it?\n", embedder=FlakyEmbedder(error)
    )
    assert "Traceback" not in err, err
    assert code in (0, 1), err
    sid, logs = session_logs(shared, place)
    users = [e["content"] for e in logs if e["role"] == "user"]
    assert users == ["Where is a good beach?", "Any tacos near it?"]  # both user turns kept
    assert [e for e in logs if e["status"] == "pending"] == []
    if code == 1:
        problems = [line for line in err.splitlines() if line.startswith("!")]
        assert problems and all(len(line) < 400 for line in problems), err
    assert check_consistency(shared, "default", sid) == []


def fail_once(monkeypatch, method: str, error: BaseException, when=lambda *a, **k: True) -> dict:
    """Make `Store.<method>` raise `error` the first time `when(args)` holds; returns the counter."""
    original = getattr(store_mod.Store, method)
    state = {"left": 1}

    def flaky(self, *args, **kwargs):
        if state["left"] and when(*args, **kwargs):
            state["left"] -= 1
            raise error
        return original(self, *args, **kwargs)

    monkeypatch.setattr(store_mod.Store, method, flaky)
    return state


@pytest.mark.parametrize(
    "method, error, when",
    [
        # the session save after the reply fails with a network error the memory does not translate
        ("save_session", ConnectionResetError("connection reset by peer"), lambda *a, **k: True),
        ("save_session", OverflowError("MongoDB can only handle up to 8-byte ints"), lambda *a, **k: True),
        # the exchange is committed, then marking its log entries "ok" (by turn id) fails
        ("confirm_turns", AutoReconnect("connection closed"), None),
        ("confirm_turns", TimeoutError("timed out"), None),
    ],
)
def test_a_failure_after_the_reply_is_one_line_keeps_the_turn_and_leaves_nothing_pending(
    monkeypatch, place, method, error, when
):
    if method == "confirm_turns":  # fail the confirmation right after the first save
        import helpers.memory.commit as commit_mod

        real, state = commit_mod.confirm_turns, {"left": 1}

        def confirm(store, user_id, session_id, turns):
            if state["left"] and turns and store.load_session(user_id, session_id)["commits"] == turns:
                state["left"] -= 1
                raise error
            return real(store, user_id, session_id, turns)

        monkeypatch.setattr(commit_mod, "confirm_turns", confirm)
    else:
        state = fail_once(monkeypatch, method, error, when)
    argv = ["--stage", "bounded", "--session-file", str(place["session"])]
    shared, code, out, err = run_with_store(monkeypatch, place, argv, b"My favorite color is teal.\nAnd yours?\n")
    assert state["left"] == 0  # the fault was served
    assert "Traceback" not in err and code == 1, err
    problems = [line for line in err.splitlines() if line.startswith("!")]
    assert len(problems) == 1 and "kept" in problems[0], err
    assert len(out.splitlines()) == 1  # the second line was answered: the chat went on
    sid, logs = session_logs(shared, place)
    assert [e["content"] for e in logs if e["role"] == "user"] == ["My favorite color is teal.", "And yours?"]
    assert [e for e in logs if e["status"] == "pending"] == []
    assert check_consistency(shared, "default", sid) == []


# ------------------------------------------------------------------------------------ real processes


@pytest.mark.slow  # a CLI subprocess (seconds each): the full set runs it
def test_real_process_empty_user_and_bad_setting(tmp_path):
    env = {**os.environ, "ANTHROPIC_API_KEY": "", "MONGODB_URI": "", "GTE_DATA_DIR": str(tmp_path / "data")}
    session = tmp_path / ".session_id"
    for args, extra, name in (
        (["--user", ""], {}, "--user"),
        ([], {"WINDOW_BUDGET_TOKENS": "abc"}, "WINDOW_BUDGET_TOKENS"),
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "helpers.chat", "--stage", "bounded", "--session-file", str(session), *args],
            input=b"hello\n",
            capture_output=True,
            timeout=120,
            env={**env, **extra},
            cwd=ROOT,
        )
        stderr = proc.stderr.decode()
        assert_usage_error(proc.returncode, stderr, name)
        assert proc.stdout == b"" and not session.exists() and not (tmp_path / "data").exists()
