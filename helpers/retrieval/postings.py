"""BM25 postings that open without reading every memory. Plumbing for 05_vector_memory, section 'Extraction → storage → retrieval → injection'.

For each term, the rows whose BM25 document holds it and how often (what `helpers.retrieval.bm25.bm25_scores`
reads). Two layers: a frozen *base* in compressed-sparse-row form — a sorted vocabulary and, per term, a slice
of rows and counts, which an index file maps without decoding anything (helpers.retrieval.snapshot) — and the
documents changed since, held as a dict per term like the one notebook 05 builds. A row whose document changed
is `stale` in the base: its base entries no longer count. `lookup` merges both, so scores are the same whichever
layer a row is in.
"""

from __future__ import annotations

import bisect
from collections import Counter

import numpy as np

__all__ = ["Vocabulary", "Postings", "pack_strings"]


def pack_strings(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Strings as one UTF-8 byte array and int64 offsets (string i is blob[offsets[i]:offsets[i + 1]])."""
    encoded = [s.encode("utf-8", "surrogatepass") for s in strings]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    if encoded:
        np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(), offsets


class Vocabulary:
    """Sorted terms packed by `pack_strings`: term i decoded on demand, a term found by binary search."""

    def __init__(self, blob: np.ndarray, offsets: np.ndarray):
        self.blob, self.offsets = blob, offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> str:
        start, end = int(self.offsets[i]), int(self.offsets[i + 1])
        return self.blob[start:end].tobytes().decode("utf-8", "surrogatepass")

    def find(self, term: str) -> int | None:
        """The index of `term`, or None (about log2(len) decodes)."""
        i = bisect.bisect_left(self, term)
        return i if i < len(self) and self[i] == term else None

    def terms(self) -> list[str]:
        """Every term, in order (decodes them all: for writing a new base, not for a search)."""
        raw = self.blob.tobytes()
        bounds = self.offsets.tolist()
        return [raw[bounds[i] : bounds[i + 1]].decode("utf-8", "surrogatepass") for i in range(len(self))]


class Postings:
    """term → rows and counts: a frozen base (CSR) for rows below `base_n` plus the documents set since."""

    def __init__(
        self,
        base: tuple[Vocabulary, np.ndarray, np.ndarray, np.ndarray] | None = None,
        base_n: int = 0,
    ):
        self.vocab, self.starts, self.rows, self.counts = base if base is not None else (None, None, None, None)
        self.base_n = base_n if base is not None else 0
        self.stale = np.zeros(self.base_n, dtype=bool)  # base rows whose document was set since
        self.delta: dict[str, dict[int, float]] = {}  # term → {row: count}, for documents set since
        self.docs: dict[int, Counter] = {}  # row → its document, for documents set since
        self.entries = 0  # terms of every document in `docs`, kept as they change (nbytes is read per request)

    def lookup(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """Rows whose document holds `term` and its count in each (every row once); None if no row does."""
        rows_parts, count_parts = [], []
        if self.vocab is not None:
            i = self.vocab.find(term)
            if i is not None:
                start, end = int(self.starts[i]), int(self.starts[i + 1])
                rows = self.rows[start:end]
                live = ~self.stale[rows]
                rows_parts.append(rows[live].astype(np.int64))
                count_parts.append(self.counts[start:end][live])
        added = self.delta.get(term)
        if added:
            rows_parts.append(np.fromiter(added.keys(), dtype=np.int64, count=len(added)))
            count_parts.append(np.fromiter(added.values(), dtype=np.float64, count=len(added)))
        if len(rows_parts) > 1:
            rows_parts, count_parts = [np.concatenate(rows_parts)], [np.concatenate(count_parts)]
        if not rows_parts or not len(rows_parts[0]):
            return None
        return rows_parts[0], np.asarray(count_parts[0], dtype=np.float64)

    def set(self, row: int, counts: Counter) -> None:
        """Make `counts` the document of `row` (an empty Counter: the row holds no term)."""
        old = self.docs.get(row)
        if old is None and row < self.base_n:
            self.stale[row] = True
        for term in old or ():
            entries = self.delta.get(term)
            if entries is not None:
                entries.pop(row, None)
                if not entries:
                    del self.delta[term]
        self.entries += len(counts) - len(old or ())
        self.docs[row] = counts
        for term, count in counts.items():
            self.delta.setdefault(term, {})[row] = count

    def document(self, row: int) -> Counter:
        """The document of `row` as the postings hold it (scans the base: for checks, not for search)."""
        if row in self.docs:
            return Counter(self.docs[row])
        found = Counter()
        if self.vocab is not None and row < self.base_n and not self.stale[row]:
            at = np.flatnonzero(self.rows == row)
            for term, where in zip((np.searchsorted(self.starts, at, side="right") - 1).tolist(), at.tolist()):
                found[self.vocab[term]] = float(self.counts[where])
        return found

    def nbytes(self) -> int:
        """Bytes held: the base arrays plus an estimate for the dicts (about 100 bytes per entry)."""
        base = sum(a.nbytes for a in (self.starts, self.rows, self.counts) if a is not None)
        base += self.vocab.blob.nbytes + self.vocab.offsets.nbytes if self.vocab is not None else 0
        return base + self.stale.nbytes + 100 * self.entries

    def packed(self, n: int) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
        """Both layers merged for rows below `n`: (sorted terms, starts, rows int32, counts float64), the base
        of an index file."""
        term_parts, row_parts, count_parts = [], [], []
        base_terms: list[str] = []
        if self.vocab is not None and len(self.rows):
            base_terms = self.vocab.terms()
            ids = np.repeat(np.arange(len(base_terms), dtype=np.int64), np.diff(self.starts))
            keep = ~self.stale[self.rows]
            term_parts.append(ids[keep])
            row_parts.append(self.rows[keep].astype(np.int64))
            count_parts.append(self.counts[keep])
        delta_terms = sorted(self.delta)
        terms = sorted(set(base_terms).union(delta_terms)) if base_terms else delta_terms
        position = {term: i for i, term in enumerate(terms)}
        if base_terms:
            remap = np.fromiter((position[t] for t in base_terms), dtype=np.int64, count=len(base_terms))
            term_parts[0] = remap[term_parts[0]]
        for term in delta_terms:
            entries = self.delta[term]
            term_parts.append(np.full(len(entries), position[term], dtype=np.int64))
            row_parts.append(np.fromiter(entries.keys(), dtype=np.int64, count=len(entries)))
            count_parts.append(np.fromiter(entries.values(), dtype=np.float64, count=len(entries)))
        if not term_parts:
            return [], np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float64)
        tids, rows, counts = np.concatenate(term_parts), np.concatenate(row_parts), np.concatenate(count_parts)
        inside = rows < n
        tids, rows, counts = tids[inside], rows[inside], counts[inside]
        order = np.lexsort((rows, tids))
        tids, rows, counts = tids[order], rows[order], counts[order].astype(np.float64)
        used = np.bincount(tids, minlength=len(terms)) > 0
        if not used.all():  # terms no live row holds any more
            new_id = np.cumsum(used) - 1
            tids = new_id[tids]
            terms = [t for t, u in zip(terms, used.tolist()) if u]
        starts = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum(np.bincount(tids, minlength=len(terms)), out=starts[1:])
        return terms, starts, rows.astype(np.int32), counts
