"""A user's search data in one file under the data dir, opened in about the same time whatever their number of memories. Plumbing for 05_vector_memory, section 'Extraction → storage → retrieval → injection'.

The file holds what `UserRows` holds (helpers.retrieval.cache): the columns, the embedding matrix, the texts
and the BM25 postings as sorted arrays (helpers.retrieval.postings), behind a small JSON header naming the
user's epoch and the revision the file reflects (helpers.retrieval.changes). Opening it maps the file
copy-on-write: nothing is decoded or read until a search touches it, so a new process (a kernel restart, a
`--show-request`, a web worker) starts searching a user with 50,000 memories at once instead of reading 50,000
documents. It is a cache of the database, never the truth: a file whose epoch the database no longer has, or
that the change log no longer reaches back to, is not used; a new one is written atomically (a temporary file,
then a rename), and erasing a user (helpers.memory.forget) removes theirs. Files live in
`GTE_DATA_DIR/index/<server>/<database>/`, named by a hash of the user id; mongomock stores have none.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import bson
import numpy as np

from helpers.config import load_settings
from helpers.db.private import private_dir, private_file
from helpers.retrieval.cache import UserRows
from helpers.retrieval.coarse import CoarseIndex
from helpers.retrieval.columns import COLUMNS
from helpers.retrieval.postings import Postings, Vocabulary, pack_strings

if TYPE_CHECKING:  # pragma: no cover
    from helpers.db.store import Store

__all__ = [
    "index_root",
    "snapshot_path",
    "write_snapshot",
    "read_header",
    "open_snapshot",
    "remove_user_files",
    "remove_database_files",
]

MAGIC = b"GTEIDX\x00\x01"
FORMAT = 1
ALIGN = 4096


def index_root(store: Store) -> Path | None:
    """Where this store's index files go: the local server's data dir, or GTE_DATA_DIR for a MONGODB_URI server
    (one folder per server); None for mongomock (it dies with the process: nothing to reopen)."""
    if store.kind == "local" and store.data_dir is not None:
        return Path(store.data_dir) / "index" / "local"
    if store.kind == "uri":
        server = hashlib.sha256(str(store.uri).encode()).hexdigest()[:16]
        return Path(load_settings().data_dir) / "index" / f"uri-{server}"
    return None


def _user_key(user_id: str) -> str:
    return hashlib.sha256(user_id.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def snapshot_path(root: Path, db_name: str, user_id: str) -> Path:
    """The index file of one user (named by a hash: file names never show user ids)."""
    return Path(root) / db_name / f"{_user_key(user_id)}.idx"


def _align(offset: int, to: int = 64) -> int:
    return -(-offset // to) * to


def _frozen(rows: UserRows) -> tuple[dict[str, np.ndarray], dict]:
    """The rows as arrays (first `n` of each column) plus the JSON-able rest."""
    n = rows.n
    arrays = {name: np.ascontiguousarray(getattr(rows, name)[:n]) for name in COLUMNS}
    arrays["text_blob"], arrays["text_starts"] = pack_strings([rows.text(r) for r in range(n)])
    terms, starts, post_rows, counts = rows.postings.packed(n)
    arrays["term_blob"], arrays["term_starts"] = pack_strings(terms)
    arrays["post_starts"], arrays["post_rows"], arrays["post_counts"] = starts, post_rows, counts
    arrays["erased"] = np.array(sorted(rows.erased), dtype=np.int64)
    odd = {kind: {str(row): value for row, value in values.items()} for kind, values in rows.odd.items()}
    arrays["odd"] = np.frombuffer(bson.encode(odd), dtype=np.uint8)
    if rows.coarse is not None:  # the coarse lists (helpers.retrieval.coarse), every row assigned
        rows.coarse.pack(rows.emb, n)  # with the embeddings grouped by list: a new process needs no packing
        arrays["coarse_centroids"] = rows.coarse.centroids.reshape(-1)
        arrays["coarse_assign"] = np.ascontiguousarray(rows.coarse.assign[:n])
        arrays["coarse_order"] = rows.coarse.order.astype(np.int64)
        arrays["coarse_starts"] = rows.coarse.starts.astype(np.int64)
        arrays["coarse_vectors"] = rows.coarse.vectors.reshape(-1)
    meta = {
        "coarse_trained_n": None if rows.coarse is None else rows.coarse.trained_n,
        "sessions": rows.sessions,
        "speakers": rows.speakers_seen,
        "speaker_rows": dict(rows.speaker_rows),
        "wrong_dim": rows.wrong_dim,
    }
    return arrays, meta


def write_snapshot(path: Path, rows: UserRows, *, user_id: str, epoch: str, settled: int) -> int:
    """Write the user's index file atomically (a temporary file, then a rename); returns its size in bytes.
    The rows then use the packed texts and postings it holds (their per-row dicts are let go)."""
    arrays, meta = _frozen(rows)
    n, dim = rows.n, rows.dim
    capacity = n + max(256, n // 4)  # rows a process may add without copying the matrix (a sparse tail)
    layout, offset = {}, 0
    for name, array in arrays.items():
        offset = _align(offset)
        layout[name] = {"dtype": array.dtype.str, "shape": list(array.shape), "offset": offset}
        offset += array.nbytes
    emb_offset = _align(offset, ALIGN)
    end = emb_offset + capacity * dim * 4
    header = {
        "format": FORMAT,
        "user": _user_key(user_id),
        "epoch": epoch,
        "settled": int(settled),
        "dim": dim,
        "n": n,
        "capacity": capacity,
        "emb_offset": emb_offset,
        "end": end,
        "arrays": layout,
        **meta,
    }
    text = json.dumps(header, ensure_ascii=False).encode("utf-8", "surrogatepass")
    start = _align(16 + len(text), ALIGN)
    private_dir(path.parent)  # memory text is in this file: owner-only (helpers.db.private)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with os.fdopen(private_file(tmp), "wb") as out:
            out.write(MAGIC + len(text).to_bytes(8, "little") + text)
            for name, array in arrays.items():
                out.seek(start + layout[name]["offset"])
                out.write(memoryview(array).cast("B") if array.nbytes else b"")
            out.seek(start + emb_offset)
            out.write(memoryview(np.ascontiguousarray(rows.emb[:n], dtype="<f4")).cast("B"))
            out.truncate(start + end)  # the rows not written yet: a hole, no disk used where holes exist
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    vocab = Vocabulary(arrays["term_blob"], arrays["term_starts"])
    base = (vocab, arrays["post_starts"], arrays["post_rows"], arrays["post_counts"])
    rows.adopt((arrays["text_blob"], arrays["text_starts"]), Postings(base, base_n=n))
    return start + end


def read_header(path: Path) -> dict | None:
    """The file's header (a dict), or None when there is no readable index file at `path`."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
            if len(head) < 16 or head[:8] != MAGIC:
                return None
            length = int.from_bytes(head[8:], "little")
            if length > 64 * 2**20:
                return None
            header = json.loads(f.read(length).decode("utf-8", "surrogatepass"))
    except (OSError, ValueError):
        return None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        return None
    header["start"] = _align(16 + length, ALIGN)
    return header


