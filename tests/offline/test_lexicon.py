"""helpers.offline.lexicon (WordNet 3.0 for the offline reader) and its builder, scripts.build_wordnet.

How the reader uses it on whole sentences is in tests/offline/test_reader_checks.py."""

import gzip
import json

import pytest

from helpers.offline import lexicon
from scripts import build_wordnet as wordnet_build


@pytest.mark.parametrize(
    "a, b",
    [("nan", "grandmother"), ("kids", "children"), ("autumn", "fall"), ("eldest", "firstborn"), ("movie", "film")],
)
def test_synonyms_name_the_same_concept(a, b):
    assert lexicon.synonymous(a, b)


@pytest.mark.parametrize("a, b", [("wife", "husband"), ("niece", "nephew"), ("tea", "wine"), ("june", "august")])
def test_related_words_are_not_synonyms(a, b):
    assert not lexicon.synonymous(a, b)


@pytest.mark.parametrize(
    "member, kind",
    [
        ("collie", "dog"),
        ("jazz", "music"),
        ("lasagna", "dish"),
        ("june", "month"),
        ("salmon", "fish"),
        ("daughter", "child"),
    ],
)
def test_members_of_a_kind(member, kind):
    assert lexicon.is_a(member, kind)


@pytest.mark.parametrize(
    "member, kind", [("autumn", "month"), ("dog", "collie"), ("coldplay", "film"), ("dog", "entity")]
)  # "entity" is too general to be a kind asked for
def test_not_members(member, kind):
    assert not lexicon.is_a(member, kind)


def test_siblings_are_different_things_of_one_close_kind():
    assert lexicon.siblings("june", "august") and lexicon.siblings("husband", "wife")
    assert lexicon.siblings("monday", "friday") and lexicon.siblings("dog", "cat")
    assert not lexicon.siblings("dog", "collie")  # one is a kind of the other
    assert not lexicon.siblings("film", "movie")  # the same thing


def test_opposites_and_stems():
    assert lexicon.opposite("new", "old") and lexicon.opposite("early", "late")
    assert not lexicon.opposite("new", "fresh")
    assert lexicon.known("grandmother") and lexicon.known("kids") and not lexicon.known("Zyxwvut")


def test_shipped_file_is_wordnet_and_credits_it():
    data = json.loads(gzip.open(lexicon.DATA, "rt", encoding="utf-8").read())
    assert data["source"].startswith("WordNet 3.0") and len(data["lemmas"]) > 50_000
    licence = (lexicon.DATA.parent / "WORDNET_LICENSE").read_text()
    assert "WordNet 3.0 Copyright 2006 by Princeton University" in licence


def _mini_wordnet(root):
    """Three noun synsets in WordNet's own file format: dog ⊂ canine, with "domestic dog" a synonym."""
    lines = {
        "data.noun": [
            "00000001 05 n 01 canine 0 000 | a carnivore",
            "00000002 05 n 02 dog 0 domestic_dog 0 001 @ 00000001 n 0000 | a domestic animal",
            "00000003 05 n 01 cat 0 001 @ 00000001 n 0000 | a feline",
        ],
        "index.noun": ["canine n 1 0 1 0 00000001", "dog n 1 1 @ 1 0 00000002", "cat n 1 1 @ 1 0 00000003"],
        "data.verb": [
            "00000004 29 v 01 rise 0 001 ! 00000005 v 0101 00 | go up",
            "00000005 29 v 01 fall 0 001 ! 00000004 v 0101 00 | go down",
        ],
        "index.verb": ["rise v 1 1 ! 1 0 00000004", "fall v 1 1 ! 1 0 00000005"],
        "data.adj": [],
        "index.adj": [],
        "data.adv": [],
        "index.adv": [],
    }
    for name, rows in lines.items():
        (root / name).write_text("  1 licence header line\n" + "".join(r + "\n" for r in rows), encoding="latin-1")


def test_builder_reads_wordnet_files_and_is_reproducible(tmp_path):
    _mini_wordnet(tmp_path)
    built = wordnet_build.build(tmp_path)
    assert built["lemmas"] == {
        "canine": ["n00000001"],
        "dog": ["n00000002"],
        "cat": ["n00000003"],
        "rise": ["v00000004"],
        "fall": ["v00000005"],
    }
    assert built["hyper"] == {"n00000002": ["n00000001"], "n00000003": ["n00000001"]}
    assert built["words"]["n00000002"] == ["dog"]  # the two-word lemma is not kept
    assert built["antonyms"] == {"rise": ["fall"], "fall": ["rise"]}
    a, b = tmp_path / "a.json.gz", tmp_path / "b.json.gz"
    wordnet_build.main([str(tmp_path), "--out", str(a)])
    wordnet_build.main([str(tmp_path), "--out", str(b)])
    assert a.read_bytes() == b.read_bytes()


def test_the_sqlite_copy_answers_every_table_as_the_json_does(tmp_path, monkeypatch):
    """Each process reads the lexicon a key at a time from a SQLite copy built once (decoding the JSON cost about a
    second per process): the copy gives the same list, in the same order, for keys of every table, and None or the
    default for a key no table has."""
    source = lexicon._read_json()
    monkeypatch.setattr(lexicon, "_read_json", lambda: source)  # the copy is built from it: decoded once here
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    lexicon._lexicon.cache_clear()
    try:
        tables = lexicon._lexicon()
        assert list(tmp_path.rglob("wordnet-*.sqlite"))
        assert all(isinstance(t, lexicon._Table) for t in tables.values())
        for kind in lexicon.TABLES:
            keys = list(source[kind])[::97]
            assert keys and all(tables[kind][k] == source[kind][k] == tables[kind].get(k) for k in keys), kind
            assert all(k in tables[kind] for k in keys)
        assert tables["lemmas"].get("qzxv-no-such-word", ()) == () and "qzxv-no-such-word" not in tables["hyper"]
        with pytest.raises(KeyError):
            tables["words"]["qzxv-no-such-synset"]
    finally:
        lexicon._lexicon.cache_clear()


def test_where_no_copy_can_be_written_the_json_is_read_in_memory(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache dir would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    decoded = []
    read_json = lexicon._read_json
    monkeypatch.setattr(lexicon, "_read_json", lambda: decoded.append(1) or read_json())
    lexicon._lexicon.cache_clear()
    try:
        tables = lexicon._lexicon()
        assert decoded == [1] and all(isinstance(t, dict) for t in tables.values())
        assert lexicon.synonymous("nan", "grandmother") and "dog" in tables["lemmas"]
    finally:
        lexicon._lexicon.cache_clear()
