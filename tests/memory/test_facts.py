"""Tests for helpers.memory.facts: dedup, supersede, extraction, the background worker, latency, isolation."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from datetime import timedelta

import pytest
from bson import ObjectId

from helpers.llm import get_client
from helpers.memory.facts import (
    CANDIDATE_THRESHOLD,
    DEDUP_THRESHOLD,
    FactMemory,
    FactWorker,
    measure_extraction_latency,
    near_duplicate,
)
from helpers.retrieval import MemoryIndex
from helpers.retrieval.embeddings import get_embedder

SRC = {"session_id": "s1", "seq": 1}


class Ledger:
    """Records (purpose, model) like helpers.pricing.CostLedger.record."""

    def __init__(self):
        self.calls = []

    def record(self, purpose, model, usage):
        self.calls.append((purpose, model))


@pytest.fixture
def client(settings):
    return get_client(settings)


@pytest.fixture
def facts(mock_store, client, settings):
    return FactMemory(mock_store, client=client, settings=settings, ledger=Ledger())


def docs(store, user="alice"):
    return list(store.memories.find({"user_id": user, "kind": "fact"}).sort("created_at", 1))


# ---------------------------------------------------------------------------- the thresholds


def similarity(a: str, b: str) -> float:
    vectors = get_embedder().embed([a, b])
    return float(vectors[0] @ vectors[1])


def test_measured_thresholds_separate_paraphrases_from_contradictions():
    """The evidence for DEDUP_THRESHOLD and CANDIDATE_THRESHOLD, re-measured on every run."""
    paraphrases = [
        ("The user's favorite color is teal.", "The user's favourite colour is teal."),
        ("The user's name is Alice.", "The user is named Alice."),
        ("The user lives in Denver.", "The user lives in Denver, Colorado."),
    ]
    contradictions = [
        ("The user lives in Denver.", "The user lives in Los Angeles."),
        ("The user's favorite color is teal.", "The user's favorite color is green."),
        ("The user works as a nurse.", "The user works as a software engineer."),
    ]
    unrelated = [
        ("The user lives in Denver.", "The user's favorite food is sushi."),
        ("The user's name is Alice.", "The user works as a nurse."),
    ]
    assert all(similarity(a, b) >= DEDUP_THRESHOLD for a, b in paraphrases)
    assert all(CANDIDATE_THRESHOLD <= similarity(a, b) < DEDUP_THRESHOLD for a, b in contradictions)
    assert all(similarity(a, b) < CANDIDATE_THRESHOLD for a, b in unrelated)


def test_numbers_and_negation_defeat_a_high_cosine():
    a, b = "The user's birthday is March 3.", "The user's birthday is March 4."
    assert similarity(a, b) >= DEDUP_THRESHOLD and not near_duplicate(a, b, similarity(a, b))
    a, b = "The user is allergic to peanuts.", "The user is not allergic to peanuts."
    assert similarity(a, b) >= DEDUP_THRESHOLD and not near_duplicate(a, b, similarity(a, b))
    assert near_duplicate("The user's flight is UA1432.", "The user's flight number is UA1432.", 0.935)


# ---------------------------------------------------------------------------- dedup


def test_exact_duplicate_touches_the_stored_fact(facts, mock_store):
    first = facts.add_facts("alice", ["The user lives in Denver."], SRC)[0]
    later = facts.add_facts("alice", ["  the user lives in denver "], {"session_id": "s2", "seq": 5})[0]
    assert first.action == "added" and later.action == "touched" and later.id == first.id
    [doc] = docs(mock_store)
    assert doc["seen_count"] == 2 and doc["updated_at"] >= doc["created_at"]
    assert doc["source"] == SRC  # where it was first said


def test_near_duplicate_updates_instead_of_adding(facts, mock_store):
    first = facts.add_facts("alice", ["The user's favorite color is teal."])[0]
    again = facts.add_facts("alice", ["The user's favourite colour is teal."])[0]
    assert again.action == "merged" and again.matched == first.id and again.similarity >= DEDUP_THRESHOLD
    [doc] = docs(mock_store)
    assert doc["text"] == "The user's favorite color is teal." and doc["seen_count"] == 2


def test_model_can_call_a_fact_a_duplicate(facts, mock_store):
    """Below the dedup threshold (0.90) but the same key and value: the reconcile call merges it."""
    first = facts.add_facts("alice", ["The user lives in Denver."])[0]
    again = facts.add_facts("alice", ["The user has moved to Denver."])[0]
    assert again.action == "merged" and again.matched == first.id and again.similarity < DEDUP_THRESHOLD
    assert len(docs(mock_store)) == 1
    assert ("reconcile", "claude-haiku-4-5") in facts.ledger.calls


def test_same_fact_for_two_users_is_stored_twice(facts, mock_store):
    a = facts.add_facts("alice", ["The user lives in Denver."])[0]
    b = facts.add_facts("bob", ["The user lives in Denver."])[0]
    assert a.action == b.action == "added" and a.id != b.id


def test_empty_and_overlong_facts_are_skipped(facts):
    results = facts.add_facts("alice", ["", "   ", "x" * 1000])
    assert [r.action for r in results] == ["skipped"] * 3
    with pytest.raises(TypeError):
        facts.add_facts("alice", "The user lives in Denver.")


# ---------------------------------------------------------------------------- supersede


def test_contradiction_supersedes_without_deleting(facts, mock_store):
    denver = facts.add_facts("alice", ["The user lives in Denver."], SRC)[0]
    facts.add_facts("alice", ["The user's favorite color is teal."], SRC)
    la = facts.add_facts("alice", ["The user lives in Los Angeles."], {"session_id": "s2", "seq": 3})[0]
    assert la.action == "added" and la.replaced == [denver.id]
    old = mock_store.memories.find_one({"_id": ObjectId(denver.id)})
    assert old["superseded_by"] == ObjectId(la.id) and old["valid_to"] is not None and old["active"] is False
    assert [d["text"] for d in facts.history("alice")] == [
        "The user lives in Denver.",
        "The user's favorite color is teal.",
        "The user lives in Los Angeles.",
    ]
    assert {h.text for h in facts.active("alice")} == {
        "The user's favorite color is teal.",
        "The user lives in Los Angeles.",
    }
    for mode in ("hybrid", "vector", "lexical"):
        texts = [h.text for h in facts.index.search("alice", "Does the user live in Denver?", k=10, mode=mode)]
        assert "The user lives in Denver." not in texts


def test_a_kill_between_storing_a_fact_and_superseding_the_old_one_is_finished_when_it_comes_again(facts, monkeypatch):
    """Issue 41, an import phase with no crash point before: the new fact stored, the old one not yet superseded.
    The fact carries what it replaces, so the import run again (which extracts it again) finishes the supersede."""
    from helpers.db import crash

    class Killed(BaseException):
        pass

    denver = facts.add_facts("alice", ["The user lives in Denver."])[0]
    monkeypatch.setenv("GTE_CRASH_AT", "facts:added")
    monkeypatch.setattr(crash, "EXIT", lambda code: (_ for _ in ()).throw(Killed()))
    crash.VISITS.clear()
    with pytest.raises(Killed):
        facts.add_facts("alice", ["The user lives in Los Angeles."])
    assert len(facts.active("alice")) == 2  # as the killed process left it: both active
    monkeypatch.delenv("GTE_CRASH_AT")
    again = facts.add_facts("alice", ["The user lives in Los Angeles."])[0]
    assert again.action == "touched" and again.replaced == [denver.id]
    assert [h.text for h in facts.active("alice")] == ["The user lives in Los Angeles."]
    assert facts.add_facts("alice", ["The user lives in Los Angeles."])[0].replaced == []  # nothing owed now


def test_stating_an_old_value_again_supersedes_the_newer_one(facts):
    facts.add_facts("alice", ["The user lives in Denver."])
    la = facts.add_facts("alice", ["The user lives in Los Angeles."])[0]
    back = facts.add_facts("alice", ["The user lives in Denver."])[0]
    assert back.action == "added" and back.replaced == [la.id]  # the superseded Denver fact is history, not a match
    assert [h.text for h in facts.active("alice")] == ["The user lives in Denver."]
    assert len(facts.history("alice")) == 3


def test_numbers_differ_so_the_model_decides(facts):
    march3 = facts.add_facts("alice", ["The user's birthday is March 3."])[0]
    march4 = facts.add_facts("alice", ["The user's birthday is March 4."])[0]
    assert march4.action == "added" and march4.replaced == [march3.id]


def test_facts_that_can_all_hold_are_kept(facts):
    facts.add_facts("alice", ["The user loves hiking.", "The user loves surfing.", "The user is allergic to peanuts."])
    assert len(facts.active("alice")) == 3


def test_without_a_client_dedup_works_but_nothing_is_superseded(mock_store, settings):
    facts = FactMemory(mock_store, settings=settings)
    facts.add_facts("alice", ["The user lives in Denver.", "The user lives in Denver."])
    facts.add_facts("alice", ["The user lives in Los Angeles."])
    assert len(facts.active("alice")) == 2 and facts.stats["touched"] == 1
    with pytest.raises(Exception, match="needs a client"):
        facts.extract_and_store("alice", [{"role": "user", "content": "I live in Paris."}])


def test_a_failing_contradiction_check_still_stores_the_fact(mock_store, settings):
    failing = get_client(settings, faults="500x*", max_retries=0)
    facts = FactMemory(mock_store, client=failing, settings=settings)
    facts.add_facts("alice", ["The user lives in Denver."])
    result = facts.add_facts("alice", ["The user lives in Los Angeles."])[0]
    assert result.action == "added" and result.reconciled is False and facts.stats["reconcile_errors"] == 1
    assert len(facts.active("alice")) == 2


def test_reconcile_parses_the_model_reply(facts):
    assert facts.reconcile(
        "The user lives in Los Angeles.",
        ["The user lives in Denver.", "The user loves jazz.", "The user lives in Los Angeles"],
    ) == ([0], [2])


# ---------------------------------------------------------------------------- extraction and episodes


def test_extract_and_store_from_an_exchange(facts, mock_store):
    exchange = [
        {"role": "user", "content": "My name is Bob and I live in Denver."},
        {"role": "assistant", "content": "Nice to meet you, Bob!"},
    ]
    results = facts.extract_and_store("bob", exchange, {"session_id": "s9", "seq": 11})
    assert [r.text for r in results] == ["The user's name is Bob.", "The user lives in Denver."]
    assert all(d["source"] == {"session_id": "s9", "seq": 11} for d in docs(mock_store, "bob"))
    assert [purpose for purpose, _ in facts.ledger.calls].count("extraction") == 1


def test_remember_stores_facts_and_the_episode(facts, mock_store):
    exchange = [
        {"role": "user", "content": "My flight is UA1432 on March 3."},
        {"role": "assistant", "content": [{"type": "text", "text": "Have a good trip!"}]},
    ]
    remembered = facts.remember("alice", exchange, {"session_id": "s1", "seq": 5})
    assert [r.text for r in remembered.facts] == ["The user's flight is UA1432 on March 3."]
    episode = mock_store.memories.find_one({"_id": ObjectId(remembered.episode_id)})
    assert episode["kind"] == "episode"
    assert episode["text"] == "User: My flight is UA1432 on March 3.\nAssistant: Have a good trip!"
    assert facts.remember("alice", exchange, {"session_id": "s1", "seq": 5}).episode_id == remembered.episode_id


def test_ttl_pushes_expiry_back_when_a_fact_is_stated_again(facts, mock_store):
    facts.ensure_ttl_index(86_400)
    first = facts.add_facts("alice", ["The user lives in Denver."])[0]
    before = mock_store.memories.find_one({"_id": ObjectId(first.id)})["expires_at"]
    time.sleep(0.01)
    facts.add_facts("alice", ["The user lives in Denver."])
    after = mock_store.memories.find_one({"_id": ObjectId(first.id)})
    assert after["expires_at"] > before and after["expires_at"] - after["updated_at"] == timedelta(days=1)


# ---------------------------------------------------------------------------- isolation


@pytest.mark.parametrize("bad", [{"$ne": None}, None, 1, ["alice"], ""])
def test_bad_user_ids_are_rejected(facts, bad):
    with pytest.raises(ValueError):
        facts.add_facts(bad, ["The user lives in Denver."])
    with pytest.raises(ValueError):
        facts.extract_and_store(bad, [{"role": "user", "content": "I live in Denver."}])
    with pytest.raises(ValueError):
        facts.history(bad)


def test_a_users_facts_never_dedup_or_supersede_another_users(facts):
    facts.add_facts("alice", ["The user lives in Denver."])
    facts.add_facts('{"$ne": null}', ["The user lives in Los Angeles."])
    assert [h.text for h in facts.active("alice")] == ["The user lives in Denver."]
    assert [h.text for h in facts.active('{"$ne": null}')] == ["The user lives in Los Angeles."]


# ---------------------------------------------------------------------------- the background worker


def test_worker_stores_everything_submitted(facts, mock_store):
    worker = FactWorker(facts, maxsize=8)
    for i in range(50):
        exchange = [{"role": "user", "content": f"I love dish number {i}."}, {"role": "assistant", "content": "Yum."}]
        worker.submit(f"user{i % 5}", exchange, {"session_id": "s", "seq": 2 * i + 1})
    assert worker.close() is True
    assert worker.done == 50 and worker.error_count == 0 and worker.pending == 0
    assert mock_store.memories.count_documents({"kind": "episode"}) == 50
    assert mock_store.memories.count_documents({"kind": "fact", "active": True}) == 50
    with pytest.raises(RuntimeError, match="closed"):
        worker.submit("user0", [{"role": "user", "content": "hi"}])


def test_submit_blocks_when_full_and_drops_nothing():
    done, release = [], threading.Event()

    def slow(user_id, messages, source):
        release.wait(5)
        done.append(source)

    worker = FactWorker(handler=slow, maxsize=2)
    for seq in range(3):  # one running + two queued
        worker.submit("u", [], seq)
    blocked = threading.Thread(target=worker.submit, args=("u", [], 3))
    blocked.start()
    blocked.join(0.2)
    assert blocked.is_alive()  # back-pressure: the fourth waits for room
    release.set()
    blocked.join(5)
    assert worker.close(timeout=5) and sorted(done) == [0, 1, 2, 3]


def test_worker_errors_are_counted_kept_and_reported():
    def flaky(user_id, messages, source):
        if source % 3 == 0:
            raise RuntimeError(f"boom {source}")

    worker = FactWorker(handler=flaky)
    for seq in range(9):
        worker.submit("u", [], seq)
    with pytest.warns(RuntimeWarning, match="3 of 9 jobs failed"):
        worker.close()
    assert worker.error_count == 3 and worker.done == 6
    assert [e.error for e in worker.errors] == ["RuntimeError: boom 0", "RuntimeError: boom 3", "RuntimeError: boom 6"]
    assert "Traceback" in worker.errors[0].traceback


def test_worker_rejects_bad_user_ids_in_the_callers_thread():
    worker = FactWorker(handler=lambda *args: None)
    with pytest.raises(ValueError):
        worker.submit({"$ne": None}, [])
    worker.close()


@pytest.mark.slow
def test_worker_drains_at_interpreter_exit(tmp_path):
    """No close() call: the atexit hook still stores everything queued before the process ends."""
    out = tmp_path / "stored.txt"
    script = textwrap.dedent(f"""
        import time
        from helpers.memory.facts import FactWorker

        def slow_store(user_id, messages, source):
            time.sleep(0.02)
            with open({str(out)!r}, "a") as f:
                f.write(f"{{source}}\\n")

        worker = FactWorker(handler=slow_store, maxsize=4)
        for i in range(20):
            worker.submit("u", [], i)
        print("submitted", worker.pending <= 20)
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert sorted(int(x) for x in out.read_text().split()) == list(range(20))


