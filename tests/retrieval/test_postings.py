"""BM25 postings in two layers (helpers.retrieval.postings): a frozen, sorted base and the documents set since give
the same rows, counts and BM25 scores as the plain dict of dicts notebook 05 builds."""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from helpers.retrieval.bm25 import bm25_scores
from helpers.retrieval.postings import Postings, Vocabulary, pack_strings

TERMS = ["café", "denver", "flight", "jazz", "ramen", "sushi", "tokyo", "ua1432", "zebra", "ü"]
DOCUMENTS = st.dictionaries(
    st.integers(0, 30), st.dictionaries(st.sampled_from(TERMS), st.integers(1, 3), max_size=5), max_size=25
)


def as_dict(postings: Postings, terms=TERMS) -> dict[str, dict[int, float]]:
    out = {}
    for term in terms:
        found = postings.lookup(term)
        if found is not None:
            out[term] = dict(zip(found[0].tolist(), found[1].tolist()))
    return out


def plain(documents: dict[int, dict[str, int]]) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = {}
    for row, counts in documents.items():
        for term, count in counts.items():
            out.setdefault(term, {})[row] = float(count)
    return out


def frozen(documents: dict[int, dict[str, int]], n: int = 31) -> Postings:
    live = Postings()
    for row, counts in documents.items():
        live.set(row, Counter(counts))
    terms, starts, rows, counts = live.packed(n)
    return Postings((Vocabulary(*pack_strings(terms)), starts, rows, counts), base_n=n)


@hsettings(max_examples=25, deadline=None)
@given(base=DOCUMENTS, later=DOCUMENTS)
def test_both_layers_hold_what_a_plain_dict_holds(base, later):
    postings = frozen(base)
    assert as_dict(postings) == plain(base)
    for row, counts in later.items():  # documents changed after the base was frozen
        postings.set(row, Counter(counts))
    for row, counts in later.items():  # and changed again: the count of entries held follows
        postings.set(row, Counter(dict(list(counts.items())[:1])))
        postings.set(row, Counter(counts))
    assert postings.entries == sum(len(d) for d in postings.docs.values())
    assert as_dict(postings) == plain({**base, **later})
    assert all(postings.document(row) == Counter(counts) for row, counts in {**base, **later}.items())
    again = frozen({**base, **later})  # and packed again, as the next index file
    assert as_dict(again) == plain({**base, **later})


@hsettings(max_examples=25, deadline=None)
@given(base=DOCUMENTS, later=DOCUMENTS, query=st.lists(st.sampled_from(TERMS), min_size=1, max_size=4))
def test_bm25_scores_are_identical_either_way(base, later, query):
    postings = frozen(base)
    for row, counts in later.items():
        postings.set(row, Counter(counts))
    documents = {**base, **later}
    doc_len = np.array([float(sum(documents.get(r, {}).values())) for r in range(31)])
    live = np.array([r in documents for r in range(31)])
    text = " ".join(query)
    assert np.array_equal(
        bm25_scores(text, postings, doc_len, live), bm25_scores(text, plain(documents), doc_len, live)
    )


def test_the_vocabulary_is_searched_without_decoding_it():
    vocab = Vocabulary(*pack_strings(sorted(TERMS)))
    assert [vocab.find(t) for t in ("café", "ü", "zebra")] == [0, 9, 8]
    assert vocab.find("caf") is None and vocab.find("zzz") is None and vocab.find("") is None
    assert vocab.terms() == sorted(TERMS) and len(Vocabulary(*pack_strings([]))) == 0


def test_an_emptied_row_holds_no_term_and_unused_terms_leave_the_next_base():
    postings = frozen({0: {"jazz": 1}, 1: {"jazz": 2, "tokyo": 1}})
    postings.set(1, Counter())
    assert as_dict(postings) == {"jazz": {0: 1.0}}
    terms, starts, rows, counts = postings.packed(2)
    assert terms == ["jazz"] and starts.tolist() == [0, 1] and rows.tolist() == [0] and counts.tolist() == [1.0]
