"""No typed-in results (issue 21): a notebook's markdown states no percentage or multiplier that no cell computes.

Every `12%`, `3.5×`, `~4x` or `fourfold` in a markdown cell (prose, tables and the code in exercise solutions
alike) must be a *definition* on the allow-list below: a price rule, the range a sweep covers. A measured figure
belongs in a cell's output, printed from what the cell computed or from a results file a benchmark wrote.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))

# a number followed by % / × / x (as in "4x"), or a word multiplier such as "fourfold"
NUMBER = re.compile(
    r"(?<![\w.])[~≈]?\d[\d,]*(?:\.\d+)?\s*(?:%|×|x(?![\w]))|\b(?:two|three|four|five|six|seven|eight|"
    r"nine|ten|hundred|thousand|many|\d+)-?fold\b",
    re.IGNORECASE,
)

# (notebook name prefix, text around the number that makes it a definition, why it is not a result)
ALLOWED = [
    ("03_", "0.1× the input price", "Anthropic's price rule for cache reads"),
    ("03_", "at 1.25×", "Anthropic's price rule for 5-minute cache writes"),
    ("03_", "writes its prefix at 1.25x", "the same price rule, in an exercise solution's comment"),
    ("03_", "# 5× — both prices are five times Haiku's", "a ratio of two list prices, stated as such"),
    ("06_", "0% … 100% of the budget", "the range of shares the sweep tries"),
    ("", "95% interval", "the confidence level of an interval (a definition, not a measured figure)"),
]


def _markdown(path: Path) -> list[tuple[str, str]]:
    return [
        (c.get("id", "?"), "".join(c["source"]))
        for c in json.loads(path.read_text())["cells"]
        if c["cell_type"] == "markdown"
    ]


def typed_numbers(name: str, cells: list[tuple[str, str]]) -> list[str]:
    """`cell id: 'number' in '…context…'` for every percentage or multiplier not covered by the allow-list."""
    allowed = [phrase for prefix, phrase, _ in ALLOWED if name.startswith(prefix)]
    found = []
    for cell_id, text in cells:
        for m in NUMBER.finditer(text):
            if not _covered(text, m, allowed):
                found.append(f"{cell_id}: {m.group()!r} in {text[max(0, m.start() - 50) : m.end() + 30]!r}")
    return found


def _covered(text: str, m: re.Match, phrases: list[str]) -> bool:
    """Whether the match lies inside an occurrence of an allowed phrase."""
    for phrase in phrases:
        start = text.find(phrase)
        while start != -1:
            if start <= m.start() and m.end() <= start + len(phrase):
                return True
            start = text.find(phrase, start + 1)
    return False


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_markdown_states_no_result_number(path: Path) -> None:
    found = typed_numbers(path.name, _markdown(path))
    assert found == [], (
        f"{path.name}: typed-in figures in markdown (compute them in a cell, or add a definition to "
        f"ALLOWED with its reason):\n  " + "\n  ".join(found)
    )


def test_the_check_sees_typed_in_results() -> None:
    cells = [
        ("a", "| vector stage | 88.5% | 1,989 |"),
        ("b", "naive ~4x, the others ~2x"),
        ("c", "it over-counts about fourfold"),
        ("d", "memories may take 0% … 100% of the budget left"),
        ("e", "a 3.5 × speed-up"),
        ("f", "Python 3.12, 200,000 tokens, 4x4 grid, box2x"),
    ]
    found = typed_numbers("06_long_conversations.ipynb", cells)
    assert [f.split(":")[0] for f in found] == ["a", "b", "b", "c", "e"]


def test_every_allowed_definition_is_used() -> None:
    """An allow-list entry no notebook needs any more is removed, so the list stays a list of real definitions."""
    text = {p.name: "\n".join(t for _, t in _markdown(p)) for p in NOTEBOOKS}
    unused = [
        (prefix, phrase)
        for prefix, phrase, _ in ALLOWED
        if not any(name.startswith(prefix) and phrase in body for name, body in text.items())
    ]
    assert unused == [], f"allow-list entries no notebook uses: {unused}"
