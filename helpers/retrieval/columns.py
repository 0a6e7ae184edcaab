"""One user's memories as numpy columns: what each row holds and how to read it back. Plumbing for 05_vector_memory, section 'Extraction → storage → retrieval → injection'.

`UserRows` (helpers.retrieval.cache) builds on these columns; you can skip this file on a first read. Every column
is an array with one entry per row (a memory): the flags and dates search filters and weighs by, the source and
speaker of a turn, the ids, beside the embedding matrix `emb`. Texts, sources and dates become Python objects only
for the rows a search returns. Rows opened from an index file (helpers.retrieval.snapshot) read their texts from
the file's pages; rows written or read again in this process keep theirs in `texts`.
"""

from __future__ import annotations

import math
from collections import Counter
from datetime import datetime, timedelta, timezone

import numpy as np
from bson import ObjectId

from helpers.retrieval.postings import Postings
from helpers.retrieval.schema import Hit

__all__ = ["RowColumns", "COLUMNS", "NONE", "to_us", "from_us"]

NONE = np.iinfo(np.int64).min  # no date / no seq
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_US = timedelta(microseconds=1)
# name: (dtype, value of an empty row); the embedding matrix `emb` is kept apart
COLUMNS = {
    "ids": ("V12", b"\0" * 12),  # the ObjectId's 12 bytes
    "is_fact": (np.bool_, False),
    "active": (np.bool_, False),
    "updated_s": (np.float64, 0.0),  # last stated (updated_at, else created_at), epoch seconds
    "expires_s": (np.float64, math.inf),
    "doc_len": (np.float64, 0.0),  # BM25 document length
    "created_us": (np.int64, NONE),  # dates as microseconds since 1970 (exact)
    "updated_us": (np.int64, NONE),
    "seen": (np.int64, 1),
    "rev": (np.int64, 0),  # the user's revision at the memory's last write (helpers.retrieval.changes)
    "session": (np.int32, -2),  # index into `sessions`; -1: session_id None; -2: no plain source
    "seq": (np.int64, NONE),
    "speaker": (np.int32, -1),  # index into `speakers_seen`; -1: not a turn of a named person
    "hashes": ("S64", b""),  # content hash (hex)
}


def to_us(value: datetime | None) -> int:
    """An aware datetime as whole microseconds since 1970 (NONE for None)."""
    return NONE if value is None else (value - _EPOCH) // _US


def from_us(us: int) -> datetime | None:
    """The UTC datetime of `to_us` (None for NONE)."""
    return None if us == NONE else _EPOCH + timedelta(microseconds=int(us))


