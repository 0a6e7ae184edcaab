"""helpers/memory_tool/paths.py: every path the model names stays under /memories, or is refused with a message.

The docs' "Path traversal protection" (https://platform.claude.com/docs/en/agents-and-tools/tool-use/memory-tool):
validate that every path starts with /memories, stays inside it, and refuse `../`, `..\\` and URL-encoded
traversal (`%2e%2e%2f`). The refusal texts "Path must start with /memories, got: …" and "Path … would escape
/memories directory" are the SDK's reference handler's (BetaLocalFilesystemMemoryTool._validate_path).
"""

from __future__ import annotations

import pytest
from anthropic.lib.tools import ToolError
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.memory_tool.paths import (
    MAX_DEPTH,
    MAX_PATH_BYTES,
    MAX_SEGMENT_BYTES,
    ROOT,
    ancestors,
    check_path,
    is_under,
    parent_of,
    shown,
)


@pytest.mark.parametrize(
    "path, normalised",
    [
        ("/memories", "/memories"),
        ("/memories/", "/memories"),
        ("/memories/notes.txt", "/memories/notes.txt"),
        ("/memories/projects/", "/memories/projects"),
        ("/memories/people/maya/preferences.md", "/memories/people/maya/preferences.md"),
        ("/memories/.hidden", "/memories/.hidden"),  # allowed, and hidden from the listing (the docs)
        ("/memories/café.md", "/memories/café.md"),  # NFC, the form a keyboard types
        ("/memories/東京.txt", "/memories/東京.txt"),
        ("/memories/a..b.txt", "/memories/a..b.txt"),  # dots inside a name are not a traversal
        ("/memories/50% off.txt", "/memories/50% off.txt"),  # a '%' that encodes nothing
        ("/memories/my notes.txt", "/memories/my notes.txt"),
    ],
)
def test_ordinary_paths_are_accepted_and_normalised(path, normalised):
    assert check_path(path) == normalised


@pytest.mark.parametrize(
    "path, message",
    [
        ("/etc/passwd", "Path must start with /memories, got: /etc/passwd"),
        ("memories/notes.txt", "Path must start with /memories, got: memories/notes.txt"),
        ("/memoriesX/notes.txt", "Path must start with /memories, got: /memoriesX/notes.txt"),
        ("/Memories/notes.txt", "Path must start with /memories"),
        ("", "Path must start with /memories, got: "),
        ("/memories/../etc/passwd", "Path /memories/../etc/passwd would escape /memories directory"),
        ("/memories/../../secrets.env", "would escape /memories directory"),  # the docs' example
        ("/memories/a/../../x", "would escape /memories directory"),
        ("/memories/./notes.txt", "would escape /memories directory"),
        ("/memories/..", "would escape /memories directory"),
        ("/memories/%2e%2e/%2e%2e/secrets.env", "would escape /memories directory"),  # the docs' encoded form
        ("/memories/%2E%2E%2Fsecrets.env", "would escape /memories directory"),
        ("/memories/a%2fb", "would escape /memories directory"),
        ("/memories/..\\..\\secrets.env", "contains a backslash"),
        ("/memories//notes.txt", "has an empty name"),
        ("/memories/notes.txt\x00.png", "contains a NUL character (U+0000)"),
        ("/memories/a\u202etxt.exe", "invisible or control character U+202E"),  # bidi override
        ("/memories/no\u200btes.txt", "invisible or control character U+200B"),  # zero-width space
        ("/memories/a\nb", "invisible or control character U+000A"),
        ("/memories/\ue000.txt", "U+E000"),  # private use
        ("/memories/cafe\u0301.md", "look-alike spelling"),  # decomposed é: another file that reads the same
        ("/memories/ｎｏｔｅｓ.txt", "look-alike spelling"),  # fullwidth letters
        ("/memories/．．/x", "look-alike spelling"),  # fullwidth dots read as ..
        ("/memories/ notes.txt", "starts or ends with a space"),
        ("/memories/" + "n" * (MAX_SEGMENT_BYTES + 1), f"use names of at most {MAX_SEGMENT_BYTES} bytes"),
        ("/memories/" + "é" * 128, f"use names of at most {MAX_SEGMENT_BYTES} bytes"),  # 256 bytes in UTF-8
        ("/memories/" + "/".join(["d" * 200] * 6), f"use paths of at most {MAX_PATH_BYTES:,} bytes"),
        ("/memories/" + "/".join("d" * (MAX_DEPTH + 1)), f"use at most {MAX_DEPTH} below /memories"),
        ("/memories/\ud800.txt", "not valid Unicode text"),  # a lone surrogate (undecodable bytes)
    ],
)
def test_traversal_and_odd_paths_are_refused_with_a_message_naming_the_problem(path, message):
    with pytest.raises(ToolError) as caught:
        check_path(path)
    assert message in str(caught.value)


@pytest.mark.parametrize("value", [None, 3, ["/memories"], {"$ne": None}, b"/memories"])
def test_a_path_that_is_not_a_string_is_refused(value):
    with pytest.raises(ToolError, match="must be a string"):
        check_path(value)


def test_refusals_spell_out_invisible_characters_and_stay_short():
    assert shown("a\u202eb") == "a\\u202eb"
    with pytest.raises(ToolError) as caught:
        check_path("/etc/" + "x" * 10_000)
    assert len(str(caught.value)) < 300


def test_directory_helpers():
    assert parent_of("/memories/a/b.txt") == "/memories/a" and parent_of("/memories/b.txt") == ROOT
    assert ancestors("/memories/a/b/c.txt") == ["/memories", "/memories/a", "/memories/a/b"]
    assert ancestors(ROOT) == []
    assert is_under("/memories/a/b", "/memories/a") and not is_under("/memories/ab", "/memories/a")
    assert not is_under("/memories/a", "/memories/a")


NAME = st.text(st.characters(codec="utf-8"), min_size=0, max_size=12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(NAME, st.sampled_from(["..", ".", "", "%2e%2e", "..\\"])), min_size=1, max_size=5))
def test_an_accepted_path_is_always_inside_memories_with_no_traversal_segment(segments):
    """Property: whatever the segments, check_path either refuses or returns a path under /memories whose every
    name is a plain, visible name (never '.', '..' or empty) -- so no resolution could leave the directory."""
    path = "/memories/" + "/".join(segments)
    try:
        normalised = check_path(path)
    except ToolError:
        return
    assert normalised == ROOT or normalised.startswith(ROOT + "/")
    names = normalised[len(ROOT) + 1 :].split("/") if normalised != ROOT else []
    assert all(name not in ("", ".", "..") and "\\" not in name and "\x00" not in name for name in names)
    assert ".." not in segments and "." not in segments
