"""The blind held-out phrasing corpus (tests/data/phrasing_holdout.json) has the shape issue 12 measures on.

Only the data is checked here; the reader is never run on this file by a test (it is measured once, after the
reader work is merged, so nothing can be tuned on it).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from helpers import reader_eval

HOLDOUT = Path(__file__).resolve().parent / "data" / "phrasing_corpus_c.json"  # the first blind file, now tuning part C
RELATIONS = {"family", "work", "places", "dates_times", "preferences", "dietary", "plans", "possessions",
             "numbers_codes"}


@pytest.fixture
def items(monkeypatch) -> list[dict]:
    monkeypatch.setitem(reader_eval.CORPUS_FILES, "holdout_blind", HOLDOUT)
    return reader_eval.load_corpus("holdout_blind")


def test_holdout_loads_with_enough_pairs_per_relation_and_absent_items(items):
    data = json.loads(HOLDOUT.read_text(encoding="utf-8"))
    assert data["part"] == "held_out" and data["about"]
    pairs = [i for i in items if i["present"]]
    absent = [i for i in items if not i["present"]]
    assert len(pairs) >= 100 and len(absent) >= 40, (len(pairs), len(absent))
    per_relation = Counter(i["relation"] for i in pairs)
    assert set(per_relation) == RELATIONS and min(per_relation.values()) >= 10, per_relation
    assert {i["relation"] for i in absent} == RELATIONS
    ids = [i["id"] for i in items]
    assert len(ids) == len(set(ids))


def test_holdout_items_are_well_formed(items):
    for item in items:
        if item["present"]:
            assert set(item) >= {"id", "relation", "statement", "question", "expect"}, item["id"]
            assert item["expect"] and all(group and all(isinstance(s, str) and s for s in group)
                                          for group in item["expect"]), item["id"]
            # the answer is in the statement (some spelling of every group), so a reader that reads it can answer
            for group in item["expect"]:
                assert any(s.lower() in item["statement"].lower() for s in group), (item["id"], group)
            assert item["question"].strip().endswith("?") and item["question"] != item["statement"], item["id"]
        else:
            assert set(item) >= {"id", "relation", "distractor", "question"} and "expect" not in item, item["id"]
            assert item["question"].strip().endswith("?") and item["distractor"].strip(), item["id"]


def test_holdout_ids_and_statements_are_new():
    """No id or statement is shared with the corpora the reader was built against."""
    mine = json.loads(HOLDOUT.read_text(encoding="utf-8"))
    others = [json.loads(path.read_text(encoding="utf-8")) for path in reader_eval.CORPUS_FILES.values()
              if path.resolve() != HOLDOUT.resolve()]
    assert others
    their_ids = {i["id"] for d in others for i in d["pairs"] + d["absent"]}
    their_text = {i.get("statement") or i.get("distractor") for d in others for i in d["pairs"] + d["absent"]}
    shared = [i["id"] for i in mine["pairs"] + mine["absent"]
              if i["id"] in their_ids or (i.get("statement") or i.get("distractor")) in their_text]
    assert shared == []  # names only this corpus's items: the other corpora stay unread
