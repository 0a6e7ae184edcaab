"""The blind phrasing corpora have the shape issue 12 measures on: phrasing_holdout_5.json (held out; written by hand
without reading the reader's code, the other corpora's items or any results), and phrasing_corpus_c.json and
phrasing_holdout_2/3/4.json (each written the same way as a blind held-out file, measured, then used for tuning).

Only the data is checked here; the reader is never run on these files by a test (each is measured once, after the
reader work is merged, so nothing can be tuned on it). Failure messages name only the checked file's own items.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from helpers.bench import reader_eval

DATA = Path(__file__).resolve().parents[1] / "data"
RELATIONS = {
    "family",
    "work",
    "places",
    "dates_times",
    "preferences",
    "dietary",
    "plans",
    "possessions",
    "numbers_codes",
}


class Spec:
    """What one held-out file must hold: its path, the minimum counts and its id prefix."""

    def __init__(
        self,
        name: str,
        pairs: int,
        per_relation: int,
        absent: int,
        absent_per_relation: int,
        prefix: str,
        part: str = "held_out",
    ) -> None:
        self.path, self.part = DATA / name, part
        self.pairs, self.per_relation = pairs, per_relation
        self.absent, self.absent_per_relation, self.prefix = absent, absent_per_relation, prefix

    def __repr__(self) -> str:
        return self.path.name


SPECS = [
    Spec(
        "phrasing_corpus_c.json",
        pairs=100,
        per_relation=10,
        absent=40,
        absent_per_relation=1,
        prefix="ho-",
        part="tuning",
    ),
    Spec(
        "phrasing_holdout_2.json",
        pairs=110,
        per_relation=12,
        absent=45,
        absent_per_relation=5,
        prefix="h2-",
        part="tuning",
    ),
    Spec(
        "phrasing_holdout_3.json",
        pairs=117,
        per_relation=13,
        absent=54,
        absent_per_relation=6,
        prefix="h3-",
        part="tuning",
    ),
    Spec(
        "phrasing_holdout_4.json",
        pairs=117,
        per_relation=13,
        absent=54,
        absent_per_relation=6,
        prefix="h4-",
        part="tuning",
    ),
    Spec("phrasing_holdout_5.json", pairs=117, per_relation=13, absent=54, absent_per_relation=6, prefix="h5-"),
]


@pytest.fixture(params=SPECS, ids=repr)
def spec(request) -> Spec:
    return request.param


@pytest.fixture
def items(spec, monkeypatch) -> list[dict]:
    monkeypatch.setitem(reader_eval.CORPUS_FILES, "holdout_blind", [spec.path])
    return reader_eval.load_corpus("holdout_blind")


def test_holdout_loads_with_enough_pairs_per_relation_and_absent_items(spec, items):
    data = json.loads(spec.path.read_text(encoding="utf-8"))
    assert data["part"] == spec.part and data["about"]
    pairs = [i for i in items if i["present"]]
    absent = [i for i in items if not i["present"]]
    assert len(pairs) >= spec.pairs and len(absent) >= spec.absent, (len(pairs), len(absent))
    per_relation = Counter(i["relation"] for i in pairs)
    assert set(per_relation) == RELATIONS and min(per_relation.values()) >= spec.per_relation, per_relation
    absent_per_relation = Counter(i["relation"] for i in absent)
    assert set(absent_per_relation) == RELATIONS, absent_per_relation
    assert min(absent_per_relation.values()) >= spec.absent_per_relation, absent_per_relation
    ids = [i["id"] for i in items]
    assert [i for i, n in Counter(ids).items() if n > 1] == []
    assert [i for i in ids if not i.startswith(spec.prefix)] == []


def test_holdout_items_are_well_formed(items):
    for item in items:
        if item["present"]:
            assert set(item) >= {"id", "relation", "statement", "question", "expect"}, item["id"]
            assert item["expect"] and all(
                group and all(isinstance(s, str) and s for s in group) for group in item["expect"]
            ), item["id"]
            # the answer is in the statement (some spelling of every group), so a reader that reads it can answer
            for group in item["expect"]:
                assert any(s.lower() in item["statement"].lower() for s in group), (item["id"], group)
            assert item["question"].strip().endswith("?") and item["question"] != item["statement"], item["id"]
        else:
            assert set(item) >= {"id", "relation", "distractor", "question"} and "expect" not in item, item["id"]
            assert item["question"].strip().endswith("?") and item["distractor"].strip(), item["id"]


def test_holdout_ids_and_statements_are_new(spec):
    """No id or statement is shared with any other phrasing corpus (the tuning ones and the other held-out one)."""
    mine = json.loads(spec.path.read_text(encoding="utf-8"))
    others = [
        json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(DATA.glob("phrasing_*.json"))
        if path.resolve() != spec.path.resolve()
    ]
    n_others = len(others)
    assert n_others >= 3  # the two tuning files and the other held-out file (their text is never printed)
    their_ids = {i["id"] for d in others for i in d["pairs"] + d["absent"]}
    their_text = {i.get("statement") or i.get("distractor") for d in others for i in d["pairs"] + d["absent"]}
    shared = [
        i["id"]
        for i in mine["pairs"] + mine["absent"]
        if i["id"] in their_ids or (i.get("statement") or i.get("distractor")) in their_text
    ]
    assert shared == []  # names only this corpus's items: the other corpora stay unread


def test_holdout_statements_are_unique_within_the_file(spec):
    mine = json.loads(spec.path.read_text(encoding="utf-8"))
    said = [i.get("statement") or i.get("distractor") for i in mine["pairs"] + mine["absent"]]
    assert [s for s, n in Counter(said).items() if n > 1] == []
