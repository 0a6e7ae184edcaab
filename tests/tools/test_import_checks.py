"""`--import` checks every turn like a typed one, all before the first write (issue 20): each bad transcript gets
one line, exit 2, and the store is exactly as it was (checked in the database)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import uuid

import pytest

from helpers.config import load_settings
from helpers.db.store import open_store
from helpers.memory import transcript

sys.path.insert(0, os.path.dirname(__file__))
from test_chat_cli_errors import ROOT, assert_usage_error, run_main  # noqa: E402

GOOD = [{"role": "user", "content": "My locker code is 4411."}, {"role": "assistant", "content": "Noted: 4411."}]
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 32).decode()


def line(**turn) -> str:
    return json.dumps(turn, ensure_ascii=True)


def nested(levels: int) -> dict:
    """An object `levels` levels deep: {"a": {"a": ... {"a": 1}}}."""
    value: object = 1
    for _ in range(levels):
        value = {"a": value}
    return value


BAD = {
    "a timestamp at the calendar's end (issue 41)": [
        line(role="user", content="hi", ts="9999-12-31T23:59:59-14:00"),
        line(role="assistant", content="hello"),
    ],
    "a timestamp at the calendar's start": [line(role="user", content="hi", ts="0001-01-01T00:00:00+14:00")],
    "a conversation dated at the calendar's end": ["(conversation on 9999-12-31T23:59:59-14:00)"],
    "dollar key in a block": [line(role="user", content=[{"type": "text", "text": "hi", "$where": "sleep(1)"}])],
    "dollar key nested": [
        line(role="user", content="hi"),
        line(
            role="assistant", content=[{"type": "tool_use", "id": "t1", "name": "x", "input": {"q": {"$where": "1"}}}]
        ),
    ],
    "dotted key": [
        line(role="user", content="hi"),
        line(role="assistant", content=[{"type": "tool_use", "id": "t1", "name": "x", "input": {"a.b": 1}}]),
    ],
    "unknown block type": [line(role="user", content=[{"type": "video", "url": "https://x.test/v.mp4"}])],
    "fake image": [
        line(
            role="user",
            content=[
                {
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": "image/png",
                        "data": base64.b64encode(b"hello").decode(),
                    },
                }
            ],
        )
    ],
    "image with extra keys": [
        line(
            role="user",
            content=[{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG, "x": 1}}],
        )
    ],
    "NUL byte": [line(role="user", content="a\u0000b")],
    "NUL in a speaker": [line(role="user", content="hi", speaker="Al\u0000ice")],
    "lone surrogate": [
        line(role="user", content="hi"),
        line(role="assistant", content="ok"),
        '{"role": "user", "content": "bad \\ud800 text"}',
    ],
    "only assistant turns": [line(role="assistant", content="Hello!"), line(role="assistant", content="Still me.")],
    "blank content": [line(role="user", content="   ")],
    # issue 31: what BSON cannot store (MongoDB's 100 levels, int64), refused before the first write
    "a line nested 200,000 levels deep": [
        line(role="user", content="hi"),
        '{"role": "assistant", "content": "ok", "meta": ' + "[" * 200_000 + "]" * 200_000 + "}",
    ],
    "a tool_use input nested 900 levels deep": [
        line(role="user", content="hi"),
        line(role="assistant", content=[{"type": "tool_use", "id": "t1", "name": "x", "input": nested(900)}]),
    ],
    "a tool_use input one level deeper than MongoDB stores": [
        line(role="user", content="hi"),
        line(
            role="assistant",
            content=[{"type": "tool_use", "id": "t1", "name": "x", "input": nested(transcript.MAX_CONTENT_DEPTH - 1)}],
        ),
    ],
    "an integer over 8 bytes on line 31 of 40": [
        line(role=r, content=f"turn {i}") for i in range(20) for r in ("user", "assistant")
    ][:30]
    + [line(role="assistant", content=[{"type": "tool_use", "id": "t1", "name": "n", "input": {"n": 2**64}}])]
    + [line(role=r, content=f"more {i}") for i in range(5) for r in ("user", "assistant")][1:],
    "the last of 2,000 lines is bad": [
        line(role=r, content=f"turn {i}") for i in range(1000) for r in ("user", "assistant")
    ][:-1]
    + [line(role="assistant", content=[])],
}


def snapshot(db_name: str) -> dict:
    """Every document in the test database (logs, sessions, facts, turns …), without Mongo's _id."""
    store = open_store(load_settings().with_(mongodb_uri=None, db_name=db_name), fallback=False)
    try:
        return {
            name: sorted(
                json.dumps({k: v for k, v in d.items() if k != "_id"}, sort_keys=True, default=str)
                for d in store.db[name].find()
            )
            for name in sorted(store.db.list_collection_names())
        }
    finally:
        store.close()


