"""Notebook hygiene: naming, no outputs, no empty cells, house style, working links, the core arc's size.

The core lessons are `notebooks/NN_*.ipynb`, numbered contiguously, each linking to the next; going-further notebooks
are `notebooks/further/NN_*.ipynb` (numbered on their own, so inserting a core lesson renames none of them), each
linked from a core lesson and linking back to one. Both kinds follow the house style and run under nbval.
"""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "notebooks"
CORE = sorted(ROOT.glob("*.ipynb"))
FURTHER = sorted((ROOT / "further").glob("*.ipynb"))
NOTEBOOKS = CORE + FURTHER
NAME = re.compile(r"^(\d\d)_[a-z0-9]+(?:_[a-z0-9]+)*\.ipynb$")
MAX_CELLS = 35  # a core lesson is one idea a learner finishes in a sitting (learner minutes: tests/test_workshop.py)


def load(path):
    return json.loads(path.read_text())


def source(cell):
    return "".join(cell["source"])


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def markdown_links(path: Path) -> list[str]:
    markdown = "\n".join(source(c) for c in load(path)["cells"] if c["cell_type"] == "markdown")
    return [link for link in re.findall(r"\]\(([^)#\s]+)", markdown) if "://" not in link]


def test_there_are_notebooks():
    assert len(CORE) >= 2 and len(FURTHER) >= 1


@pytest.mark.parametrize("folder", [CORE, FURTHER], ids=["core", "further"])
def test_names_are_numbered_snake_case_and_contiguous(folder):
    numbers = []
    for nb in folder:
        m = NAME.match(nb.name)
        assert m, f"{rel(nb)} is not NN_snake_case.ipynb"
        numbers.append(int(m.group(1)))
    assert numbers == list(range(1, len(numbers) + 1))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=rel)
def test_committed_without_outputs_and_without_empty_cells(path):
    for i, cell in enumerate(load(path)["cells"]):
        assert source(cell).strip(), f"{rel(path)}: cell {i} is empty"
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [], f"{rel(path)}: cell {i} has outputs"
            assert cell.get("execution_count") is None, f"{rel(path)}: cell {i} has an execution count"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=rel)
def test_house_style(path):
    cells = load(path)["cells"]
    first = source(cells[0])
    assert first.startswith("# "), "opens with a title"
    assert ("What you'll learn" in first or "What you'll be able to do" in first) and "Recap" in first
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


@pytest.mark.parametrize("path", CORE, ids=rel)
def test_a_core_lesson_has_at_most_35_cells(path):
    n = len(load(path)["cells"])
    assert n <= MAX_CELLS, f"{rel(path)} has {n} cells (limit {MAX_CELLS}): move depth to a going-further notebook"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=rel)
def test_relative_links_resolve_to_files(path):
    """Every relative link opens a file: a link to a folder opens an error dialog in JupyterLab."""
    for link in markdown_links(path):
        target = path.parent / link
        assert target.exists(), f"{rel(path)} links to missing {link}"
        assert target.is_file(), f"{rel(path)} links to the folder {link}: link a file in it instead"


def test_the_link_check_sees_a_folder_link(tmp_path):
    nb = tmp_path / "01_x.ipynb"
    (tmp_path / "sub").mkdir()
    nb.write_text(json.dumps({"cells": [{"cell_type": "markdown", "source": ["[a](sub/) [b](01_x.ipynb)"]}]}))
    assert [link for link in markdown_links(nb) if not (nb.parent / link).is_file()] == ["sub/"]


def test_every_core_notebook_but_the_last_links_to_the_next():
    for current, following in zip(CORE, CORE[1:]):
        assert f"]({following.name})" in current.read_text(), f"{current.name} does not link to {following.name}"


def test_every_going_further_notebook_is_linked_from_a_core_lesson_and_links_back():
    for path in FURTHER:
        linked_from = [c.name for c in CORE if f"](further/{path.name})" in c.read_text()]
        assert linked_from, f"no core lesson links to {rel(path)}"
        back = [link for link in markdown_links(path) if re.fullmatch(r"\.\./\d\d_[\w]+\.ipynb", link)]
        assert back, f"{rel(path)} links back to no core lesson"
    for current, following in zip(FURTHER, FURTHER[1:]):
        assert f"]({following.name})" in current.read_text(), f"{rel(current)} does not link to {following.name}"
