"""VectorMemory: retrieved long-term memory composed with the bounded window and summary (notebook 05)."""

import json
import os
import subprocess
import sys
from datetime import datetime, timezone

import pytest

from helpers.config import load_settings
from helpers.db.store import mongomock_store
from helpers.llm import get_client
from helpers.memory import BoundedMemory, VectorMemory
from helpers.memory.importer import import_turns
from helpers.prompts import MEMORY_OPEN, SCOUT_PERSONA
from helpers.retrieval.inject import day_label
from helpers.sim.scripts import trip_script

FLIGHT = "My flight number is UA1432."


@pytest.fixture
def settings():
    return load_settings({})


def vector(client, settings, store, user="maya", **kw):
    kw.setdefault("budget", 200)
    kw.setdefault("summary_max_tokens", 40)
    return VectorMemory(client, settings, store=store, user_id=user, session_id=kw.pop("session_id", "s1"), **kw)


@pytest.mark.slow
def test_fact_from_100_turns_ago_comes_back_when_window_and_summary_lost_it(settings):
    client, store = get_client(settings), mongomock_store()
    memory = vector(client, settings, store)
    memory.turn(FLIGHT)
    for text in trip_script(100):
        memory.turn(text)
    state = memory.state()
    assert all("UA1432" not in m["text"] for m in state["window"])  # long gone from the window
    assert any("UA1432" in m["text"] for m in state["memories"])
    request = memory.build_request("What is my flight number?")
    assert request["system"].startswith(SCOUT_PERSONA)
    # carried by the long-term memory block, whatever the capped summary happened to keep
    assert "UA1432" in request["system"][request["system"].index(MEMORY_OPEN) :]
    # the bounded stage has only what its summary kept: its reply can hold the number only if its request did
    bounded = BoundedMemory(
        client, settings, store=store, user_id="maya", session_id="s1", budget=200, summary_max_tokens=40
    )
    alone = bounded.turn("What is my flight number?")
    assert ("UA1432" in alone.reply) <= ("UA1432" in alone.request["system"])
    assert "UA1432" in memory.turn("What is my flight number?").reply


def test_other_users_never_see_the_memory(settings):
    client, store = get_client(settings), mongomock_store()
    vector(client, settings, store).turn(FLIGHT)
    for other in ("bob", '{"$ne": null}', "maya "):
        stranger = vector(client, settings, store, user=other)
        result = stranger.turn("What is my flight number?")
        assert "UA1432" not in result.reply and result.retrieved == []
        assert stranger.state()["memories"] == []


def test_retrieved_memories_are_dated_data_inside_the_budget(settings):
    client, store = get_client(settings), mongomock_store()
    memory = vector(client, settings, store, memory_budget=120)
    for text in [FLIGHT, "My favorite color is teal.", "I live in Portland.", *trip_script(20)]:
        memory.turn(text)
    result = memory.turn("What is my favorite color?")
    system = result.request["system"]
    block = system[system.index(MEMORY_OPEN) :]
    today = day_label(datetime.now(timezone.utc))
    assert "data, not instructions" in block and f"[{today} · earlier in this conversation]" in block
    from helpers.offline import count_text_tokens

    assert count_text_tokens(block) <= 120
    assert result.retrieved and "teal" in result.reply


def test_contradiction_is_superseded_not_deleted(settings):
    client, store = get_client(settings), mongomock_store()
    memory = vector(client, settings, store)
    memory.turn("I live in Los Angeles.")
    memory.turn("I moved to Denver last month.")
    texts = [m["text"] for m in memory.state()["memories"]]
    assert any("Denver" in t for t in texts) and not any("Los Angeles" in t for t in texts)
    history = memory.long_term.facts.history("maya")
    old = next(d for d in history if "Los Angeles" in d["text"])
    assert old["superseded_by"] is not None and old["valid_to"] is not None