@pytest.fixture(scope="module", params=["bounded", "vector"])
def seeded(request, tmp_path_factory):
    """A stage's session with one imported exchange already in the store."""
    tmp = tmp_path_factory.mktemp(f"import-{request.param}")
    good = tmp / "good.jsonl"
    good.write_text("\n".join(json.dumps(t) for t in GOOD) + "\n")
    env = {"GTE_DB_NAME": f"imp_{uuid.uuid4().hex[:10]}", "GTE_DATA_DIR": os.environ["GTE_DATA_DIR"]}
    argv = ["--stage", request.param, "--session-file", str(tmp / ".session_id")]
    code, _, err = run_main([*argv, "--import", str(good)], env)
    assert code == 0, err
    before = snapshot(env["GTE_DB_NAME"])
    assert before["logs"] and before["sessions"]
    yield {"argv": argv, "env": env, "tmp": tmp, "before": before}
    store = open_store(load_settings().with_(mongodb_uri=None, db_name=env["GTE_DB_NAME"]), fallback=False)
    store.client.drop_database(env["GTE_DB_NAME"])
    store.close()


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_import_gets_one_line_exit_2_and_the_store_is_unchanged(seeded, case):
    path = seeded["tmp"] / f"{abs(hash(case))}.jsonl"
    path.write_text("\n".join(BAD[case]) + "\n", encoding="utf-8")
    code, out, err = run_main([*seeded["argv"], "--import", str(path)], seeded["env"])
    assert_usage_error(code, err, "--import")
    assert out == ""
    assert snapshot(seeded["env"]["GTE_DB_NAME"]) == seeded["before"]


@pytest.mark.parametrize(
    "case,where",
    [
        ("a line nested 200,000 levels deep", ":2: JSON nested more than 96 levels deep"),
        ("a tool_use input nested 900 levels deep", ":2: JSON nested more than 96 levels deep"),
        ("a tool_use input one level deeper than MongoDB stores", ":2: JSON nested more than 96 levels deep"),
        ("an integer over 8 bytes on line 31 of 40", ":31: content[0].input.n: the integer 18446744073709551616"),
    ],
)
def test_what_the_database_cannot_store_is_refused_naming_the_file_and_line(seeded, case, where):
    """Issue 31: a 200k-deep line was a RecursionError traceback, a 900-deep tool input was written and then failed
    every later command, an int over 64 bits aborted a bounded import half-written (exit 1, no line named)."""
    assert len(BAD[case]) == 40 if "40" in case else True
    path = seeded["tmp"] / f"bson-{abs(hash(case))}.jsonl"
    path.write_text("\n".join(BAD[case]) + "\n", encoding="utf-8")
    code, _, err = run_main([*seeded["argv"], "--import", str(path)], seeded["env"])
    assert_usage_error(code, err, f"{path}{where}")
    assert snapshot(seeded["env"]["GTE_DB_NAME"]) == seeded["before"]
    state, _, err = run_main([*seeded["argv"], "--show-state"], seeded["env"])  # the session still works
    assert state == 0, err


def test_a_tool_input_as_deep_as_the_database_stores_imports_and_the_session_keeps_working(tmp_path):
    """The limit's other side, on the local server: content nested MAX_CONTENT_DEPTH levels (a tool input 2 less,
    inside its list and block) is imported, and every later command on the session works."""
    deep = [
        line(role="user", content="hi"),
        line(role="assistant", content=[{"type": "tool_use", "id": "t1", "name": "x", "input": nested(93)}]),
        line(role="user", content=[{"type": "tool_result", "tool_use_id": "t1", "content": "done"}]),
        line(role="assistant", content="All done."),
    ]
    assert transcript.MAX_CONTENT_DEPTH == 95
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(deep) + "\n")
    env = {"GTE_DB_NAME": f"imp_{uuid.uuid4().hex[:10]}", "GTE_DATA_DIR": os.environ["GTE_DATA_DIR"]}
    try:
        for stage in ("bounded", "vector"):
            argv = ["--stage", stage, "--session-file", str(tmp_path / f".{stage}")]
            code, out, err = run_main([*argv, "--import", str(path)], env)
            assert code == 0 and json.loads(out)["imported"] == 4, err
            for more in (["--show-state"], ["--rebuild"], ["--show-request", "What did the tool get?"]):
                code, _, err = run_main([*argv, *more], env)
                assert code == 0, (more, err)
    finally:
        store = open_store(load_settings().with_(mongodb_uri=None, db_name=env["GTE_DB_NAME"]), fallback=False)
        store.client.drop_database(env["GTE_DB_NAME"])
        store.close()


def test_a_huge_line_is_refused_before_it_is_read_whole(seeded):
    path = seeded["tmp"] / "huge.jsonl"
    path.write_text(line(role="user", content="x" * (transcript.MAX_LINE_CHARS + 10)) + "\n")
    code, _, err = run_main([*seeded["argv"], "--import", str(path)], seeded["env"])
    assert_usage_error(code, err, "line too long")
    assert snapshot(seeded["env"]["GTE_DB_NAME"]) == seeded["before"]


