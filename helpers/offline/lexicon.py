"""Plumbing: what the offline reader knows about English words, from WordNet 3.0 (helpers/offline/data/wordnet.json.gz).

Four questions a reader asks of two words, answered from a lexicon of the whole language rather than lists
written for the sentences at hand:

- `synonymous("nan", "grandmother")`: one sense of each is the same concept;
- `is_a("collie", "dog")`, `is_a("jazz", "music")`: a sense of the first is a kind of a sense of the second;
- `siblings("niece", "nephew")`, `siblings("june", "august")`: different concepts of the same close kind;
- `opposite("new", "old")`: WordNet lists them as antonyms.

Words may be given as they are written or as the reader's stems (helpers.offline.language.stem). The file is
built by scripts.build_wordnet; WordNet 3.0 Copyright 2006 by Princeton University (data/WORDNET_LICENSE).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import os
import sqlite3
import threading
from pathlib import Path

from helpers.offline import language
from helpers.offline.language import stem

__all__ = ["senses", "synonymous", "is_a", "siblings", "opposite", "known", "DATA"]

DATA = Path(__file__).resolve().parent / "data" / "wordnet.json.gz"
GENERAL_DEPTH = 4  # kinds this close to the root ("entity", "object", "abstraction", "person") are not a kind asked for
MAX_IS_A = 8  # hypernym steps followed from a word to a kind it belongs to
SIBLING_STEPS = (
    2  # two words are siblings when they meet this many steps up (niece → kinswoman → relative ← kinsman ← nephew)
)


TABLES = ("lemmas", "by_stem", "hyper", "antonyms", "words")  # what the reader looks up, each key -> a list


def _read_json() -> dict:
    """The lexicon as the file holds it, plus `by_stem` (a reader's stem -> synsets): seven MB of JSON to decode."""
    with gzip.open(DATA, "rt", encoding="utf-8") as fh:
        lex = json.load(fh)
    by_stem: dict[str, list[str]] = {}
    for lemma, ids in lex["lemmas"].items():
        by_stem.setdefault(stem(lemma), []).extend(ids)
    lex["by_stem"] = {k: list(dict.fromkeys(v)) for k, v in by_stem.items()}
    return lex


class _Table:
    """One table of the lexicon read from its SQLite copy a key at a time (a dict's `get`, `[]` and `in`)."""

    def __init__(self, con: sqlite3.Connection, lock: threading.Lock, kind: str):
        self._con, self._lock, self._kind, self._seen = con, lock, kind, {}

    def get(self, key: str, default=None):
        if key not in self._seen:
            with self._lock:
                row = self._con.execute("SELECT value FROM t WHERE kind = ? AND key = ?", (self._kind, key)).fetchone()
            self._seen[key] = json.loads(row[0]) if row else None
        found = self._seen[key]
        return default if found is None else found

    def __getitem__(self, key: str):
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None


def _cache_file() -> Path:
    """Where the SQLite copy lives: the user's cache dir, named by the data file and the stemmer it was built with
    (a changed stemmer makes other `by_stem` keys)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "goldfish-to-elephant"
    digest = hashlib.sha256(DATA.read_bytes() + Path(language.__file__).read_bytes()).hexdigest()[:16]
    return base / f"wordnet-{digest}.sqlite"


def _build(path: Path) -> None:
    """Write the SQLite copy of the lexicon (once per machine and data file: a few seconds), whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)  # first: where it cannot be written, nothing is decoded twice
    lex = _read_json()
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    con = sqlite3.connect(tmp)
    try:
        con.execute("CREATE TABLE t (kind TEXT, key TEXT, value TEXT, PRIMARY KEY (kind, key)) WITHOUT ROWID")
        con.executemany(
            "INSERT INTO t VALUES (?, ?, ?)",
            ((kind, key, json.dumps(value)) for kind in TABLES for key, value in lex[kind].items()),
        )
        con.commit()
    finally:
        con.close()
    os.replace(tmp, path)  # another process building it at the same time writes the same bytes


@functools.lru_cache(maxsize=1)
def _lexicon() -> dict:
    """The lexicon's tables. Decoding the JSON costs about a second in every process that reads a word (every notebook
    kernel, every terminal chat), so it is decoded once per machine into a SQLite copy that each process then reads a
    key at a time; where no copy can be written, the JSON is decoded in memory as before."""
    path = _cache_file()
    try:
        if not path.exists():
            _build(path)
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        lock = threading.Lock()
        return {kind: _Table(con, lock, kind) for kind in TABLES}
    except (OSError, sqlite3.Error):
        lex = _read_json()
        return {kind: lex[kind] for kind in TABLES}


_NOUN_ENDINGS = (("ies", "y"), ("ches", "ch"), ("shes", "sh"), ("xes", "x"), ("ses", "s"), ("men", "man"), ("s", ""))


