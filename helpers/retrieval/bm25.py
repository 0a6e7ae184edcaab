"""BM25 tokens and scores. Taught in 05_vector_memory, section 'Build it yourself: cosine ranking and RRF'.

BM25 (Robertson & Zaragoza 2009) scores a document for a query by the query's words it contains:
rare words (high idf) count more, repeats count with diminishing returns (k1), and long documents
are discounted (b). This is the simple baseline every embedding ranking here is compared against.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["BM25_K1", "BM25_B", "STOPWORDS", "bm25_tokens", "bm25_scores"]

BM25_K1, BM25_B = 1.2, 0.75  # the usual BM25 parameters

STOPWORDS = frozenset(
    "a an the and or but if then so to of in on at for with about from by as is are was were be been being am "
    "i me my mine you your yours we our us it its this that these those what which who whom whose when where "
    "why how do does did can could should would will shall may might must have has had not no yes there here "
    "than too very just also some any more most much many such into over out up down off again once all both "
    "each few other own same only s t don user assistant users".split()
)


def bm25_tokens(text: str) -> list[str]:
    """Lowercase word/number tokens without stopwords, with a crude plural strip ('flights' → 'flight')."""
    tokens = []
    for token in re.findall(r"[a-z0-9]+", unicodedata.normalize("NFKC", text).lower().replace("'s", " ")):
        if token in STOPWORDS:
            continue
        if len(token) > 4 and token.endswith("s") and not token.endswith("ss") and not token[-2].isdigit():
            token = token[:-1]  # crude plural strip
        tokens.append(token)
    return tokens


def _rows_and_counts(postings, term: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The rows holding `term` and the term's count in each, from a dict of dicts or a `lookup` method."""
    lookup = getattr(postings, "lookup", None)
    if lookup is not None:
        return lookup(term)
    rows_tf = postings.get(term)
    if not rows_tf:
        return None
    rows = np.fromiter(rows_tf.keys(), dtype=np.int64, count=len(rows_tf))
    return rows, np.fromiter(rows_tf.values(), dtype=np.float64, count=len(rows_tf))


def bm25_scores(
    query: str, postings: Mapping[str, Mapping[int, int]] | Any, doc_len: np.ndarray, live: np.ndarray
) -> np.ndarray:
    """BM25 score of every document for `query` (0 where no query term occurs).

    `postings[term]` maps a document's row to how often the term occurs in it (or `postings.lookup(term)` gives
    both as arrays: helpers.retrieval.postings); `doc_len[row]` is its token count; `live` marks the documents
    the statistics (document count, average length) cover.
    """
    scores = np.zeros(len(doc_len), dtype=np.float64)
    terms = bm25_tokens(query)
    docs = int(live.sum())
    if not terms or not docs:
        return scores
    avg_len = max(float(doc_len[live].sum()) / docs, 1e-9)
    for term, query_count in Counter(terms).items():
        found = _rows_and_counts(postings, term)
        if found is None:
            continue
        rows, tf = found
        idf = math.log(1.0 + (docs - len(rows) + 0.5) / (len(rows) + 0.5))  # rare terms weigh more
        norm = tf + BM25_K1 * (1.0 - BM25_B + BM25_B * doc_len[rows] / avg_len)  # saturate tf, discount length
        scores[rows] += query_count * idf * tf * (BM25_K1 + 1.0) / norm
    return scores
