"""The seeds are paraphrased, never copied (issue 32): no run of 8 consecutive words of the two blog posts the project
grew from appears in a notebook, README.md or docs/.

The posts stay outside the repository; tests/data/seed_shingles.json holds only truncated hashes of their normalised
8-word runs (written by `python -m scripts.seed_shingles`). Where the posts are on disk (../shared/seeds/), the test
also checks that the hashes are still the posts' own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scripts.seed_shingles import WIDTH, shingles, words

ROOT = Path(__file__).resolve().parents[1]
STORED = json.loads((ROOT / "tests" / "data" / "seed_shingles.json").read_text(encoding="utf-8"))
SEEDS = ROOT.parent / "shared" / "seeds"
TEXTS = sorted((ROOT / "notebooks").rglob("*.ipynb")) + [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


def _text(path: Path) -> str:
    if path.suffix == ".ipynb":
        return "\n".join("".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"])
    return path.read_text(encoding="utf-8")


def copied(text: str) -> list[str]:
    """The 8-word runs of `text` that are runs of a seed post."""
    w, have = words(text), set(STORED["shingles"])
    runs = [" ".join(w[i : i + WIDTH]) for i in range(len(w) - WIDTH + 1)]
    return [run for run in runs if shingles(run) & have]


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_sentence_of_the_seeds_is_copied(path: Path) -> None:
    found = copied(_text(path))
    assert found == [], f"{path.relative_to(ROOT)} copies the seed posts: {found[:5]} (say it in your own words)"


def test_the_check_sees_a_copied_sentence() -> None:
    assert STORED["width"] == WIDTH and STORED["posts"] == 2 and len(STORED["shingles"]) > 1000
    original = "A 100-turn conversation pays for the first turn 100 times."  # one line of a seed post
    assert copied(f"As they say: {original}") and not copied("In a chat of N turns the first message is paid N times.")


def test_the_stored_hashes_are_the_seeds_own() -> None:
    posts = sorted(SEEDS.glob("*.txt"))
    if not posts:  # a clone without ../shared: the stored hashes are what the checks above use
        pytest.skip(f"the seed posts are not beside this clone ({SEEDS})")
    assert sorted(set().union(*(shingles(p.read_text(encoding="utf-8")) for p in posts))) == STORED["shingles"]
