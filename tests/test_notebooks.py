"""Notebook hygiene: naming, no outputs, no empty cells, house style, working links."""

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
NAME = re.compile(r"^(\d\d)_[a-z0-9]+(?:_[a-z0-9]+)*\.ipynb$")


def load(path):
    return json.loads(path.read_text())


def source(cell):
    return "".join(cell["source"])


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 2


def test_names_are_numbered_snake_case_and_contiguous():
    numbers = []
    for nb in NOTEBOOKS:
        m = NAME.match(nb.name)
        assert m, f"{nb.name} is not NN_snake_case.ipynb"
        numbers.append(int(m.group(1)))
    assert numbers == list(range(1, len(numbers) + 1))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_without_outputs_and_without_empty_cells(path):
    for i, cell in enumerate(load(path)["cells"]):
        assert source(cell).strip(), f"{path.name}: cell {i} is empty"
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [], f"{path.name}: cell {i} has outputs"
            assert cell.get("execution_count") is None, f"{path.name}: cell {i} has an execution count"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_house_style(path):
    cells = load(path)["cells"]
    first = source(cells[0])
    assert first.startswith("# "), "opens with a title"
    assert "What you'll learn" in first and "Recap" in first
    code = "\n".join(source(c) for c in cells if c["cell_type"] == "code")
    markdown = "\n".join(source(c) for c in cells if c["cell_type"] == "markdown")
    assert "describe(" in code, "prints which model and store are in use"
    assert "## Summary" in markdown and "## Exercises" in markdown and "<details>" in markdown
    assert "assert " in code, "claims are asserted"
    for banned in ("%pip", "!pip", "input(", "getpass", "sys.path", "ANTHROPIC_API_KEY=", "sk-ant"):
        assert banned not in code, f"{banned!r} in a code cell"
    lengths = [len(source(c).splitlines()) for c in cells if c["cell_type"] == "code"]
    assert max(lengths) <= 30, "no code cell over 30 lines"
    assert sorted(lengths)[len(lengths) // 2] <= 8, "median code cell at most 8 lines"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_relative_links_resolve(path):
    markdown = "\n".join(source(c) for c in load(path)["cells"] if c["cell_type"] == "markdown")
    links = re.findall(r"\]\(([^)#\s]+)", markdown)
    for link in links:
        if "://" in link:
            continue
        assert (path.parent / link).exists(), f"{path.name} links to missing {link}"


def test_every_notebook_but_the_last_links_to_the_next():
    for current, following in zip(NOTEBOOKS, NOTEBOOKS[1:]):
        assert f"]({following.name})" in current.read_text(), f"{current.name} does not link to {following.name}"
