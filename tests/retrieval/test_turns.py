"""Turn memories (helpers.retrieval.schema.TurnUnit, MemoryIndex.add_turns), the injector (helpers.retrieval.inject) + helpers.memory.importer + VectorMemory's context budget: turn memories, dates, packing, import."""

from datetime import datetime, timedelta, timezone

import pytest

from helpers.config import load_settings
from helpers.db.store import mongomock_store
from helpers.llm import get_client
from helpers.memory import VectorMemory
from helpers.memory.importer import _chunks, import_turns, informative, name_parties
from helpers.offline import count_text_tokens
from helpers.retrieval import Hit, MemoryIndex
from helpers.retrieval.inject import Packing, day_label, format_block, in_context, pack_by_value
from helpers.retrieval.schema import TurnUnit, date_notes, turn_text
from helpers.sim.scripts import trip_script

START = datetime(2023, 5, 8, 14, 0, tzinfo=timezone.utc)
FACT = "Oh, and my daughter Elsie has her first piano recital at the Colburn School this spring."


@pytest.fixture
def settings():
    return load_settings({})


def hit(i, value, text, session="s", seq=None, when=START):
    return Hit(
        f"h{i}",
        "episode",
        text,
        value,
        when,
        {"session_id": session, "seq": i if seq is None else seq},
        when,
        similarity=value,
    )


def test_pack_takes_the_best_first_and_fits():
    long = hit(1, 1.0, "Caroline: " + "a long story about the weekend " * 40)
    short = [hit(i, 0.9 - i / 100, f"Melanie: thanks {i}!") for i in (2, 3)]
    by_rank = pack_by_value([long, *short], 600, count_text_tokens)
    assert [h.id for h in by_rank] == ["h1", "h2", "h3"]  # the best hit is not traded for cheap chit-chat
    assert [h.id for h in pack_by_value([long, *short], 100, count_text_tokens)] == ["h2", "h3"]  # it does not fit
    assert count_text_tokens(format_block(by_rank)) <= 600
    per_token = pack_by_value([long, *short], 300, count_text_tokens, packing=Packing(cost_power=1.0))
    assert {h.id for h in per_token} == {"h2", "h3"}  # by value per token, the cheap lines go first


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
    units = [
        TurnUnit(1, "user", "I started pottery classes.", START, "Caroline"),
        TurnUnit(2, "assistant", "Try the studio on Fig Street.", START),
    ]
    assert len(index.add_turns("u", "s", units)) == 2
    assert index.add_turns("u", "s", units) == []
    docs = sorted(store.memories.find({"user_id": "u"}), key=lambda d: d["source"]["seq"])
    assert [d["text"] for d in docs] == [
        "Caroline: I started pottery classes.",
        "Assistant: Try the studio on Fig Street.",
    ]
    assert all(d["created_at"].replace(tzinfo=timezone.utc) == START for d in docs)