class RowColumns:
    """The columns of one user's rows (see COLUMNS), the embedding matrix `emb`, texts and the odd values no
    column holds; lookups by id, content hash and turn."""

    def __init__(self, dim: int):
        self.dim, self.n, self.capacity = dim, 0, 0
        self.emb = np.zeros((0, dim), dtype=np.float32)
        for name, (dtype, _fill) in COLUMNS.items():
            setattr(self, name, np.zeros(0, dtype=dtype))
        self.postings = Postings()
        self.sessions: list[str] = []
        self.session_of: dict[str, int] = {}
        self.speakers_seen: list[str] = []
        self.speaker_code: dict[str, int] = {}
        self.speaker_rows: Counter = Counter()  # named speaker → active turns of theirs
        self.odd: dict[str, dict[int, object]] = {"kind": {}, "source": {}, "hash": {}, "id": {}}
        self.text_blob, self.text_starts = np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int64)
        self.base_n = 0  # rows below this read their text from text_blob unless `texts` has it
        self.texts: dict[int, str] = {}
        self.text_bytes = 0  # characters in `texts`, for nbytes
        self.erased: set[int] = set()  # rows whose document is gone (deleted elsewhere)
        self.wrong_dim = 0
        self._row_of: dict | None = None  # id → row, built on first use
        self._turn_at: dict | None = None  # (session code, seq) → the row of that turn, built on first use

    def grow(self, capacity: int, *, emb: bool = True) -> None:
        """Room for `capacity` rows (copies the columns; a mapped embedding matrix moves into memory). `emb`
        False: the columns only (the caller sets a matrix of that many rows)."""
        if capacity <= self.capacity:
            return
        n = self.n

        def grown(array: np.ndarray, fill: object) -> np.ndarray:
            out = np.full((capacity, *array.shape[1:]), fill, dtype=array.dtype)
            out[:n] = array[:n]
            return out

        if emb:
            self.emb = grown(self.emb, 0.0)
        for name, (_dtype, fill) in COLUMNS.items():
            setattr(self, name, grown(getattr(self, name), fill))
        self.capacity = capacity

    def adopt(self, texts: tuple[np.ndarray, np.ndarray], postings: Postings) -> None:
        """Use packed texts (blob, starts) for every row so far and `postings` (the layout of an index file)."""
        self.text_blob, self.text_starts = texts
        self.base_n = len(self.text_starts) - 1
        self.texts.clear()
        self.text_bytes = 0
        self.postings = postings

    def set_text(self, row: int, text: str) -> None:
        old = self.texts.get(row)
        self.text_bytes += len(text) - (len(old) if old is not None else 0)
        self.texts[row] = text

    def nbytes(self) -> int:
        """Bytes this user's rows hold (mapped file pages included), for the cache's cap."""
        columns = sum(getattr(self, name).nbytes for name in COLUMNS) + self.emb.nbytes
        texts = self.text_blob.nbytes + self.text_starts.nbytes + self.text_bytes + 80 * len(self.texts)
        lookups = 120 * (len(self._row_of or ()) + len(self._turn_at or ()))
        return 4096 + columns + texts + lookups + self.postings.nbytes()

    def row_of(self, _id: object) -> int | None:
        """The row of a memory id, if held."""
        return self.row_map().get(_id.binary if isinstance(_id, ObjectId) else ("odd", _id))

    def row_map(self) -> dict:
        if self._row_of is None:
            self._row_of = dict(zip(self.ids[: self.n].tolist(), range(self.n)))
            for row, odd_id in self.odd["id"].items():
                self._row_of[("odd", odd_id)] = row
        return self._row_of

    def object_id(self, row: int) -> object:
        """The memory's `_id` (an ObjectId)."""
        odd = self.odd["id"].get(row)
        return odd if odd is not None else ObjectId(self.ids[row].tobytes())

    def kind(self, row: int) -> str:
        return self.odd["kind"].get(row) or ("fact" if self.is_fact[row] else "episode")

    def text(self, row: int) -> str:
        text = self.texts.get(row)
        if text is None:
            if row >= self.base_n:
                return ""
            start, end = int(self.text_starts[row]), int(self.text_starts[row + 1])
            text = self.text_blob[start:end].tobytes().decode("utf-8", "surrogatepass")
        return text

    def source(self, row: int) -> dict | None:
        if row in self.odd["source"]:
            return self.odd["source"][row]
        code, seq = int(self.session[row]), int(self.seq[row])
        if code == -2:
            return None
        return {"session_id": self.sessions[code] if code >= 0 else None, "seq": None if seq == NONE else seq}

    def rows_with_hash(self, digest: str) -> list[int]:
        """Rows whose content hash is `digest`, in row order."""
        found = [row for row, h in self.odd["hash"].items() if h == digest]
        try:
            packed = digest.encode("ascii")
        except (UnicodeEncodeError, AttributeError):
            packed = b""
        if packed and len(packed) <= 64:
            found += np.flatnonzero(self.hashes[: self.n] == packed).tolist()
        return sorted(set(found))

    def turn_row(self, session_id: object, seq: object) -> int | None:
        """The row of the turn said at (session_id, seq), if held."""
        code = -1 if session_id is None else self.session_of.get(session_id) if isinstance(session_id, str) else None
        if code is None or not isinstance(seq, int) or isinstance(seq, bool):
            return None
        return self.turn_map().get((code, seq))

    def turn_map(self) -> dict[tuple[int, int], int]:
        """(session code, seq) → row, for every turn held (built on first use, then kept current)."""
        if self._turn_at is None:
            n = self.n
            rows = np.flatnonzero(~self.is_fact[:n] & (self.session[:n] >= -1) & (self.seq[:n] != NONE)).tolist()
            keys = zip(self.session[rows].tolist(), self.seq[rows].tolist())
            self._turn_at = {
                key: row for key, row in zip(keys, rows) if row not in self.odd["kind"] and row not in self.erased
            }
        return self._turn_at

    @property
    def speakers(self) -> _Speakers:
        """Each row's named speaker, by row (what helpers.retrieval.names.boost_speaker reads)."""
        return _Speakers(self)

    def participants(self) -> list[str]:
        """The named speakers of this user's active turns ("Caroline", "Melanie"; none for User/Assistant)."""
        return sorted(self.speaker_rows)

    def hit(self, row: int, score: float, similarity: float | None = None, lexical: float | None = None) -> Hit:
        """The row as a `Hit` with the given scores."""
        return Hit(
            str(self.object_id(row)),
            self.kind(row),
            self.text(row),
            float(score),
            from_us(int(self.created_us[row])),
            self.source(row),
            from_us(int(self.updated_us[row])),
            similarity,
            lexical,
            int(self.seen[row]),
        )


class _Speakers:
    """rows.speakers[row]: the row's named speaker or None (a view over the speaker column)."""

    def __init__(self, rows: RowColumns):
        self.rows = rows

    def __getitem__(self, row: int) -> str | None:
        code = int(self.rows.speaker[row])
        return self.rows.speakers_seen[code] if code >= 0 else None