def senses(word: str, pos: str | None = None) -> tuple[str, ...]:
    """Synset ids of `word` (as written, a plural, or a reader's stem), most frequent sense first."""
    return _senses(word.lower().replace("’", "'").removesuffix("'s"), pos)


@functools.lru_cache(maxsize=100000)
def _senses(w: str, pos: str | None) -> tuple[str, ...]:
    lex = _lexicon()
    found = list(lex["lemmas"].get(w, ()))
    if not found:
        for end, base in _NOUN_ENDINGS:
            if w.endswith(end) and w[: len(w) - len(end)] + base in lex["lemmas"]:
                found = list(lex["lemmas"][w[: len(w) - len(end)] + base])
                break
    if not found:
        found = (
            list(lex["lemmas"].get(stem(w), ()))
            or list(lex["by_stem"].get(w, ()))
            or list(lex["by_stem"].get(stem(w), ()))
        )
    return tuple(s for s in found if pos is None or s[0] == pos)


def known(word: str) -> bool:
    """Whether the lexicon has the word at all (names and brands mostly are not)."""
    return bool(senses(word))


@functools.lru_cache(maxsize=200000)
def _ancestors(sid: str) -> dict[str, int]:
    """Every hypernym of a synset with the fewest steps to it (the synset itself at 0)."""
    hyper = _lexicon()["hyper"]
    out, frontier = {sid: 0}, [sid]
    for step in range(1, MAX_IS_A + 1):
        frontier = [h for s in frontier for h in hyper.get(s, ()) if h not in out]
        for h in frontier:
            out[h] = step
    return out


@functools.lru_cache(maxsize=200000)
def _depth(sid: str) -> int:
    """Steps from the synset to the root of its hierarchy (the shortest path)."""
    hyper = _lexicon()["hyper"]
    depth, frontier, seen = 0, [sid], {sid}
    while frontier and all(hyper.get(s) for s in frontier):
        frontier = [h for s in frontier for h in hyper[s] if h not in seen]
        seen.update(frontier)
        depth += 1
    return depth


@functools.lru_cache(maxsize=200000)
def synonymous(a: str, b: str, first: int = 4, first_b: int | None = None) -> bool:
    """One of the first senses of `a` is one of the first senses of `b` (the words name the same concept)."""
    if a.lower() == b.lower():
        return True
    return bool(set(senses(a)[:first]) & set(senses(b)[: first if first_b is None else first_b]))


@functools.lru_cache(maxsize=200000)
def is_a(member: str, kind: str, first: int = 2, general: bool = False, depth: int = GENERAL_DEPTH) -> bool:
    """A sense of `member` (among its first) is, a few steps up, a sense of `kind` that is not too general
    (`general=True`: any sense of `kind`, "attribute" and "measure" included)."""
    kinds = set(senses(kind, "n")[:1]) if general else {k for k in senses(kind) if _depth(k) >= depth}
    if not kinds:
        return False
    return any(anc in kinds and steps > 0 for s in senses(member)[:first] for anc, steps in _ancestors(s).items())


@functools.lru_cache(maxsize=200000)
def siblings(a: str, b: str) -> bool:
    """Different concepts of one close kind: the most frequent noun sense of each meets the other within
    SIBLING_STEPS steps up, at a kind that is not too general, and neither is a kind of the other."""
    sa, sb = senses(a, "n")[:1], senses(b, "n")[:1]
    if not sa or not sb or sa == sb or synonymous(a, b, first=1):
        return False
    up_a = {k: v for k, v in _ancestors(sa[0]).items() if v <= SIBLING_STEPS}
    up_b = {k: v for k, v in _ancestors(sb[0]).items() if v <= SIBLING_STEPS}
    if sa[0] in up_b or sb[0] in up_a:
        return False  # one is a kind of the other ("dog" and "collie")
    return any(_depth(k) >= GENERAL_DEPTH for k in set(up_a) & set(up_b))


@functools.lru_cache(maxsize=200000)
def opposite(a: str, b: str) -> bool:
    """WordNet lists the words as antonyms ("new" / "old", "early" / "late")."""
    ants = _lexicon()["antonyms"]
    la, lb = a.lower(), b.lower()
    return (
        lb in ants.get(la, ())
        or la in ants.get(lb, ())
        or any(x in ants.get(y, ()) for y in _forms(la) for x in _forms(lb))
    )


@functools.lru_cache(maxsize=200000)
def _forms(word: str) -> set[str]:
    """The lemmas a reader's stem or an inflected word stands for."""
    lex = _lexicon()
    out = {word} if word in lex["lemmas"] else set()
    return out | {
        lemma for sid in lex["by_stem"].get(word, ()) for lemma in lex["words"].get(sid, ()) if stem(lemma) == word
    }
