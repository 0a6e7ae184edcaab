"""The house rules of `helpers/`, checked statically (AST and JSON only, nothing is imported or run).

- every module is at most 400 lines;
- no import cycle between helpers modules, counting imports inside functions (a lazy import that dodges a
  cycle is still a cycle); only `if TYPE_CHECKING:` imports, which never run, are left out;
- no `noqa: E402` (mid-file imports);
- every link from a notebook (core or going further) into helpers/ points at a file that exists, never a folder;
- every module's first docstring line names the notebook(s) and section that teach it
  ("Taught in 04_bounded_memory_mongodb, section 'The window trims by whole exchanges'.", also
  `Taught in 04_x, "Section".` or "Plumbing for 05_x, section '…'") or is marked "Plumbing:"; each named notebook
  and the section heading exist, and the notebook links back to the module (or to the package folder holding it).
  `helpers/__init__.py` is the map of the package and is exempt.
"""

from __future__ import annotations

import ast
import json
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HELPERS = ROOT / "helpers"
NOTEBOOKS = ROOT / "notebooks"
MAX_LINES = 400
NOTEBOOK = r"(?:further/)?\d\d_[A-Za-z0-9_]+?(?:\.ipynb)?"  # a core lesson, or further/NN_x for a going-further one
# "Taught in 04_x, section 'S'." / "Taught in 01_a and 02_b, "S"." / "Plumbing for 05_x, section 'S'."
TAUGHT = re.compile(
    rf"(?P<kind>Taught in|Plumbing for|Tools for) (?P<notebooks>{NOTEBOOK}(?: and {NOTEBOOK})*),? (?:section )?"
    r"(?P<q>['\"])(?P<section>.+?)(?P=q)\.?(?:\"\"\")?\s*$"
)
LINK = re.compile(r"\]\(((?:\.\./)+helpers/[^)#\s]*)")


def _modules() -> list[Path]:
    return sorted(p for p in HELPERS.rglob("*.py") if "__pycache__" not in p.parts)


def _name(path: Path) -> str:
    """Dotted module name of a file under helpers/ (a package's __init__.py is the package)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _notebook_cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _markdown(path: Path) -> list[str]:
    return ["".join(c["source"]) for c in _notebook_cells(path) if c["cell_type"] == "markdown"]


def _notebooks() -> list[Path]:
    """Every notebook: the core lessons and the going-further ones (notebooks/further/)."""
    return sorted(NOTEBOOKS.glob("*.ipynb")) + sorted((NOTEBOOKS / "further").glob("*.ipynb"))


def _nb_name(path: Path) -> str:
    return path.relative_to(NOTEBOOKS).as_posix()


# --- (a) size ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", _modules(), ids=_rel)
def test_module_is_at_most_400_lines(path: Path) -> None:
    n = len(path.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_LINES, f"{_rel(path)} has {n} lines (limit {MAX_LINES}): split it, one concept per module"


# --- (b) import cycles ------------------------------------------------------------------------------------


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(node: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement under `node`, at any depth (functions, methods, try blocks), except the
    body of `if TYPE_CHECKING:`."""
    found: list[ast.Import | ast.ImportFrom] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for sub in child.orelse:  # the `else:` of `if TYPE_CHECKING:` does run
                found += [sub] if isinstance(sub, (ast.Import, ast.ImportFrom)) else _imports(sub)
            continue
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            found.append(child)
        found += _imports(child)
    return found


