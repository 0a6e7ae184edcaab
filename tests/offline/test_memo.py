"""The offline model's chat replies kept on disk (helpers.offline.memo.REPLY_CACHE_ENV): a reply worked out in one
process is read back, the same text, by the next one asking the same request; any other request, a damaged file or
edited helpers are worked out anew; unset, nothing is written. The test suite turns it on for its whole run."""

import json

import pytest

from helpers.config import load_settings
from helpers.llm import get_client
from helpers.offline import memo
from helpers.offline.memo import REPLY_CACHE_ENV, kept_reply
from helpers.offline.reply import chat_reply

SYSTEM = "You are a helpful assistant."
TURNS = [
    ("user", "My gym locker combination is 4172."),
    ("assistant", "Thanks for telling me."),
    ("user", "What's the combination for my gym locker?"),
]


def _never(system, turns):
    raise AssertionError("worked out again: the reply cache should have served it")


def counting(calls):
    def compute(system, turns):
        calls.append(turns[-1][1])
        return chat_reply(system, turns)

    return compute


def test_a_reply_worked_out_once_is_read_back_for_the_same_request_only(tmp_path, monkeypatch):
    monkeypatch.setenv(REPLY_CACHE_ENV, str(tmp_path))
    calls = []
    first = kept_reply(counting(calls), SYSTEM, TURNS)
    assert "4172" in first and len(calls) == 1 and len(list(tmp_path.rglob("*.json"))) == 1
    assert kept_reply(_never, SYSTEM, TURNS) == first
    asked_again = [*TURNS[:2], ("user", "What is my gym locker combination?")]
    for system, turns in ((SYSTEM + " Be brief.", TURNS), (SYSTEM, asked_again), (SYSTEM, TURNS[:1])):
        with pytest.raises(AssertionError, match="worked out again"):
            kept_reply(_never, system, turns)  # another system text or other turns: not the kept reply


def test_the_model_answers_through_the_cache_with_the_reply_it_would_work_out(tmp_path, monkeypatch):
    client = get_client(load_settings({}), max_retries=0)
    messages = [{"role": "user" if role == "user" else "assistant", "content": text} for role, text in TURNS]

    def ask():
        reply = client.messages.create(model="claude-haiku-4-5", max_tokens=300, system=SYSTEM, messages=messages)
        return reply.content[0].text, reply.usage.input_tokens, reply.usage.output_tokens

    monkeypatch.delenv(REPLY_CACHE_ENV, raising=False)
    worked_out = ask()
    assert not list(tmp_path.rglob("*"))
    monkeypatch.setenv(REPLY_CACHE_ENV, str(tmp_path))
    assert ask() == worked_out and len(list(tmp_path.rglob("*.json"))) == 1  # written
    monkeypatch.setattr("helpers.offline.model.chat_reply", _never)
    assert ask() == worked_out  # read: the same text, so the same usage


def test_a_damaged_file_is_worked_out_again_and_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv(REPLY_CACHE_ENV, str(tmp_path))
    first = kept_reply(chat_reply, SYSTEM, TURNS)
    (path,) = tmp_path.rglob("*.json")
    for damage in ("{not json", json.dumps({"text": 4172}), json.dumps(["a list"]), "\udcff"):
        path.write_bytes(damage.encode("utf-8", "surrogatepass"))
        calls = []
        assert kept_reply(counting(calls), SYSTEM, TURNS) == first and len(calls) == 1
        assert json.loads(path.read_text()) == {"text": first}


def test_edited_helpers_never_read_a_reply_kept_by_the_code_before(tmp_path, monkeypatch):
    monkeypatch.setenv(REPLY_CACHE_ENV, str(tmp_path))
    kept_reply(chat_reply, SYSTEM, TURNS)
    monkeypatch.setattr(memo, "source_identity", lambda: "the helpers after an edit")
    with pytest.raises(AssertionError, match="worked out again"):
        kept_reply(_never, SYSTEM, TURNS)


def test_the_identity_follows_every_helpers_file(tmp_path, monkeypatch):
    (tmp_path / "offline" / "data").mkdir(parents=True)
    source, data = tmp_path / "offline" / "reply.py", tmp_path / "offline" / "data" / "words.json"
    source.write_text("x = 1\n")
    data.write_text("{}")
    monkeypatch.setattr(memo, "_HELPERS", tmp_path)
    seen = []
    for change in (lambda: None, lambda: source.write_text("x = 22\n"), lambda: data.write_text('{"a": 1}')):
        change()
        memo.source_identity.cache_clear()
        seen.append(memo.source_identity())
    memo.source_identity.cache_clear()
    assert len(set(seen)) == 3  # a module's edit and a data file's edit each give another identity


def test_unset_nothing_is_written_and_every_reply_is_worked_out(tmp_path, monkeypatch):
    monkeypatch.delenv(REPLY_CACHE_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    calls = []
    assert kept_reply(counting(calls), SYSTEM, TURNS) == kept_reply(counting(calls), SYSTEM, TURNS)
    assert len(calls) == 2 and not list(tmp_path.rglob("*"))


def test_a_cache_dir_that_cannot_be_written_only_costs_the_work(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(REPLY_CACHE_ENV, str(blocker))
    assert kept_reply(chat_reply, SYSTEM, TURNS) == chat_reply(SYSTEM, TURNS)


def test_the_test_run_shares_one_reply_cache():
    import os

    assert os.environ.get(REPLY_CACHE_ENV, "").strip(), "conftest.py sets the run's reply cache"