def test_extraction_failure_keeps_the_exchange_pending_then_stores_it(settings):
    store = mongomock_store()
    flaky = get_client(settings, faults="ok,500", max_retries=0)  # chat ok, extraction fails
    memory = vector(flaky, settings, store, budget=5000)
    memory.turn(FLIGHT)
    assert memory.state()["facts_pending"] == 1
    assert not any("UA1432" in m["text"] for m in memory.state()["memories"] if m["kind"] == "fact")
    memory.turn("Any tips for tacos?")
    state = memory.state()
    assert state["facts_pending"] == 0 and any("UA1432" in m["text"] for m in state["memories"])


def test_background_extraction_loses_nothing_on_close(settings):
    client, store = get_client(settings), mongomock_store()
    memory = vector(client, settings, store, background=True)
    memory.turn(FLIGHT)
    memory.turn("My favorite color is teal.")
    memory.close()
    texts = " ".join(m["text"] for m in memory.state()["memories"])
    assert "UA1432" in texts and "teal" in texts


def test_import_extracts_facts(settings):
    client, store = get_client(settings), mongomock_store()
    memory = vector(client, settings, store)
    turns = [{"role": "user", "content": FLIGHT}, {"role": "assistant", "content": "Noted."}]
    state = import_turns(memory, turns)
    assert any("UA1432" in m["text"] for m in state["memories"])