# ---------------------------------------------------------------------------- latency, real server


def test_measure_extraction_latency(facts):
    exchanges = [(f"My favorite number is {i}.", "Noted.") for i in range(4)]
    report = measure_extraction_latency(facts, exchanges)
    assert report["turns"] == 4 and report["worker_errors"] == 0
    assert report["stored"] == {"sync": 5, "worker": 5}  # the same memories either way: 1 current fact + 4 episodes
    assert report["worker_submit_ms"]["p50"] < report["sync_ms"]["p50"]  # the point of the worker
    assert facts.active("latency-demo-sync") == []  # cleaned up


def test_dedup_and_supersede_on_the_local_server(local_store, client, settings):
    facts = FactMemory(local_store, client=client, settings=settings, index=MemoryIndex(local_store))
    denver = facts.add_facts("alice", ["The user lives in Denver."])[0]
    assert facts.add_facts("alice", ["The user lives in Denver."])[0].action == "touched"
    assert facts.add_facts("alice", ["The user lives in Denver, Colorado."])[0].action == "merged"
    la = facts.add_facts("alice", ["The user lives in Los Angeles."])[0]
    assert la.replaced == [denver.id]
    old = local_store.memories.find_one({"_id": ObjectId(denver.id)})
    assert old["seen_count"] == 3 and old["superseded_by"] == ObjectId(la.id) and old["valid_to"] is not None
    hits = facts.index.search("alice", "where does the user live", k=3)
    assert [h.text for h in hits] == ["The user lives in Los Angeles."]