def inside(module: str, package: str) -> bool:
    """True when `module` is `package` itself or one of its submodules (it needs no edge to that __init__)."""
    return module == package or module.startswith(package + ".")


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the helpers modules it imports (a submodule import also runs its package's __init__)."""
    packages = {name for name, path in modules.items() if path.name == "__init__.py"}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        here = name if name in packages else name.rpartition(".")[0]  # the package relative imports start from
        for node in _imports(_tree(path)):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = here.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            for target in targets:
                while target in modules and not inside(name, target):
                    graph[name].add(target)  # importing a.b.c also runs a/b/__init__ first ...
                    target = target.rpartition(".")[0]  # ... unless we are inside that package already
    for name in graph:
        graph[name].discard(name)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_cycle_finder_sees_a_function_level_import(tmp_path: Path) -> None:
    """The checker itself: a lazy import inside a function closes a cycle, a TYPE_CHECKING one does not."""
    pkg = tmp_path / "helpers"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import f\n")
    (pkg / "b.py").write_text("def f():\n    from helpers import a\n    return a\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .d import X\n")
    (pkg / "d.py").write_text("from . import c\n")
    (pkg / "sub" / "__init__.py").write_text("from .x import y\n")
    (pkg / "sub" / "x.py").write_text("from ..e import z\ny = 1\n")
    (pkg / "e.py").write_text("from helpers.sub.x import y\nz = 2\n")
    modules = {
        ".".join(p.relative_to(tmp_path).with_suffix("").parts).removesuffix(".__init__"): p for p in pkg.rglob("*.py")
    }
    cycles = find_cycles(import_graph(modules))
    assert ["helpers.a", "helpers.b"] in cycles
    assert not any("helpers.c" in c for c in cycles)
    assert ["helpers.e", "helpers.sub", "helpers.sub.x"] in cycles  # e imports sub.x, which runs sub/__init__


def test_no_import_cycle_between_helpers_modules() -> None:
    cycles = find_cycles(import_graph({_name(p): p for p in _modules()}))
    assert cycles == [], "import cycles (function-level imports count): " + "; ".join(" <-> ".join(c) for c in cycles)


# --- (c) no mid-file imports ------------------------------------------------------------------------------


def test_no_noqa_e402_in_helpers() -> None:
    offenders = [
        f"{_rel(p)}:{i}"
        for p in _modules()
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"noqa\s*:\s*[A-Z0-9, ]*E402", line)
    ]
    assert offenders == [], f"mid-file imports silenced with noqa: E402 at {offenders}; move them to the top"


# --- (d) links from the notebooks -------------------------------------------------------------------------


def _links() -> list[tuple[str, str]]:
    """(notebook, link as written) for every link into helpers/."""
    return [(_nb_name(nb), link) for nb in _notebooks() for text in _markdown(nb) for link in LINK.findall(text)]


def _normal(path: Path) -> str:
    """The repository path a notebook's link points at ("../../helpers/x.py" from further/ is "helpers/x.py")."""
    parts: list[str] = []
    for part in path.relative_to(ROOT).parts:
        if part == "..":
            parts.pop()
        elif part != ".":
            parts.append(part)
    return "/".join(parts) + ("/" if str(path).endswith("/") else "")


def test_notebooks_link_helpers() -> None:
    """The link check below has something to check: every notebook links at least one helper file."""
    linked = {nb for nb, _ in _links()}
    assert linked == {_nb_name(nb) for nb in _notebooks()}


@pytest.mark.parametrize("notebook,link", _links(), ids=lambda x: str(x))
def test_notebook_link_exists(notebook: str, link: str) -> None:
    target = (NOTEBOOKS / notebook).parent / link
    assert target.exists(), f"{notebook} links {link}, which does not exist"
    assert target.is_file(), f"{notebook} links the folder {link}: JupyterLab opens an error dialog; link a file"


# --- (e) docstrings name the section that teaches them, and the notebook links back -------------------------


def _first_doc_line(path: Path) -> str:
    doc = ast.get_docstring(_tree(path)) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def _headings(path: Path) -> set[str]:
    return {
        line.lstrip("#").strip() for text in _markdown(path) for line in text.splitlines() if re.match(r"#{1,6} ", line)
    }


def _documented() -> list[Path]:
    return [p for p in _modules() if p != HELPERS / "__init__.py"]


