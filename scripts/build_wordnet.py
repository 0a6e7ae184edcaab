"""Build-time tool (not part of the package): build the offline reader's lexicon (helpers/offline/data/wordnet.json.gz) from WordNet 3.0's database files.

The reader needs to know that "nan" is a grandmother, that a collie is a kind of dog, that a niece is not a
nephew and that "new" is the opposite of "old". Hand-written word lists only ever cover the words their
author thought of; WordNet covers the language. This script keeps what the reader uses, small enough to ship:

- `lemmas`: each single-word lemma → its first senses (synset ids, most frequent first);
- `hyper`: synset id → hypernym ids (instance hypernyms too), for every synset on those senses' paths to the root;
- `words`: synset id → its single-word lemmas, for the kept senses;
- `antonyms`: lemma → its direct antonyms.

Run once by a maintainer (the data file is committed; nothing runs this at install or test time):
`apt-get install wordnet-base && python -m scripts.build_wordnet /usr/share/wordnet`.
WordNet 3.0 Copyright 2006 by Princeton University (licence in helpers/offline/data/WORDNET_LICENSE).
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

__all__ = ["build", "main", "SENSES"]

SENSES = {"n": 4, "v": 3, "a": 3, "r": 2}  # senses kept per lemma and part of speech, most frequent first
_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
OUT = Path(__file__).resolve().parent.parent / "helpers" / "offline" / "data" / "wordnet.json.gz"


def _single(word: str) -> bool:
    return word.replace("-", "").isalpha() and "_" not in word


def _read_index(root: Path, pos: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in (root / f"index.{_FILES[pos]}").read_text(encoding="latin-1").splitlines():
        if line.startswith(" "):
            continue
        parts = line.split()
        lemma, n_synsets, n_ptr = parts[0], int(parts[2]), int(parts[3])
        offsets = parts[6 + n_ptr : 6 + n_ptr + n_synsets]
        if _single(lemma):
            out[lemma.lower()] = [pos + o for o in offsets[: SENSES[pos]]]
    return out


def _read_data(root: Path, pos: str) -> dict[str, tuple[list[str], list[str], list[tuple[str, str, str]]]]:
    """synset id → (lemmas, hypernym ids, antonym pointers (source word no, target id, target word no))."""
    out = {}
    for line in (root / f"data.{_FILES[pos]}").read_text(encoding="latin-1").splitlines():
        if line.startswith(" "):
            continue
        parts = line.split(" | ")[0].split()
        offset, n_words = parts[0], int(parts[3], 16)
        lemmas = [parts[4 + 2 * i].split("(")[0].lower() for i in range(n_words)]
        i = 4 + 2 * n_words
        n_ptr = int(parts[i])
        hypers, antonyms = [], []
        for k in range(n_ptr):
            sym, target, tpos, srctgt = parts[i + 1 + 4 * k : i + 5 + 4 * k]
            tpos = "a" if tpos == "s" else tpos
            if sym in ("@", "@i"):
                hypers.append(tpos + target)
            elif sym == "!":
                antonyms.append((srctgt[:2], tpos + target, srctgt[2:]))
        out[pos + offset] = (lemmas, hypers, antonyms)
    return out


def build(root: Path) -> dict:
    """The lexicon as a JSON-able dict, from the WordNet database directory `root`."""
    data: dict = {}
    lemmas: dict[str, list[str]] = {}
    for pos in SENSES:
        data.update(_read_data(root, pos))
        for lemma, ids in _read_index(root, pos).items():
            lemmas.setdefault(lemma, []).extend(ids)
    hyper: dict[str, list[str]] = {}
    words: dict[str, list[str]] = {}
    antonyms: dict[str, set[str]] = {}
    todo = [i for ids in lemmas.values() for i in ids]
    for sid in {i for ids in lemmas.values() for i in ids}:
        words[sid] = [w for w in data[sid][0] if _single(w)]
        for src, target, dst in data[sid][2]:
            src_words = data[sid][0] if src == "00" else [data[sid][0][int(src, 16) - 1]]
            dst_words = data[target][0] if dst == "00" else [data[target][0][int(dst, 16) - 1]]
            for a in filter(_single, src_words):
                antonyms.setdefault(a, set()).update(filter(_single, dst_words))
    while todo:
        sid = todo.pop()
        if sid in hyper:
            continue
        hyper[sid] = data[sid][1]
        todo.extend(data[sid][1])
    # hypernym-only synsets keep one lemma, so a kind can be named ("music" for "jazz"'s parent's parent)
    for sid in hyper:
        words.setdefault(sid, [w for w in data[sid][0] if _single(w)][:3])
    return {
        "source": "WordNet 3.0 (Princeton University), via scripts.build_wordnet",
        "senses": SENSES,
        "lemmas": lemmas,
        "hyper": {k: v for k, v in hyper.items() if v},
        "words": words,
        "antonyms": {k: sorted(v) for k, v in antonyms.items()},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wordnet_dir", type=Path, help="directory with WordNet 3.0's index.* and data.* files")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    lexicon = build(args.wordnet_dir)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as fh:
        fh.write(json.dumps(lexicon, sort_keys=True, separators=(",", ":")).encode())  # no name, no time: same bytes
    print(
        f"{args.out}: {len(lexicon['lemmas'])} lemmas, {len(lexicon['hyper'])} synsets with hypernyms, "
        f"{args.out.stat().st_size / 1e6:.1f} MB"
    )


if __name__ == "__main__":
    main()
