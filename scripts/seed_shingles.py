"""Build-time tool (not part of the package): hash every 8-word run of the two seed blog posts, for the paraphrase test.

The project grew from two blog posts (kept outside the repository, in ../shared/seeds/); its text must paraphrase them,
never copy them. tests/test_seeds_paraphrased.py checks the notebooks, README.md and docs/ against the hashes this
script writes to tests/data/seed_shingles.json: only truncated SHA-256 digests of normalised 8-word runs are
committed, not a word of the posts.

    python -m scripts.seed_shingles [SEEDS_DIR]     # default ../shared/seeds (beside the repository)
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "seed_shingles.json"
WIDTH = 8  # words per run: long enough that common phrases ("the number of tokens in the") do not collide


def words(text: str) -> list[str]:
    """Lower-case word and number tokens (punctuation, markup and code symbols dropped)."""
    return re.findall(r"[a-z0-9]+", text.lower())


def shingles(text: str, width: int = WIDTH) -> set[str]:
    """The first 16 hex digits of SHA-256 of every run of `width` consecutive words."""
    w = words(text)
    return {hashlib.sha256(" ".join(w[i : i + width]).encode()).hexdigest()[:16] for i in range(len(w) - width + 1)}


def main(argv: list[str]) -> int:
    seeds = Path(argv[0]) if argv else ROOT.parent / "shared" / "seeds"
    texts = sorted(p for p in seeds.glob("*.txt"))
    if not texts:
        print(f"no seed posts (*.txt) in {seeds}", file=sys.stderr)
        return 2
    digests = sorted(set().union(*(shingles(p.read_text(encoding="utf-8")) for p in texts)))
    OUT.write_text(json.dumps({"width": WIDTH, "posts": len(texts), "shingles": digests}, indent=0) + "\n")
    print(f"{len(digests)} shingles from {len(texts)} posts -> {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
