"""helpers.memory.transcript: dated JSONL transcripts for --import."""

import json
from datetime import datetime, timezone

import pytest

from helpers.config import load_settings
from helpers.db.store import mongomock_store
from helpers.llm import get_client
from helpers.memory import BoundedMemory
from helpers.memory.importer import import_turns
from helpers.memory.transcript import parse_when, read_transcript


def lines(*items):
    return [item if isinstance(item, str) else json.dumps(item) for item in items]


def test_conversation_markers_date_the_turns_that_follow():
    turns = read_transcript(
        lines(
            "(conversation on 1:56 pm on 8 May, 2023)",
            {"role": "user", "content": "I joined a climbing gym.", "speaker": "Caroline"},
            {"role": "assistant", "content": "Nice!"},
            {"content": "(conversation on 2023-06-09)"},
            {"role": "user", "content": "Back from Lisbon."},
        )
    )
    assert [t.conversation for t in turns] == [0, 0, 1]
    assert turns[0].ts == datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc) and turns[0].speaker == "Caroline"
    assert turns[2].ts == datetime(2023, 6, 9, tzinfo=timezone.utc) and turns[1].speaker is None


def test_ts_wins_and_a_new_day_starts_a_new_conversation_without_markers():
    turns = read_transcript(
        lines(
            {"role": "user", "content": "a", "ts": "2023-05-08T10:00:00Z"},
            {"role": "assistant", "content": "b", "ts": "2023-05-08T10:01:00+00:00"},
            {"role": "user", "content": "c", "ts": "2023-05-20T09:00:00"},
        )
    )
    assert [t.conversation for t in turns] == [0, 0, 1]
    assert turns[2].ts == datetime(2023, 5, 20, 9, tzinfo=timezone.utc)


def test_plain_transcripts_still_import():
    turns = read_transcript(lines({"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}))
    assert [(t.role, t.ts, t.conversation) for t in turns] == [("user", None, 0), ("assistant", None, 0)]


@pytest.mark.parametrize(
    "bad, where",
    [
        ('{"role": "user", "content": "x", "ts": "not a date"}', ":1: ts"),
        ("(conversation on someday)", ":1:"),
        ('{"role": "system", "content": "x"}', ":1: expected"),
        ("just text", ":1: expected a JSON object"),
    ],
)
def test_bad_lines_name_the_line(bad, where):
    with pytest.raises(ValueError, match=where):
        read_transcript([bad], "chat.jsonl")


def test_parse_when_is_utc():
    assert parse_when("2023-05-08T15:00:00+02:00") == datetime(2023, 5, 8, 13, tzinfo=timezone.utc)
    assert parse_when("8 May 2023").date().isoformat() == "2023-05-08"


def test_bounded_import_keeps_each_turns_time_speaker_and_conversation():
    settings = load_settings({})
    memory = BoundedMemory(
        get_client(settings), settings, store=mongomock_store(), user_id="maya", session_id="s1", budget=2000
    )
    lines = [
        "(conversation on 8 May, 2023)",
        '{"role": "user", "content": "My sister Priya moved to Pasadena.", "speaker": "Maya"}',
        '{"role": "assistant", "content": "Nice, close by!", "speaker": "Jo"}',
        '{"role": "user", "content": "Any news?", "ts": "2023-06-01T10:00:00"}',
        '{"role": "assistant", "content": "Not yet."}',
    ]
    result = import_turns(memory, read_transcript(lines))  # what `--stage bounded --import FILE` passes
    assert result["imported"] == 4
    logs = memory.store.logs_for("maya", "s1")
    assert [(d["ts"].date().isoformat(), d.get("speaker"), d["conversation"]) for d in logs] == [
        ("2023-05-08", "Maya", 0),
        ("2023-05-08", "Jo", 0),
        ("2023-06-01", None, 0),
        ("2023-05-08", None, 0),
    ]
    assert all(d["imported"] and d["status"] == "ok" for d in logs)