@pytest.mark.parametrize("path", _documented(), ids=_rel)
def test_docstring_names_its_notebook_section_or_plumbing(path: Path) -> None:
    first = _first_doc_line(path)
    m = TAUGHT.search(first)
    if m is None and ("Plumbing:" in first or first.startswith("Tools:")):
        return
    assert m, (
        f"{_rel(path)}: the first docstring line must say \"Taught in NN_notebook, section '…'.\" or be "
        f'marked "Plumbing:"; it is {first!r}'
    )
    rel = path.relative_to(HELPERS)
    accepted = {f"helpers/{rel.as_posix()}"}
    if path.name == "__init__.py":  # a package is linked by any link into its folder
        accepted |= {
            _normal((NOTEBOOKS / nb).parent / link)
            for nb, link in _links()
            if _normal((NOTEBOOKS / nb).parent / link).startswith(f"helpers/{rel.parent.as_posix()}/")
        }
    for name in m["notebooks"].split(" and "):
        notebook = NOTEBOOKS / (name if name.endswith(".ipynb") else f"{name}.ipynb")
        assert notebook.exists(), f"{_rel(path)} names {_nb_name(notebook)}, which does not exist"
        assert m["section"] in _headings(notebook), (
            f"{_rel(path)} names section {m['section']!r}, not a heading of {_nb_name(notebook)}"
        )
        links = {_normal((NOTEBOOKS / nb).parent / link) for nb, link in _links() if nb == _nb_name(notebook)}
        assert links & accepted, f"{_nb_name(notebook)} never links back to {_rel(path)} (any of {sorted(accepted)})"


@pytest.mark.parametrize(
    "line,notebooks,section",
    [
        (
            "Trim. Taught in 04_bounded_memory_mongodb, section 'The window trims by whole exchanges'.",
            "04_bounded_memory_mongodb",
            "The window trims by whole exchanges",
        ),
        (
            'The turn. Taught in 01_goldfish_stateless and 02_history_list, "The same thing, packaged"."""',
            "01_goldfish_stateless and 02_history_list",
            "The same thing, packaged",
        ),
        (
            "Atlas. Plumbing for 05_vector_memory, section 'Extraction → storage → retrieval → injection'.",
            "05_vector_memory",
            "Extraction → storage → retrieval → injection",
        ),
        (
            "Forget. Taught in further/04_memory_in_production, section 'Forget me'.",
            "further/04_memory_in_production",
            "Forget me",
        ),
        ("Memory strategies. Taught in 01–05.", None, None),
        ("Summary. Taught in 04_bounded_memory_mongodb.", None, None),
    ],
)
def test_the_docstring_pattern(line: str, notebooks: str | None, section: str | None) -> None:
    m = TAUGHT.search(line)
    assert (m and (m["notebooks"], m["section"])) == ((notebooks, section) if notebooks else None)


def test_the_package_map_is_the_init_docstring() -> None:
    doc = ast.get_docstring(_tree(HELPERS / "__init__.py")) or ""
    for heading in ("THE TAUGHT CORE", "PLUMBING you can skip", "TOOLS"):
        assert heading in doc, f"helpers/__init__.py's docstring (the map) has no {heading!r} part"


# --- (f) wings: the folders say what the map and the docstrings say --------------------------------------------

TOP_LEVEL_LIMIT = 8
# folder -> its wing; the top level holds the basics of 01-03 (and `chat.py`, the terminal chat's short entry point)
WINGS = {
    "": "taught",
    "memory": "taught",
    "retrieval": "taught",
    "sim": "taught",
    "db": "plumbing",
    "offline": "plumbing",
    "memory_tool": "taught",  # the memory tool (issue 33), taught in 06_memory_tool
    "tools": "tool",
    "exercises": "tool",  # the learner's exercises and their checks (issue 38)
    "bench": "tool",
}
# what a first docstring line may start its claim with, per wing ("Plumbing for" is a part of a wing you may skip)
KINDS_BY_WING = {
    "taught": ("Taught in", "Plumbing for"),
    "plumbing": ("Plumbing:", "Plumbing for"),
    "tool": ("Tools:", "Tools for", "Plumbing:", "Plumbing for"),
}
MAP_HEADINGS = {"taught": "THE TAUGHT CORE", "plumbing": "PLUMBING you can skip", "tool": "TOOLS"}


