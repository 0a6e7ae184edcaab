"""No typed-in results (issues 21, 32): a notebook's markdown states no percentage, multiplier or quantifier that no cell
computes or asserts.

Every `12%`, `3.5×`, `~4x` or `fourfold` in a markdown cell (prose, tables and the code in exercise solutions
alike) must be a *definition* on the allow-list below: a price rule, the range a sweep covers. A measured figure
belongs in a cell's output, printed from what the cell computed or from a results file a benchmark wrote.

Quantifier words are claims too: "several times", "nearly every", "almost none", "most", "a third", "one in four",
"5 times", "twice". Each one in a notebook's markdown must be on QUANTIFIERS with the id of the code cell (in the same
notebook) whose `assert` checks it, and the text of that assert, so the prose can never say more than the check does
(the test fails when the cell or the assert is gone) — or be marked a definition with its reason.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(ROOT.glob("*.ipynb")) + sorted((ROOT / "further").glob("*.ipynb"))

# a number followed by % / × / x (as in "4x"), or a word multiplier such as "fourfold"
NUMBER = re.compile(
    r"(?<![\w.])[~≈]?\d[\d,]*(?:\.\d+)?\s*(?:%|×|x(?![\w]))|\b(?:two|three|four|five|six|seven|eight|"
    r"nine|ten|hundred|thousand|many|\d+)-?fold\b",
    re.IGNORECASE,
)
_COUNT = r"(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|fifty|a hundred|hundred|a thousand|\d+)"
# hedged and proportional quantifiers: a claim about how many or how much, which a cell must check
QUANTIFIER = re.compile(
    rf"\b(?:several|many|most|mostly|nearly|almost|virtually|majority|minority|a few|a handful|"
    rf"half|halves|thirds?|quarters?|fifths?|tenths?|hundredths?|one in {_COUNT}|{_COUNT} in {_COUNT}|"
    rf"{_COUNT} times|twice|thrice|dozens?|fraction)\b",
    re.IGNORECASE,
)
# phrases with a quantifier word that claim no amount ("at most" is a bound someone set; "the most recent" an order)
NOT_CLAIMS = (
    "at most",
    "most recent",
    "how many",
    "as many",
    "so many",
    "third person",
    "second half",
    "report half",
    "Report half",
)

# (notebook path prefix, text around the number that makes it a definition, why it is not a result)
ALLOWED = [
    ("further/02_", "0.1× the input price", "Anthropic's price rule for cache reads"),
    ("further/02_", "at 1.25×", "Anthropic's price rule for 5-minute cache writes"),
    ("03_", "# 5× — both prices are five times Haiku's", "a ratio of two list prices, stated as such"),
    ("further/02_", "at 1.25x", "Anthropic's price rule for 5-minute cache writes"),
    ("further/05_", "0% … 100% of the budget", "the range of shares the sweep tries"),
    ("", "95% interval", "the confidence level of an interval (a definition, not a measured figure)"),
]

# (notebook path prefix, the phrase, the id of the cell that asserts it, the assert's text) or
# (notebook path prefix, the phrase, "definition", why it claims no measured amount)
QUANTIFIERS = [
    ("further/02_", "at a tenth of the price", "definition", "the cache-read price rule (0.1×), restated in words"),
    ("02_", "chat twice more", "definition", "an exercise's instruction"),
    ("02_", "six times the first call", "definition", "an exercise's question, which its solution computes"),
    ("further/03_", "halves the chunk when the request is too long", "definition", "what the code does, not an amount"),
    ("further/04_", "less than a tenth of that", "nb05-26", 'latency["sync_ms"]["p50"] / 10'),
    ("further/05_", "Memories may take most of the rest", "definition", "the policy's rule (helpers/memory/budget.py)"),
    ("further/05_", "memories deserve at least half of the budget", "nb05-budget-6", 'best["share"] >= 0.5'),
    ("03_", "# 5× — both prices are five times Haiku's", "definition", "a ratio of two list prices"),
    ("further/01_", "many copies of the conversation", "nb03-43", "assert copies > N_TURNS / 3"),
    (
        "further/01_",
        "the first message is paid for N times",
        "nb03-41",
        "assert carried_turn_1 == len(sent) == N_TURNS",
    ),
    ("further/02_", "then cut it to half (the low mark)", "definition", "the fold's low mark, a setting"),
    (
        "further/04_",
        "at under a tenth of naive's tokens",
        "nb05-29",
        '< rows["naive"]["memory_tokens_per_question"] / 10',
    ),
    ("further/04_", "at a fraction of naive history's tokens", "nb05-29", "/ 10"),
    (
        "further/05_",
        "at a multiple of the largest budget (the cell asserts more than twice)",
        "nb06-lc-10",
        "> 2 * max(budgets)",
    ),
    (
        "further/05_",
        "Multi-hop and open-domain questions stay hard for every method: their answers are spread over many turns",
        "definition",
        "how those categories are defined in the data (answers spread over turns), not a measured share",
    ),
    ("", "Going further", "definition", "a title"),
]


def _markdown(path: Path) -> list[tuple[str, str]]:
    return [
        (c.get("id", "?"), "".join(c["source"]))
        for c in json.loads(path.read_text())["cells"]
        if c["cell_type"] == "markdown"
    ]


def _code(path: Path) -> dict[str, str]:
    return {
        c.get("id", "?"): "".join(c["source"])
        for c in json.loads(path.read_text())["cells"]
        if c["cell_type"] == "code"
    }


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _covered(text: str, m: re.Match, phrases: list[str]) -> bool:
    """Whether the match lies inside an occurrence of an allowed phrase."""
    for phrase in phrases:
        start = text.find(phrase)
        while start != -1:
            if start <= m.start() and m.end() <= start + len(phrase):
                return True
            start = text.find(phrase, start + 1)
    return False


def typed_numbers(name: str, cells: list[tuple[str, str]]) -> list[str]:
    """`cell id: 'number' in '…context…'` for every percentage or multiplier not covered by the allow-list."""
    allowed = [phrase for prefix, phrase, _ in ALLOWED if name.startswith(prefix)]
    found = []
    for cell_id, text in cells:
        for m in NUMBER.finditer(text):
            if not _covered(text, m, allowed):
                found.append(f"{cell_id}: {m.group()!r} in {text[max(0, m.start() - 50) : m.end() + 30]!r}")
    return found


def quantifiers(name: str, cells: list[tuple[str, str]]) -> list[str]:
    """`cell id: 'word' in '…context…'` for every quantifier no QUANTIFIERS entry covers."""
    allowed = [phrase for prefix, phrase, _cell, _why in QUANTIFIERS if name.startswith(prefix)] + list(NOT_CLAIMS)
    found = []
    for cell_id, text in cells:
        for m in QUANTIFIER.finditer(text):
            if not _covered(text, m, allowed):
                found.append(f"{cell_id}: {m.group()!r} in {text[max(0, m.start() - 50) : m.end() + 30]!r}")
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_name)
def test_markdown_states_no_result_number(path: Path) -> None:
    found = typed_numbers(_name(path), _markdown(path))
    assert found == [], (
        f"{_name(path)}: typed-in figures in markdown (compute them in a cell, or add a definition to "
        f"ALLOWED with its reason):\n  " + "\n  ".join(found)
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_name)
def test_markdown_quantifiers_are_asserted(path: Path) -> None:
    found = quantifiers(_name(path), _markdown(path))
    assert found == [], (
        f"{_name(path)}: quantifier words no cell checks (rephrase with what the cell prints, or add the phrase to "
        f"QUANTIFIERS with the id of the cell whose assert checks it):\n  " + "\n  ".join(found)
    )


@pytest.mark.parametrize("entry", [q for q in QUANTIFIERS if q[2] != "definition"], ids=lambda q: q[1][:40])
def test_each_asserted_quantifier_names_a_cell_that_asserts_it(entry) -> None:
    prefix, phrase, cell_id, assertion = entry
    paths = [p for p in NOTEBOOKS if _name(p).startswith(prefix) and phrase in "\n".join(t for _, t in _markdown(p))]
    assert paths, f"no notebook {prefix}* says {phrase!r}"
    for path in paths:
        code = _code(path).get(cell_id)
        assert code is not None, f"{_name(path)} has no code cell {cell_id} (named for {phrase!r})"
        assert "assert " in code and assertion in code, f"{_name(path)} cell {cell_id} no longer asserts {assertion!r}"


def test_the_check_sees_typed_in_results() -> None:
    cells = [
        ("a", "| vector stage | 88.5% | 1,989 |"),
        ("b", "naive ~4x, the others ~2x"),
        ("c", "it over-counts about fourfold"),
        ("d", "memories may take 0% … 100% of the budget left"),
        ("e", "a 3.5 × speed-up"),
        ("f", "Python 3.12, 200,000 tokens, 4x4 grid, box2x"),
    ]
    found = typed_numbers("further/05_long_conversations.ipynb", cells)
    assert [f.split(":")[0] for f in found] == ["a", "b", "b", "c", "e"]


def test_the_check_sees_quantifier_words() -> None:
    cells = [
        ("a", "It over-counts several times."),
        ("b", "the vector stage recalls nearly every planted item"),
        ("c", "the last turns alone hold almost none"),
        ("d", "most questions, a third or more, one in four, 5 times, twice"),
        ("e", "keep at most 300 tokens; the most recent exchange"),
        ("f", "the answer is in the request; every turn grows"),
    ]
    found = quantifiers("02_history_list.ipynb", cells)
    words = [f.split("'")[1].lower() for f in found]
    assert [f.split(":")[0] for f in found] == ["a", "b", "c", "d", "d", "d", "d", "d"]
    assert words == ["several", "nearly", "almost", "most", "third", "one in four", "5 times", "twice"]


def test_every_allowed_entry_is_used() -> None:
    """An allow-list entry no notebook needs any more is removed, so the lists stay lists of real claims."""
    text = {_name(p): "\n".join(t for _, t in _markdown(p)) for p in NOTEBOOKS}
    entries = [(prefix, phrase) for prefix, phrase, _ in ALLOWED] + [(q[0], q[1]) for q in QUANTIFIERS]
    unused = [
        (prefix, phrase)
        for prefix, phrase in entries
        if not any(name.startswith(prefix) and phrase in body for name, body in text.items())
    ]
    assert unused == [], f"allow-list entries no notebook uses: {unused}"
