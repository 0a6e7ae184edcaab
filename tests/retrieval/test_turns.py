"""Turn memories (helpers.retrieval.schema.TurnUnit, MemoryIndex.add_turns), the injector (helpers.retrieval.inject) + helpers.memory.importer + VectorMemory's context budget: turn memories, dates, packing, import."""

from datetime import datetime, timedelta, timezone

import pytest

from helpers.config import load_settings
from helpers.llm import get_client
from helpers.retrieval.inject import Packing, day_label, format_block, pack_by_value
from helpers.retrieval.schema import TurnUnit
from helpers.memory import VectorMemory
from helpers.offline import count_text_tokens
from helpers.sim.scripts import trip_script
from helpers.db.store import mongomock_store
from helpers.retrieval import Hit, MemoryIndex
from helpers.memory.importer import import_turns

START = datetime(2023, 5, 8, 14, 0, tzinfo=timezone.utc)
FACT = "Oh, and my daughter Elsie has her first piano recital at the Colburn School this spring."


@pytest.fixture
def settings():
    return load_settings({})


def hit(i, value, text, session="s", seq=None, when=START):
    return Hit(f"h{i}", "episode", text, value, when, {"session_id": session, "seq": i if seq is None else seq}, when,
               similarity=value)


def test_pack_prefers_value_per_token_and_fits():
    long = hit(1, 1.0, "Caroline: " + "a long story about the weekend " * 40)
    short = [hit(i, 0.9, f"Melanie: short relevant line {i}.") for i in (2, 3)]
    packed = pack_by_value([long, *short], 100, count_text_tokens)
    assert {h.id for h in packed} == {"h2", "h3"}
    assert count_text_tokens(format_block(packed)) <= 100
    by_rank = pack_by_value([long, *short], 600, count_text_tokens, packing=Packing(cost_power=0.0))
    assert by_rank[0].id == "h1"


def test_block_dates_every_memory_and_marks_only_this_conversation():
    older = hit(1, 0.9, "Caroline: I moved to Denver.", session="old", when=START)
    here = hit(2, 0.8, "User: my locker code is 4411.", session="now", seq=12, when=START + timedelta(days=30))
    block = format_block([here, older], session_id="now", since_seq=10)
    assert block.index("[Monday 8 May 2023]") < block.index("Caroline: I moved to Denver.")
    assert f"[{day_label(here.created_at)} · earlier in this conversation]" in block
    assert "· earlier in this conversation" not in format_block([older], session_id="now")
    assert "earlier conversations" not in block  # the header does not claim every memory is from another session


def test_add_turns_keeps_both_speakers_dates_and_is_idempotent(settings):
    store = mongomock_store()
    index = MemoryIndex(store)
    units = [TurnUnit(1, "user", "I started pottery classes.", START, "Caroline"),
             TurnUnit(2, "assistant", "Try the studio on Fig Street.", START)]
    assert len(index.add_turns("u", "s", units)) == 2
    assert index.add_turns("u", "s", units) == []
    docs = sorted(store.memories.find({"user_id": "u"}), key=lambda d: d["source"]["seq"])
    assert [d["text"] for d in docs] == ["Caroline: I started pottery classes.",
                                         "Assistant: Try the studio on Fig Street."]
    assert all(d["created_at"].replace(tzinfo=timezone.utc) == START for d in docs)