def wing_of(path: Path) -> str:
    rel = path.relative_to(HELPERS)
    if len(rel.parts) == 1:
        return "tool" if rel.name == "chat.py" else "taught"
    return WINGS[rel.parts[0]]


def _claim(first_line: str) -> str | None:
    m = TAUGHT.search(first_line)
    if m:
        return m["kind"]
    return next((k for k in ("Plumbing:", "Tools:") if k in first_line), None)


def test_top_level_holds_at_most_eight_modules() -> None:
    top = sorted(p.name for p in HELPERS.glob("*.py"))
    assert len(top) <= TOP_LEVEL_LIMIT, f"helpers/ has {len(top)} top-level modules (limit {TOP_LEVEL_LIMIT}): {top}"


def test_every_folder_is_a_known_wing() -> None:
    folders = sorted(
        p.name for p in HELPERS.iterdir() if p.is_dir() and p.name != "__pycache__" and any(p.rglob("*.py"))
    )
    assert set(folders) <= set(WINGS), f"folders with no wing: {sorted(set(folders) - set(WINGS))}"


@pytest.mark.parametrize("path", _documented(), ids=_rel)
def test_module_claims_the_wing_of_its_folder(path: Path) -> None:
    claim, wing = _claim(_first_doc_line(path)), wing_of(path)
    assert claim in KINDS_BY_WING[wing], (
        f"{_rel(path)} is in the {wing} wing, so its first docstring line must start its claim with one of "
        f"{KINDS_BY_WING[wing]}; it says {claim!r}"
    )


def _map_sections() -> dict[str, str]:
    doc = ast.get_docstring(_tree(HELPERS / "__init__.py")) or ""
    marks = sorted((doc.index(h), wing) for wing, h in MAP_HEADINGS.items())
    return {
        wing: doc[start : (marks[i + 1][0] if i + 1 < len(marks) else len(doc))]
        for i, (start, wing) in enumerate(marks)
    }


@pytest.mark.parametrize("path", _documented(), ids=_rel)
def test_module_is_in_the_map_under_its_wing(path: Path) -> None:
    """The map names the module (`memory/window.py`) under its wing's heading, or its folder (`db/`) and its
    file name there; a plumbing package (`offline/`) may be named as a whole."""
    rel, wing = path.relative_to(HELPERS), wing_of(path)
    section = _map_sections()[wing]
    if rel.as_posix() in section:
        return
    folder = f"{rel.parts[0]}/" if len(rel.parts) > 1 else None
    assert (
        folder
        and folder in section
        and (wing == "plumbing" or rel.name == "__init__.py" or path.stem in section or rel.parts[1] + "/" in section)
    ), f"{_rel(path)} is not in the map (helpers/__init__.py) under {MAP_HEADINGS[wing]!r}"


# --- (g) stages only look back; rooms are entered in order; no module reads another's privates ---------------


def _notebook_of(path: Path) -> int | None:
    """The first notebook that teaches (or uses) a module, from its first docstring line."""
    m = TAUGHT.search(_first_doc_line(path))
    if not m:
        return None
    first = m["notebooks"].split(" and ")[0]
    return None if first.startswith("further/") else int(first[:2])  # going further: depth on any lesson


def _graph() -> tuple[dict[str, Path], dict[str, set[str]]]:
    modules = {_name(p): p for p in _modules()}
    return modules, import_graph(modules)


STAGES = ("memory", "retrieval")  # the stage modules of 01-06; the basics (top level) may be read before taught
# VectorMemory (05) carries 06's options: one context budget (`context_budget=`) and the dated import; MemoryIndex
# (05) carries 06's people-as-a-filter, which a User/Assistant chat (all of 05) never triggers. 05 teaches them
# without these; the imports are named here so that no other forward import slips in.
ALLOWED_FORWARD = {
    ("helpers.memory.long_term", "helpers.memory.budget"),
    ("helpers.memory.long_term", "helpers.memory.importer"),
    ("helpers.retrieval.index", "helpers.retrieval.names"),
    ("helpers.retrieval.cache", "helpers.retrieval.names"),
}