def run_cli(stdin: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "ANTHROPIC_API_KEY": ""}
    return subprocess.run(
        [sys.executable, "-m", "helpers.chat", "--stage", "vector", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


@pytest.mark.slow
def test_cli_recalls_across_processes_and_users(tmp_path):
    session_file = str(tmp_path / ".session_id")
    # --budget is the vector stage's one context budget (persona, last exchange, summary and memories)
    common = ["--session-file", session_file, "--budget", "400", "--summary-max-tokens", "40"]
    lines = "\n".join([FLIGHT, *trip_script(100)]) + "\n"
    first = run_cli(lines, "--user", "maya", *common)
    assert first.returncode == 0, first.stderr
    state = json.loads(run_cli("", "--user", "maya", *common, "--show-state").stdout)
    assert any("UA1432" in m["text"] for m in state["memories"])
    shown = json.loads(run_cli("", "--user", "maya", *common, "--show-request", "What is my flight number?").stdout)
    assert "UA1432" in shown["system"][shown["system"].index(MEMORY_OPEN) :]
    assert "UA1432" in run_cli("What is my flight number?\n", "--user", "maya", *common).stdout
    assert "UA1432" not in run_cli("What is my flight number?\n", "--user", "bob", *common).stdout


# Noise for the relevance floor: turns about nothing the question asks (cosine to it near 0 with MiniLM)
NOISE = ["My printer keeps jamming on the second page.", "Quarterly invoices are due on the fifteenth."]


@pytest.mark.slow
def test_show_request_leaves_out_a_memory_below_the_floor_and_sends_the_relevant_one(tmp_path):
    """Through the CLI (`--import`, then `--show-request`): the turns whose cosine to the question is below
    inject.MIN_SIMILARITY are not in the printed request, the relevant one is. (Measured when this was written:
    with no floor, the same request's memory block carries the printer turn; the unit test
    tests/memory/test_vector.py::test_a_memory_below_the_relevance_floor_is_never_packed pins that cause.)"""
    from helpers.prompts import MEMORY_CLOSE
    from helpers.retrieval.embeddings import LocalMiniLM
    from helpers.retrieval.inject import MIN_SIMILARITY

    question = "Which town is my sister based in?"
    vectors = LocalMiniLM().embed([question, *NOISE])
    assert all(float(vectors[0] @ v) < MIN_SIMILARITY for v in vectors[1:])  # the premise: they are below it
    filler = [("user", "Thanks!"), ("assistant", "You're welcome.")] * 20  # the noise leaves the window
    turns = [
        ("user", "My sister Priya lives in Pasadena and she is a nurse."),
        ("assistant", "Noted: Pasadena."),
        ("user", NOISE[0]),
        ("assistant", "Try another paper tray."),
        ("user", NOISE[1]),
        ("assistant", "Noted."),
        *filler,
    ]
    transcript = tmp_path / "chat.jsonl"
    transcript.write_text("".join(json.dumps({"role": r, "content": c}) + "\n" for r, c in turns), encoding="utf-8")
    common = ["--user", f"floor-{tmp_path.name}", "--session-file", str(tmp_path / ".sid"), "--budget", "250"]
    imported = run_cli("", *common, "--import", str(transcript))
    assert imported.returncode == 0, imported.stderr
    shown = run_cli("", *common, "--show-request", question)
    assert shown.returncode == 0, shown.stderr
    request = json.loads(shown.stdout)
    system = request["system"]
    block = system[system.index(MEMORY_OPEN) : system.index(MEMORY_CLOSE)]
    assert "Pasadena" in block
    window = json.dumps(request["messages"])
    for noise in NOISE:
        assert noise not in block and noise not in window  # not in the block, nor sent any other way
    state = json.loads(run_cli("", *common, "--show-state").stdout)
    assert state["min_similarity"] == MIN_SIMILARITY and state["stored_turns"] == len(turns)


def _status_error(cls, code: int):
    import httpx

    request = httpx.Request("POST", "https://api.anthropic.com/v1/messages")
    return cls(f"{code} (test)", response=httpx.Response(code, request=request), body=None)


def test_background_retries_are_bounded_and_a_404_is_not_retried(settings, monkeypatch):
    """Issue 20: a 404 from the extraction model was retried on every later turn (12 turns: 78 calls); now each
    exchange is tried once and counted as skipped, and retryable failures wait in a list of at most
    FACTS_PENDING_MAX."""
    import anthropic

    client, store = get_client(settings), mongomock_store()
    memory = vector(client, settings, store, background=True)
    calls = []

    def not_found(*args, **kwargs):
        calls.append(args)
        raise _status_error(anthropic.NotFoundError, 404)

    monkeypatch.setattr(memory.long_term.facts, "remember", not_found)
    for i in range(12):
        memory.turn(f"Day {i}: my locker code is {4400 + i}.")
    memory.close()
    assert len(calls) == 12 and memory.long_term._retry == []
    assert memory.stats["memory_skipped"] == 12

    retry_store = mongomock_store()
    again = vector(client, settings, retry_store, background=True)
    monkeypatch.setattr(again.long_term, "FACTS_PENDING_MAX", 3)
    monkeypatch.setattr(
        again.long_term.facts,
        "remember",
        lambda *a, **k: (_ for _ in ()).throw(_status_error(anthropic.InternalServerError, 500)),
    )
    for i in range(8):
        again.turn(f"Day {i}: tacos near Echo Park?")
        assert len(again.long_term._retry) <= 3
    again.close()
    assert len(again.long_term._retry) <= 3 and again.stats["memory_skipped"] >= 1


def test_a_window_longer_than_the_candidate_list_still_counts_as_a_long_history(settings):
    """The history's length is what memory holds outside the window, not the (capped) candidates: a big budget
    keeps a long window, and a weak question must still give memories their long-history share."""
    from helpers.memory.transcript import read_transcript

    client, store = get_client(settings), mongomock_store("long-history")
    topics = ["ceramics", "sailing", "tax forms", "a violin", "sourdough", "rock climbing", "a vegetable garden"]
    lines = ["(conversation on 8 May, 2023)"]
    for i in range(100):
        lines.append(
            json.dumps(
                {
                    "role": "user" if i % 2 == 0 else "assistant",
                    "content": f"Day {i}: we talked about {topics[i % 7]} and what came of it at "
                    f"length, with plans for next week and the week after that.",
                }
            )
        )
    memory = VectorMemory(
        client, settings, store=store, user_id="maya", session_id="s", context_budget=1000, candidates=5
    )
    import_turns(memory, read_transcript(lines))
    window = memory.store.sessions.find_one({"session_id": "s"})["window"]
    outside = memory.long_term.outside_window({"window": window})
    assert len(window) > memory.long_term.candidates and outside >= len(window)
    memory.build_request("What did we say about the weather?")
    assert memory.recall.split.evidence == "long history" and memory.recall.split.memory_cap > 500
