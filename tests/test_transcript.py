"""helpers.transcript: dated JSONL transcripts for --import."""

import json
from datetime import datetime, timezone

import pytest

from helpers.transcript import parse_when, read_transcript


def lines(*items):
    return [item if isinstance(item, str) else json.dumps(item) for item in items]


def test_conversation_markers_date_the_turns_that_follow():
    turns = read_transcript(lines(
        "(conversation on 1:56 pm on 8 May, 2023)",
        {"role": "user", "content": "I joined a climbing gym.", "speaker": "Caroline"},
        {"role": "assistant", "content": "Nice!"},
        {"content": "(conversation on 2023-06-09)"},
        {"role": "user", "content": "Back from Lisbon."},
    ))
    assert [t.conversation for t in turns] == [0, 0, 1]
    assert turns[0].ts == datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc) and turns[0].speaker == "Caroline"
    assert turns[2].ts == datetime(2023, 6, 9, tzinfo=timezone.utc) and turns[1].speaker is None


def test_ts_wins_and_a_new_day_starts_a_new_conversation_without_markers():
    turns = read_transcript(lines(
        {"role": "user", "content": "a", "ts": "2023-05-08T10:00:00Z"},
        {"role": "assistant", "content": "b", "ts": "2023-05-08T10:01:00+00:00"},
        {"role": "user", "content": "c", "ts": "2023-05-20T09:00:00"},
    ))
    assert [t.conversation for t in turns] == [0, 0, 1]
    assert turns[2].ts == datetime(2023, 5, 20, 9, tzinfo=timezone.utc)


def test_plain_transcripts_still_import():
    turns = read_transcript(lines({"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}))
    assert [(t.role, t.ts, t.conversation) for t in turns] == [("user", None, 0), ("assistant", None, 0)]


@pytest.mark.parametrize("bad, where", [
    ('{"role": "user", "content": "x", "ts": "not a date"}', ":1: ts"),
    ("(conversation on someday)", ":1:"),
    ('{"role": "system", "content": "x"}', ":1: expected"),
    ("just text", ":1: expected a JSON object"),
])
def test_bad_lines_name_the_line(bad, where):
    with pytest.raises(ValueError, match=where):
        read_transcript([bad], "chat.jsonl")


def test_parse_when_is_utc():
    assert parse_when("2023-05-08T15:00:00+02:00") == datetime(2023, 5, 8, 13, tzinfo=timezone.utc)
    assert parse_when("8 May 2023").date().isoformat() == "2023-05-08"