def _stage_module(name: str, path: Path) -> bool:
    return name.split(".")[1] in STAGES if "." in name else False


def test_an_earlier_notebooks_module_never_imports_a_later_ones() -> None:
    """A stage module (memory/, retrieval/) imports no stage module first taught in a later notebook: 04's bounded
    memory may not need 05's importer. Package maps (__init__), simulations, tools and benchmarks compose any."""
    modules, graph = _graph()
    bad = []
    for name, targets in graph.items():
        path = modules[name]
        if path.name == "__init__.py" or not _stage_module(name, path) or _notebook_of(path) is None:
            continue
        for target in targets:
            there = _notebook_of(modules[target])
            if (
                _stage_module(target, modules[target])
                and modules[target].name != "__init__.py"
                and there is not None
                and there > _notebook_of(path)
                and (name, target) not in ALLOWED_FORWARD
            ):
                bad.append(f"{name} ({_notebook_of(path):02d}) imports {target} ({there:02d})")
    assert bad == [], "forward imports: " + "; ".join(sorted(bad))


# One turn walks memory → retrieval → db → the model and back: a room never imports one before it. Tools and
# benchmarks (one room) drive everything; the offline model's reader borrows retrieval's MiniLM for similarity.
ROOMS = ["tools", "sim", "memory", "retrieval", "db", "offline"]
ROOM_OF = {"bench": "tools", "memory_tool": "memory"}  # the memory-tool stage is a memory stage
ALLOWED_BACK = {
    ("helpers.offline.meaning", "helpers.retrieval"),
    ("helpers.offline.meaning", "helpers.retrieval.embeddings"),
}


def _room(name: str) -> str | None:
    parts = name.split(".")
    room = ROOM_OF.get(parts[1], parts[1]) if len(parts) > 1 else None
    return room if room in ROOMS else None


def test_rooms_are_entered_in_order() -> None:
    _, graph = _graph()
    bad = [
        f"{name} → {target}"
        for name, targets in graph.items()
        for target in targets
        if _room(name)
        and _room(target)
        and ROOMS.index(_room(target)) < ROOMS.index(_room(name))
        and (name, target) not in ALLOWED_BACK
    ]
    assert bad == [], "a room imports one before it: " + "; ".join(sorted(bad))


def _external_names(tree: ast.Module) -> set[str]:
    """Names bound by importing something outside helpers (`import argparse`): their privates are theirs."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names if not a.name.startswith("helpers")}
        elif isinstance(node, ast.ImportFrom) and not (node.module or "").startswith("helpers") and not node.level:
            names |= {a.asname or a.name for a in node.names}
    return names


def _own_privates(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return {n for n in names if n.startswith("_")}


def private_reads(tree: ast.Module) -> list[str]:
    """`from x import _y`, and `obj._y` where `_y` is not this module's own and `obj` is not self/cls/super()."""
    own, external, found = _own_privates(tree), _external_names(tree), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("helpers"):
            found += [
                f"line {node.lineno}: imports {node.module}.{a.name}"
                for a in node.names
                if a.name.startswith("_") and not a.name.startswith("__")
            ]
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            base = node.value
            if isinstance(base, ast.Name) and (base.id in ("self", "cls") or base.id in external):
                continue
            if isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and base.func.id == "super":
                continue
            if node.attr not in own:
                found.append(f"line {node.lineno}: reads {ast.unparse(base)}.{node.attr}")
    return found


@pytest.mark.parametrize("path", _modules(), ids=_rel)
def test_no_module_reads_another_modules_privates(path: Path) -> None:
    assert private_reads(_tree(path)) == [], f"{_rel(path)}: give these a public name: {private_reads(_tree(path))}"


def test_the_private_check_sees_what_it_should() -> None:
    tree = ast.parse(
        "import argparse\nfrom helpers.memory.errors import _explain\n"
        "def f(index, self):\n    index._lock; self._x; argparse._SubParsersAction\n"
    )
    assert private_reads(tree) == ["line 2: imports helpers.memory.errors._explain", "line 4: reads index._lock"]