def dated_transcript(sessions=5, per_session=40):
    """A multi-session transcript: FACT in the first session, filler questions after it, one session every 9 days."""
    filler = iter(trip_script(sessions * per_session)[5:] * 2)
    turns = []
    for s in range(sessions):
        day = START + timedelta(days=9 * s)
        for i in range(per_session // 2):
            user = FACT if (s, i) == (0, 1) else next(filler)
            turns += [
                {"role": "user", "content": user, "ts": (day + timedelta(minutes=2 * i)).isoformat()},
                {
                    "role": "assistant",
                    "content": f"Noted. Anything else about {user.split()[-1]}",
                    "ts": (day + timedelta(minutes=2 * i + 1)).isoformat(),
                },
            ]
    return turns


@pytest.mark.slow
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
    # with its retention check's extraction; facts over up to 8 exchanges per call, never across two
    # conversations: 3 calls for each 20-exchange session
    assert result["pending"] == 0 and result["unsummarised"] == 0 and result["summary_calls"] >= len(summaries)
    assert len(summaries) == -(-result["summary_covers"]["count"] // 40) and len(extractions) == 5 * 3 + len(summaries)
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
    index.add_turns(
        "u",
        "s",
        [
            TurnUnit(7, "user", "Guess where we are going in June?", START, "Caroline"),
            TurnUnit(8, "assistant", "Lisbon! We booked it yesterday.", START, "Melanie"),
            TurnUnit(9, "user", "Unrelated chatter about rain.", START, "Caroline"),
        ],
    )
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
    turns = [
        ("user", "Any book tips? I've been doom-scrolling every night."),
        ("assistant", "If you want something for the train, read Piranesi by Susanna Clarke. I loved it."),
        ("user", "Are we doing the pottery thing or not?"),
        ("assistant", "Yes! Let's do the pottery class at Clay Corner studio on Saturday."),
        ("user", "Ha, deal."),
        ("assistant", "My dog Bramble stole a baguette off the counter today."),
    ]
    import_turns(memory, [{"role": r, "content": c, "ts": day} for r, c in turns])
    facts = [h.text for h in memory.long_term.facts.active("maya")]
    assert any("recommended" in f and "Piranesi by Susanna Clarke" in f for f in facts), facts
    assert any("agreed" in f and "Clay Corner studio" in f for f in facts), facts
    assert not any("Bramble" in f for f in facts), facts  # the other side's own life is not a fact about the user


def test_append_logs_gives_gap_free_seqs_and_falls_back_when_a_concurrent_writer_took_one(monkeypatch):
    store = mongomock_store()
    assert store.append_logs(
        "u",
        "s",
        [{"role": "user", "content": "a", "tokens": 3, "extra": {"ts": START}}, {"role": "assistant", "content": "b"}],
        status="pending",
    ) == [1, 2]
    store.append_log("u", "s", "user", "other writer")  # seq 3
    real, reads = store._max_seq, []
    # the first read is stale (seq 1): the batch's seqs 2 and 3 are taken, and it must not overwrite or skip any
    monkeypatch.setattr(
        store, "_max_seq", lambda key, hint: 1 if not reads.append(1) and len(reads) == 1 else real(key, hint)
    )
    seqs = store.append_logs("u", "s", [{"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}])
    monkeypatch.undo()
    logs = store.logs_for("u", "s")
    assert [(d["seq"], d["content"]) for d in logs] == [(1, "a"), (2, "b"), (3, "other writer"), (4, "c"), (5, "d")]
    assert seqs == [4, 5] and logs[0]["status"] == "pending" and logs[0]["ts"].replace(tzinfo=timezone.utc) == START


def test_turn_text_resolves_relative_dates_against_the_day_it_was_said():
    said = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)  # a Monday
    text = turn_text(
        "user", "I went to a group yesterday; last Friday I painted. Two weeks ago, last year.", "Ana", said
    )
    assert text.startswith("Ana: I went to a group yesterday; last Friday I painted. Two weeks ago, last year.")
    assert "yesterday = Sunday 7 May 2023" in text and "last friday = Friday 5 May 2023" in text
    assert "two weeks ago = Monday 24 April 2023" in text and "last year = 2022" in text
    assert date_notes("Last week was fun, see you next Sunday.", said) == [
        "last week = the week before Monday 8 May 2023",
        "next sunday = Sunday 14 May 2023",
    ]
    assert turn_text("user", "Yesterday was fine.", "Ana") == "Ana: Yesterday was fine."  # undated: no note
    assert date_notes("I love today's weather, said the yesterdays band", said) == ["today = Monday 8 May 2023"]
    assert date_notes("A gift for my 18th birthday ten years ago; twelve days ago; seventy years ago.", said) == [
        "ten years ago = 2013",
        "twelve days ago = Wednesday 26 April 2023",
    ]  # counts in words up to twenty
    assert date_notes("Last Fri I took the kids; last Tues. too; the last sunset.", said) == [
        "last fri = Friday 5 May 2023",
        "last tues = Tuesday 2 May 2023",
    ]  # weekdays shortened, not "sun" in sunset


def test_imported_facts_keep_the_speakers_names_and_say_something():
    assert (
        name_parties("The user adopted a dog; the assistant's cat is Tom.", "Ana", "Ben")
        == "Ana adopted a dog; Ben's cat is Tom."
    )
    assert name_parties("The user adopted a dog.", None, "Ben") == "The user adopted a dog."  # unnamed: kept
    assert informative("Ana went to Paris yesterday.", ("Ana", "Ben"))
    assert not informative("Ana totally agrees, Ben.", ("Ana", "Ben"))
    assert not informative("Yes, the user did.")


def test_fact_batches_never_span_two_conversations():
    groups = [[{"seq": 2 * i}, {"seq": 2 * i + 1}] for i in range(12)]
    conversation = {2 * i: (0 if i < 3 else 1) for i in range(12)}
    chunks = _chunks(groups, conversation)
    assert [len(c) // 2 for c in chunks] == [3, 8, 1]
    assert [m["seq"] for c in chunks for m in c] == list(range(24))


def test_a_turn_beside_the_match_gains_from_its_neighbour():
    question_turn = hit(1, 1.0, "Melanie: Where did you go last weekend?", seq=10)
    answer_turn = hit(2, 0.5, "Caroline: Paris! It was lovely.", seq=11)
    lone = hit(3, 0.6, "Caroline: a weekend at home.", seq=40)
    fact = Hit("f", "fact", "Caroline went to Paris.", 0.55, START, {"session_id": "s", "seq": 10}, START)
    hits = [question_turn, answer_turn, lone, fact]
    values = in_context(hits, [1.0, 0.5, 0.6, 0.55], 0.3)
    assert values == pytest.approx([1.15, 0.8, 0.6, 0.55])  # facts and lone turns keep their value
    assert in_context(hits, [1.0, 0.5, 0.6, 0.55], 0.0) == [1.0, 0.5, 0.6, 0.55]
    room = count_text_tokens(format_block([question_turn, answer_turn])) + 2
    assert {h.id for h in pack_by_value(hits[:3], room, count_text_tokens)} == {"h1", "h2"}
    assert "h3" in {h.id for h in pack_by_value(hits[:3], room, count_text_tokens, packing=Packing(context=0.0))}
