"""Build-time tool (not part of the package): generate the learner's notebooks from the solution sources, with nbgrader.

Each core lesson with exercises has ONE source, `notebooks/solutions/NN_name.ipynb`: the lesson as a teacher runs
it, solutions in place between nbgrader's markers (`### BEGIN SOLUTION` / `### END SOLUTION` in the function a
learner writes; `### BEGIN HIDDEN TESTS` / `### END HIDDEN TESTS` around the solution run's own asserts). The
notebook a learner opens, `notebooks/NN_name.ipynb`, is generated from it by nbgrader's `generate_assignment` (its
ClearSolutions step turns each solution into `# YOUR CODE HERE` / `raise NotImplementedError()`, ClearHiddenTests
drops the hidden asserts, ClearOutput the outputs). Never edit a learner notebook by hand: edit the source, then

    python -m scripts.make_learner_notebooks           # regenerate notebooks/NN_*.ipynb from notebooks/solutions/
    python -m scripts.make_learner_notebooks --check   # exit 1 naming every learner notebook that drifted

This script first marks the source's cells the way nbgrader's "Create Assignment" toolbar would (a cell with a
solution region is a solution cell, a cell with hidden tests an autograded-tests cell, id = the cell's id), so a
teacher can also open the sources in nbgrader's own tools. nbgrader 0.9 needs Python >= 3.11: it is a maintainer's
tool, installed by `python3 run.py test` (requirements-teach.txt), not something a learner needs.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "notebooks" / "solutions"
LEARNER = ROOT / "notebooks"
ASSIGNMENT = "lessons"
SOLUTION, HIDDEN = "### BEGIN SOLUTION", "### BEGIN HIDDEN TESTS"


def sources() -> list[Path]:
    return sorted(SOURCES.glob("[0-9][0-9]_*.ipynb"))


def nbgrader_metadata(cell: dict) -> dict | None:
    """The nbgrader cell metadata the "Create Assignment" toolbar would give this cell (None: an ordinary cell)."""
    text = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
    base = {"grade_id": cell["id"], "schema_version": 3, "task": False}
    if SOLUTION in text:
        return {**base, "grade": False, "locked": False, "solution": True}
    if HIDDEN in text:
        return {**base, "grade": True, "locked": True, "points": 1, "solution": False}
    return None


def _mark(nb) -> bool:
    """Give every cell of `nb` the nbgrader metadata it should have (in place); True if any cell changed."""
    changed = False
    for cell in nb.cells:
        meta = nbgrader_metadata(cell)
        if cell.metadata.get("nbgrader") != meta:
            changed = True
            if meta is None:
                cell.metadata.pop("nbgrader", None)
            else:
                cell.metadata["nbgrader"] = meta
    return changed


def mark_source(path: Path) -> bool:
    """Give every solution / hidden-test cell of a source its nbgrader metadata; True if the file changed."""
    nb = nbformat.read(path, as_version=4)
    if _mark(nb):
        nbformat.write(nb, path)
        return True
    return False


def learner_version(nb: dict) -> dict:
    """What the learner's notebook keeps of nbgrader's output: nbgrader's own metadata stays (locks, checksums),
    the kernel's run-only keys go (as nbstripout drops them on commit)."""
    nb = copy.deepcopy(nb)
    nb["metadata"] = {k: v for k, v in nb["metadata"].items() if k in ("kernelspec",)}
    nb["metadata"]["language_info"] = {"name": "python"}
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    return nb


def generate(paths: list[Path]) -> dict[str, dict]:
    """Run nbgrader's generate_assignment on these sources; {notebook file name: learner notebook (as a dict)}."""
    with tempfile.TemporaryDirectory(prefix="gte-nbgrader-") as tmp:
        source = Path(tmp) / "source" / ASSIGNMENT
        source.mkdir(parents=True)
        for path in paths:
            shutil.copy(path, source / path.name)
        nbgrader = Path(sys.executable).with_name("nbgrader")
        cmd = [str(nbgrader), "generate_assignment", ASSIGNMENT, "--force", f"--CourseDirectory.root={tmp}"]
        cmd += ["--log-level=WARN"]
        # nbgrader runs `alembic` (its gradebook's migrations) by name: the venv's bin goes first on PATH
        env = {**os.environ, "PATH": os.pathsep.join([str(nbgrader.parent), os.environ.get("PATH", "")])}
        done = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, env=env)
        if done.returncode:
            sys.exit(f"nbgrader generate_assignment failed:\n{done.stdout}\n{done.stderr}")
        release = Path(tmp) / "release" / ASSIGNMENT
        return {p.name: learner_version(json.loads((release / p.name).read_text())) for p in paths}


def text(nb: dict) -> str:
    return nbformat.writes(nbformat.from_dict(nb)) + "\n"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = sources()
    if not check:
        for path in paths:
            if mark_source(path):
                print(f"marked nbgrader cells in {path.relative_to(ROOT)}")
    drifted = []
    for name, nb in generate(paths).items():
        target = LEARNER / name
        new = text(nb)
        if target.exists() and target.read_text() == new:
            continue
        if check:
            drifted.append(_show(target))
        else:
            target.write_text(new)
            print(f"wrote {_show(target)}")
    unmarked = [p.relative_to(ROOT).as_posix() for p in paths if check and _needs_marking(p)]
    if drifted or unmarked:
        for p in unmarked:
            print(f"{p}: nbgrader metadata out of date")
        for p in drifted:
            print(f"{p} differs from what its source generates")
        print("run `python -m scripts.make_learner_notebooks` (and commit both)")
        return 1
    print(f"{len(paths)} learner notebooks match their sources" if check else "done")
    return 0


def _show(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def _needs_marking(path: Path) -> bool:
    return _mark(nbformat.read(path, as_version=4))  # marks a copy in memory: the file is not written


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
