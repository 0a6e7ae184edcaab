"""BM25 reads a turn with the new words of the turns beside it (helpers.retrieval.cache, NEIGHBOUR_WORDS): a reply
is found by the words of what it answers; only direct neighbours of the same conversation count, never a fact,
never a forgotten turn, and the index is the same whatever order the turns arrive in."""

from datetime import datetime, timezone

import pytest

from helpers.db.store import mongomock_store
from helpers.retrieval import MemoryIndex
from helpers.retrieval.cache import NEIGHBOUR_WORDS, PROJECTION, UserRows
from helpers.retrieval.embeddings import LocalMiniLM
from helpers.retrieval.schema import TurnUnit

START = datetime(2023, 5, 8, 14, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def embedder():
    return LocalMiniLM()


def opening(index: MemoryIndex, session: str = "s", first: int = 1) -> None:
    index.add_turns(
        "u",
        session,
        [
            TurnUnit(first, "user", "The official opening night of my studio is tomorrow.", START, "Jon"),
            TurnUnit(first + 1, "assistant", "I want to savor all the good vibes with you.", START, "Gina"),
            TurnUnit(first + 2, "user", "Thanks, that means a lot.", START, "Jon"),
            TurnUnit(first + 3, "assistant", "We should book a table somewhere quiet afterwards.", START, "Gina"),
        ],
    )


def test_a_reply_is_found_by_the_words_of_the_turn_it_answers(embedder):
    index = MemoryIndex(mongomock_store(), embedder)
    opening(index)
    hits = index.search("u", "opening night studio", k=10, mode="lexical")
    texts = [h.text for h in hits]
    assert NEIGHBOUR_WORDS > 0
    assert texts[0].startswith("Jon: The official opening night")  # its own words rank first
    assert "Gina: I want to savor all the good vibes with you." in texts  # the reply, through its neighbour
    assert not any(t.startswith("Gina: We should book") for t in texts)  # two turns away: not a neighbour
    # and the other way: the turn before a reply is found by the reply's words
    assert any(h.text.startswith("Jon: The official") for h in index.search("u", "savor vibes", k=10, mode="lexical"))


def test_the_speaker_label_is_not_lent_and_own_words_are_not_counted_twice(embedder):
    index = MemoryIndex(mongomock_store(), embedder)
    opening(index)
    rows = index._rows("u")
    reply = next(r for r in range(rows.n) if rows.text(r).startswith("Gina: I want"))
    own, document = rows.words(reply)[0], rows.postings.document(reply)
    assert document["jon"] == 0 and own["gina"] == 1  # Jon's label stays his; her own label is hers
    assert document["opening"] == 1 and document["savor"] == 1
    assert rows.doc_len[reply] == sum(document.values()) > sum(own.values())


def test_only_turns_of_the_same_conversation_are_neighbours_and_facts_lend_nothing(embedder):
    index = MemoryIndex(mongomock_store(), embedder)
    opening(index, session="s", first=1)
    index.add_turns("u", "t", [TurnUnit(3, "user", "Paragliding over the volcano was wild.", START, "Jon")])
    fact = index.new_doc(
        "u", "fact", "Jon owns a paragliding harness.", embedder.embed_one("harness"), {"session_id": "s", "seq": 2}
    )
    index.insert(fact)
    texts = [h.text for h in index.search("u", "paragliding volcano harness", k=10, mode="lexical")]
    assert sorted(texts) == ["Jon owns a paragliding harness.", "Jon: Paragliding over the volcano was wild."]


def test_a_forgotten_turn_lends_its_words_no_more(embedder):
    index = MemoryIndex(mongomock_store(), embedder)
    opening(index)
    first = next(
        h for h in index.search("u", "opening night", k=10, mode="lexical") if h.text.startswith("Jon: The official")
    )
    assert index.forget("u", [first.id]) == 1
    assert index.search("u", "opening night studio", k=10, mode="lexical") == []


def test_the_index_is_the_same_whatever_order_the_turns_arrive_in(embedder):
    index = MemoryIndex(mongomock_store(), embedder)
    opening(index)
    docs = list(index.store.memories.find({"user_id": "u"}, PROJECTION))
    forward, backward = UserRows(embedder.dim), UserRows(embedder.dim)
    for doc in docs:
        forward.upsert(doc)
    for doc in reversed(docs):
        backward.upsert(doc)
    by_id = lambda rows: {rows.object_id(r): (rows.postings.document(r), rows.doc_len[r]) for r in range(rows.n)}  # noqa: E731
    assert by_id(forward) == by_id(backward) == by_id(index._rows("u"))
