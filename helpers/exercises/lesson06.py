"""Tools: the exercises of core lesson 06 (its notebook in notebooks/solutions/ holds the solutions)."""

from __future__ import annotations

from helpers.exercises.check import Case, Exercise

__all__ = ["EXERCISES"]


def _refuses(fn, content: str, old: str) -> bool:
    """True when fn(content, old, ...) raises ValueError (the file is left as it was)."""
    try:
        fn(content, old, "X")
    except ValueError:
        return True
    return False


def _path(name: str, path: str, ok: bool) -> Case:
    return Case(name, args=(path,), expect=ok)


EXERCISES: list[Exercise] = [
    Exercise(
        id="06.path",
        title="keep every memory path inside /memories",
        fallback="helpers.memory_tool.paths:is_allowed",
        hint="allowed: the path is '/memories' or starts with '/memories/', and splitting what follows on '/' gives "
        "no empty name, no '.', no '..'.",
        cases=(
            _path("the directory itself", "/memories", True),
            _path("a file in it", "/memories/notes.md", True),
            _path("a file in a folder in it", "/memories/trip/la.md", True),
            _path("a traversal out of it", "/memories/../../etc/passwd", False),
            _path("a path elsewhere", "/etc/passwd", False),
            _path("a look-alike prefix", "/memoriesX/notes.md", False),
            _path("an empty name (//)", "/memories//notes.md", False),
            _path("a '.' name", "/memories/./notes.md", False),
        ),
    ),
    Exercise(
        id="06.str_replace",
        title="str_replace: replace text that appears exactly once",
        fallback="helpers.memory_tool.commands:replace_once",
        hint="count the occurrences of old first: exactly one → replace it; zero or several → raise ValueError "
        "and change nothing.",
        cases=(
            Case("one match is replaced", args=("Dog: Pixel.\nCat: Tom.\n", "Pixel", "Rex"), expect="Dog: Rex.\nCat: Tom.\n"),
            Case("the rest of the text is kept", args=("Gym: Pearl District.\n", "Pearl District", "Alberta Arts"),
                 expect="Gym: Alberta Arts.\n"),
            Case("no match raises ValueError", drive=lambda fn: _refuses(fn, "Dog: Pixel.\n", "Parrot"), expect=True,
                 shown_input="str_replace('Dog: Pixel.\\n', 'Parrot', 'X')"),
            Case("two matches raise ValueError", drive=lambda fn: _refuses(fn, "Dog: Pixel.\nCat: Pixel.\n", "Pixel"),
                 expect=True, shown_input="str_replace('Dog: Pixel.\\nCat: Pixel.\\n', 'Pixel', 'X')"),
        ),
    ),
]  # fmt: skip