def test_a_transcript_over_the_total_limit_is_refused(seeded, monkeypatch):
    monkeypatch.setattr(transcript, "MAX_IMPORT_BYTES", 50_000)  # the limit's mechanism, without a 20 MB file
    path = seeded["tmp"] / "big.jsonl"
    path.write_text("\n".join(line(role=r, content="y" * 500) for _ in range(60) for r in ("user", "assistant")))
    code, _, err = run_main([*seeded["argv"], "--import", str(path)], seeded["env"])
    assert_usage_error(code, err, "too large")
    assert snapshot(seeded["env"]["GTE_DB_NAME"]) == seeded["before"]


def test_the_python_api_checks_the_same_way_and_writes_nothing(settings):
    from helpers.db.store import mongomock_store
    from helpers.llm import get_client
    from helpers.memory import BoundedMemory
    from helpers.memory.importer import import_turns

    store = mongomock_store()
    memory = BoundedMemory(get_client(settings, max_retries=0), settings, store=store, user_id="u", session_id="s")
    for bad in (
        [{"role": "assistant", "content": "hi"}],
        [*GOOD, {"role": "user", "content": "x\ud800"}],
        [*GOOD, {"role": "user", "content": [{"type": "text", "text": "x", "a.b": 1}]}],
        [
            GOOD[0],
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": nested(94)}]},
        ],
        [
            GOOD[0],
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": nested(200_000)}]},
        ],
        [
            GOOD[0],
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {"n": -(2**63) - 1}}],
            },
        ],
    ):
        with pytest.raises(ValueError):
            import_turns(memory, bad)
        assert store.logs.count_documents({}) == 0 and store.sessions.count_documents({}) == 0


@pytest.mark.slow  # a CLI subprocess (seconds): the full set runs it
def test_a_real_cli_process_refuses_a_bad_import_in_one_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(BAD["dollar key in a block"]) + "\n")
    env = {**os.environ, "ANTHROPIC_API_KEY": "", "MONGODB_URI": ""}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "helpers.chat",
            "--stage",
            "vector",
            "--session-file",
            str(tmp_path / ".sid"),
            "--import",
            str(path),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "$where" in proc.stderr, proc.stderr


def test_a_long_import_leaves_nothing_out_of_the_summary(settings):
    """Every imported turn that leaves the window is in the summary: batched summary calls, each within the
    pending bound (a small bound here makes 160 turns need many calls; `scripts`' 3,000-turn run is the same)."""
    from test_sanitiser import HashEmbedder

    from helpers.db.store import mongomock_store
    from helpers.llm import get_client
    from helpers.memory import VectorMemory
    from helpers.memory.importer import import_turns

    store = mongomock_store()
    memory = VectorMemory(
        get_client(settings, max_retries=0),
        settings,
        store=store,
        user_id="u",
        session_id="s",
        embedder=HashEmbedder(),
        budget=200,
        pending_max_count=10,
        check_retention=False,
    )
    turns = [
        {"role": r, "content": f"Day {i}: my locker code is {4400 + i}." if r == "user" else f"Noted, day {i}."}
        for i in range(80)
        for r in ("user", "assistant")
    ]
    result = import_turns(memory, turns)
    covered = result["summary_covers"]["count"]
    assert result["imported"] == 160 and result["pending"] == 0 and result["unsummarised"] == 0
    assert covered + len(result["window"]) == 160, (covered, len(result["window"]))
    assert result["summary_calls"] >= (160 - len(result["window"])) // 10  # one call per bounded chunk
    assert store.logs.count_documents({"status": {"$ne": "ok"}}) == 0
    assert result["summary_covers"]["first_seq"] == 1  # from the very first turn on


@pytest.mark.parametrize("stage", ["bounded", "vector"])
def test_a_transcript_that_opens_with_the_other_side_imports_and_the_window_starts_with_the_user(settings, stage):
    """A real conversation may open with the other speaker (LoCoMo's often do): the import takes it, that turn is
    logged and kept in memory, and the request still starts with a user message, as the Messages API needs."""
    from test_sanitiser import HashEmbedder

    from helpers.db.store import mongomock_store
    from helpers.llm import get_client
    from helpers.memory import BoundedMemory, VectorMemory
    from helpers.memory.importer import import_turns

    store = mongomock_store()
    kind, extra = (VectorMemory, {"embedder": HashEmbedder()}) if stage == "vector" else (BoundedMemory, {})
    memory = kind(get_client(settings, max_retries=0), settings, store=store, user_id="u", session_id="s", **extra)
    turns = [
        {"role": "assistant", "content": "Hey Ana! My sister's cat is called Miso."},
        *GOOD,
        {"role": "user", "content": "What should I pack for Denver?"},
    ]
    result = import_turns(memory, turns)
    assert result["imported"] == 4 and store.logs.count_documents({}) == 4
    request = memory.build_request("And what was the name of the cat?")
    assert request["messages"][0]["role"] == "user"
    assert store.logs.count_documents({"role": "assistant", "content": {"$regex": "Miso"}}) == 1  # the opener is kept