def open_snapshot(path: Path, *, dim: int, user_id: str) -> tuple[UserRows, dict] | None:
    """The rows in the user's index file, mapped copy-on-write, and its header; None when absent or unusable."""
    header = read_header(path)
    if header is None or header.get("user") != _user_key(user_id) or header.get("dim") != dim:
        return None
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size < header["start"] + header["end"]:
                return None
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
        return _rows_from(mapped, header, dim), header
    except (OSError, ValueError, KeyError, TypeError, bson.errors.BSONError):
        return None


def _rows_from(mapped: mmap.mmap, header: dict, dim: int) -> UserRows:
    start, n, capacity = header["start"], int(header["n"]), int(header["capacity"])
    if not 0 <= n <= capacity:
        raise ValueError("bad row count")

    def array(name: str) -> np.ndarray:
        spec = header["arrays"][name]
        count = int(np.prod(spec["shape"])) if spec["shape"] else 1
        return np.frombuffer(mapped, dtype=np.dtype(spec["dtype"]), count=count, offset=start + spec["offset"])

    rows = UserRows(dim)
    rows.grow(capacity, emb=False)  # the columns: copied (small); the embedding matrix: mapped below
    rows.n = n
    for name in COLUMNS:
        column = array(name)
        if len(column) != n:
            raise ValueError(f"column {name} has {len(column)} rows, not {n}")
        getattr(rows, name)[:n] = column
    rows.emb = np.frombuffer(mapped, dtype="<f4", count=capacity * dim, offset=start + header["emb_offset"]).reshape(
        capacity, dim
    )
    rows.sessions = list(header["sessions"])
    rows.session_of = {s: i for i, s in enumerate(rows.sessions)}
    rows.speakers_seen = list(header["speakers"])
    rows.speaker_code = {s: i for i, s in enumerate(rows.speakers_seen)}
    rows.speaker_rows.update(header["speaker_rows"])
    rows.wrong_dim = int(header.get("wrong_dim", 0))
    if header.get("coarse_trained_n") is not None:
        centroids = array("coarse_centroids").reshape(-1, dim)
        rows.coarse = CoarseIndex(centroids, array("coarse_assign"), header["coarse_trained_n"])
        rows.coarse.order, rows.coarse.starts = array("coarse_order"), array("coarse_starts")
        rows.coarse.vectors, rows.coarse.packed_n = array("coarse_vectors").reshape(-1, dim), n  # mapped
    rows.erased = set(array("erased").tolist())
    odd = bson.decode(array("odd").tobytes())
    rows.odd = {kind: {int(row): value for row, value in values.items()} for kind, values in odd.items()}
    vocab = Vocabulary(array("term_blob"), array("term_starts"))
    postings = Postings((vocab, array("post_starts"), array("post_rows"), array("post_counts")), base_n=n)
    rows.adopt((array("text_blob"), array("text_starts")), postings)
    return rows


def remove_user_files(store: Store, user_id: str, *, root: Path | None = None) -> bool:
    """Delete the user's index file for this store on this machine (erasure); True if there was one."""
    root = index_root(store) if root is None else root
    if root is None:
        return False
    path = snapshot_path(root, store.db.name, user_id)
    try:
        path.unlink()
        return True
    except FileNotFoundError:
        return False


def remove_database_files(store: Store) -> None:
    """Delete every index file of the store's database on this machine (after dropping the database)."""
    root = index_root(store)
    if root is not None:
        shutil.rmtree(Path(root) / store.db.name, ignore_errors=True)
