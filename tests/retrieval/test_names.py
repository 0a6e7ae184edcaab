"""The people of an imported conversation as a filter (helpers.retrieval.names, MemoryIndex.search): names left
out of the embedded question, the person asked about's own turns boosted, nothing changed for a User/Assistant chat."""

from datetime import datetime, timezone

import numpy as np
import pytest

from helpers.db.store import mongomock_store
from helpers.retrieval import MemoryIndex
from helpers.retrieval.embeddings import LocalMiniLM
from helpers.retrieval.names import SPEAKER_BOOST, boost_speaker, named, speaker_of, without_names
from helpers.retrieval.schema import TurnUnit

START = datetime(2023, 5, 8, 14, 0, tzinfo=timezone.utc)
PEOPLE = ["Caroline", "Melanie"]


def test_speaker_of_reads_the_named_speaker_a_turn_starts_with():
    assert speaker_of("Caroline: I went to a support group.") == "Caroline"
    assert speaker_of("Mary Ann Lee: hi") == "Mary Ann Lee"
    assert speaker_of("User: my locker code is 4411.") is None  # the unnamed roles are not people
    assert speaker_of("Assistant: Try the studio.") is None
    assert speaker_of("no speaker here") is None
    assert speaker_of("This is a long sentence before a colon: and more") is None  # not a name (over 3 words)


def test_named_finds_whole_names_and_possessives_once_each():
    assert named("What did Caroline's mom and Melanie talk about with Caroline?", PEOPLE) == ["Caroline", "Melanie"]
    assert named("What did Carolines do?", PEOPLE) == []  # whole words only
    assert named("When did Melanie paint a sunrise?", []) == []


def test_without_names_takes_the_names_out_and_never_empties_the_query():
    assert without_names("What did Caroline's mom say to Melanie?", PEOPLE) == "What did mom say to ?"
    assert without_names("Caroline?", PEOPLE) == "Caroline?"  # nothing else would be left
    assert without_names("What is my locker code?", []) == "What is my locker code?"


class Recording:
    """LocalMiniLM that records the texts it embeds (the questions, here)."""

    def __init__(self):
        self.inner, self.seen = LocalMiniLM(), []
        self.name, self.dim = self.inner.name, self.inner.dim

    def embed(self, texts):
        self.seen.extend(texts)
        return self.inner.embed(texts)

    def embed_one(self, text):
        return self.embed([text])[0]


def conversation(index: MemoryIndex) -> None:
    index.add_turns(
        "u",
        "s",
        [
            TurnUnit(1, "user", "I painted a sunset over the lake after the art class.", START, "Caroline"),
            TurnUnit(2, "assistant", "Lovely! I painted a sunset too, with the kids.", START, "Melanie"),
            TurnUnit(3, "user", "Thanks, Melanie, you are always so kind.", START, "Caroline"),
            TurnUnit(4, "assistant", "Caroline, Caroline, you are the best, Caroline!", START, "Melanie"),
        ],
    )


def test_the_index_knows_the_participants_and_embeds_the_question_without_them():
    embedder = Recording()
    index = MemoryIndex(mongomock_store(), embedder)
    conversation(index)
    assert index.participants("u") == PEOPLE
    embedder.seen.clear()
    index.search("u", "What did Caroline paint?", k=4)
    assert embedder.seen == ["What did paint?"]
    off = MemoryIndex(index.store, embedder, names_as_filter=False)
    embedder.seen.clear()
    off.search("u", "What did Caroline paint?", k=4)
    assert embedder.seen == ["What did Caroline paint?"]


def test_a_name_said_everywhere_no_longer_counts_as_relevance():
    index = MemoryIndex(mongomock_store(), LocalMiniLM(), speaker_boost=0.0)
    index.add_turns(
        "u",
        "s",
        [
            TurnUnit(
                1,
                "user",
                "It taught me self-acceptance and how to find support when things are hard.",
                START,
                "Caroline",
            ),
            TurnUnit(2, "assistant", "Caroline is so thoughtful, I love Caroline.", START, "Melanie"),
            TurnUnit(3, "assistant", "Caroline, Caroline, you are the best, Caroline!", START, "Melanie"),
        ],
    )
    question = "What lesson did Caroline learn?"

    def cosines(idx):
        return {h.source["seq"]: h.similarity for h in idx.search("u", question, k=3, mode="vector")}

    filtered = cosines(index)
    naive = cosines(MemoryIndex(index.store, index.embedder, names_as_filter=False, speaker_boost=0.0))
    assert max(naive[2], naive[3]) > 0.5 > 0.2 > max(filtered[2], filtered[3])  # only the name was shared
    lead = {name: c[1] - max(c[2], c[3]) for name, c in (("naive", naive), ("filtered", filtered))}
    assert lead["filtered"] > 2 * lead["naive"] > 0  # the answer stands out once the name no longer counts


def test_the_person_asked_about_gains_the_boost_on_their_own_turns_only():
    index = MemoryIndex(mongomock_store(), LocalMiniLM(), speaker_boost=0.0)
    conversation(index)
    question = "What did Melanie paint?"
    plain = {h.source["seq"]: h.score for h in index.search("u", question, k=4)}
    index.speaker_boost = SPEAKER_BOOST
    boosted = {h.source["seq"]: h.score for h in index.search("u", question, k=4)}
    for seq, score in plain.items():
        expected = score * (1 + SPEAKER_BOOST) if seq in (2, 4) else score  # Melanie said turns 2 and 4
        assert boosted[seq] == pytest.approx(expected)
    both = "What did Caroline and Melanie paint?"  # two people named: nobody is boosted
    index.speaker_boost = 0.0
    unboosted = {h.source["seq"]: h.score for h in index.search("u", both, k=4)}
    index.speaker_boost = SPEAKER_BOOST
    assert {h.source["seq"]: h.score for h in index.search("u", both, k=4)} == pytest.approx(unboosted)


def test_a_user_assistant_chat_is_searched_as_before():
    embedder = Recording()
    index = MemoryIndex(mongomock_store(), embedder)
    index.add_turns(
        "u",
        "s",
        [TurnUnit(1, "user", "My locker code is 4411.", START), TurnUnit(2, "assistant", "Noted: 4411.", START)],
    )
    assert index.participants("u") == []
    embedder.seen.clear()
    hits = index.search("u", "What is my locker code?", k=2)
    assert embedder.seen == ["What is my locker code?"] and hits[0].source["seq"] == 1


def test_forgotten_turns_leave_the_participants_and_the_boost_is_checked():
    index = MemoryIndex(mongomock_store(), LocalMiniLM())
    conversation(index)
    melanie = [h.id for h in index.all("u") if h.text.startswith("Melanie:")]
    index.forget("u", melanie)
    assert index.participants("u") == ["Caroline"]
    with pytest.raises(ValueError, match="speaker_boost"):
        MemoryIndex(index.store, index.embedder, speaker_boost=-1)
    assert np.isfinite(SPEAKER_BOOST) and SPEAKER_BOOST > 0


def test_boost_speaker_raises_the_speakers_rows_and_sinks_a_negative_one():
    scores = {0: 0.4, 1: 0.4, 2: -0.2}
    boosted = boost_speaker(scores, ["Caroline", "Melanie", "Caroline"], "Caroline", 1.0)
    assert boosted == {0: 0.8, 1: 0.4, 2: -0.1}  # a negative cosine moves toward zero, never past a positive one
    with pytest.raises(ValueError, match="user_id"):
        MemoryIndex(mongomock_store(), LocalMiniLM()).participants({"$ne": None})  # a query, not an id