def dated_transcript(sessions=5, per_session=40):
    """A multi-session transcript: FACT in the first session, filler questions after it, one session every 9 days."""
    filler = iter(trip_script(sessions * per_session)[5:] * 2)
    turns = []
    for s in range(sessions):
        day = START + timedelta(days=9 * s)
        for i in range(per_session // 2):
            user = FACT if (s, i) == (0, 1) else next(filler)
            turns += [{"role": "user", "content": user, "ts": (day + timedelta(minutes=2 * i)).isoformat()},
                      {"role": "assistant", "content": f"Noted. Anything else about {user.split()[-1]}",
                       "ts": (day + timedelta(minutes=2 * i + 1)).isoformat()}]
    return turns


def test_import_keeps_dates_and_a_fact_from_200_turns_ago_is_in_the_request(settings, monkeypatch):
    client, store = get_client(settings), mongomock_store()
    calls = []
    create = client.messages.create
    monkeypatch.setattr(client.messages, "create", lambda **kw: calls.append(kw["system"][:40]) or create(**kw))
    memory = VectorMemory(client, settings, store=store, user_id="maya", session_id="s1", context_budget=1000)
    result = import_turns(memory, dated_transcript())
    assert result["imported"] == 200 and result["conversations"] == 5
    summaries = [c for c in calls if c.startswith("You maintain the rolling summary")]
    extractions = [c for c in calls if c.startswith("You extract durable facts")]
    # every turn that left the window is summarised, in batched calls within the pending bound (issue 20), each
    # with its retention check's extraction; facts over 8 exchanges per call: 13 for 100 exchanges
    assert result["pending"] == 0 and result["unsummarised"] == 0 and result["summary_calls"] >= len(summaries)
    assert len(summaries) == -(-result["summary_covers"]["count"] // 40) and len(extractions) == 13 + len(summaries)
    request = memory.build_request("Where is Elsie performing music?")
    system = request["system"]
    assert "Colburn School" in system and "[Monday 8 May 2023]" in system
    assert system.index("[Monday 8 May 2023]") < system.index("Colburn School")
    split = memory.state()["split"]
    assert split["window"] + split["summary"] + split["memories"] <= 1000
    stranger = VectorMemory(client, settings, store=store, user_id="bob", session_id="s9", context_budget=1000)
    assert "Colburn" not in stranger.build_request("Where is Elsie performing music?")["system"]


def test_another_sessions_memory_is_not_hidden_by_a_window_seq(settings):
    client, store = get_client(settings), mongomock_store()
    first = VectorMemory(client, settings, store=store, user_id="maya", session_id="a", budget=400)
    first.turn("My locker combination at the climbing gym is 4411.")
    second = VectorMemory(client, settings, store=store, user_id="maya", session_id="b", budget=400)
    second.turn("Hello again!")  # seqs 1 and 2 of session b are now in its window, like the memory's in session a
    block, hits = second.retrieve("What is my locker combination?", second.load(create=False))
    assert "4411" in block and any((h.source or {}).get("session_id") == "a" for h in hits)


def test_neighbour_expansion_adds_the_turn_after_a_hit_when_room_is_left(settings):
    from helpers.retrieval.inject import with_neighbours

    store = mongomock_store()
    index = MemoryIndex(store)
    index.add_turns("u", "s", [TurnUnit(7, "user", "Guess where we are going in June?", START, "Caroline"),
                                  TurnUnit(8, "assistant", "Lisbon! We booked it yesterday.", START, "Melanie"),
                                  TurnUnit(9, "user", "Unrelated chatter about rain.", START, "Caroline")])
    top = [h for h in index.search("u", "Where are we going in June?", k=3) if h.source["seq"] == 7]
    one = Packing(neighbours=1)
    grown = with_neighbours(index, "u", top, 400, count_text_tokens, packing=one, exclude={("s", 6)})
    assert [h.source["seq"] for h in grown] == [7, 8]  # seq 6 does not exist; 8 follows the hit
    assert with_neighbours(index, "u", top, 400, count_text_tokens, packing=Packing(neighbours=0)) == top
    assert with_neighbours(index, "u", top, 400, count_text_tokens, packing=one, exclude={("s", 8)}) == top


def test_import_keeps_the_other_sides_recommendations_and_agreed_plans_as_facts(settings):
    client, store = get_client(settings), mongomock_store()
    memory = VectorMemory(client, settings, store=store, user_id="maya", session_id="s1", context_budget=1000)
    day = START.isoformat()
    turns = [("user", "Any book tips? I've been doom-scrolling every night."),
             ("assistant", "If you want something for the train, read Piranesi by Susanna Clarke. I loved it."),
             ("user", "Are we doing the pottery thing or not?"),
             ("assistant", "Yes! Let's do the pottery class at Clay Corner studio on Saturday."),
             ("user", "Ha, deal."),
             ("assistant", "My dog Bramble stole a baguette off the counter today.")]
    import_turns(memory, [{"role": r, "content": c, "ts": day} for r, c in turns])
    facts = [h.text for h in memory.long_term.facts.active("maya")]
    assert any("recommended" in f and "Piranesi by Susanna Clarke" in f for f in facts), facts
    assert any("agreed" in f and "Clay Corner studio" in f for f in facts), facts
    assert not any("Bramble" in f for f in facts), facts  # the other side's own life is not a fact about the user


def test_append_logs_gives_gap_free_seqs_and_falls_back_when_a_concurrent_writer_took_one(monkeypatch):
    store = mongomock_store()
    assert store.append_logs("u", "s", [{"role": "user", "content": "a", "tokens": 3, "extra": {"ts": START}},
                                        {"role": "assistant", "content": "b"}], status="pending") == [1, 2]
    store.append_log("u", "s", "user", "other writer")  # seq 3
    real, reads = store._max_seq, []
    # the first read is stale (seq 1): the batch's seqs 2 and 3 are taken, and it must not overwrite or skip any
    monkeypatch.setattr(store, "_max_seq", lambda key, hint: 1 if not reads.append(1) and len(reads) == 1 else real(key, hint))
    seqs = store.append_logs("u", "s", [{"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}])
    monkeypatch.undo()
    logs = store.logs_for("u", "s")
    assert [(d["seq"], d["content"]) for d in logs] == [(1, "a"), (2, "b"), (3, "other writer"), (4, "c"), (5, "d")]
    assert seqs == [4, 5] and logs[0]["status"] == "pending" and logs[0]["ts"].replace(tzinfo=timezone.utc) == START
