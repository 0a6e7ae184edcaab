"""helpers/memory_tool/commands.py and views.py: the six commands with the documented result and error texts.

DOCS = https://platform.claude.com/docs/en/agents-and-tools/tool-use/memory-tool, section "Tool commands" (each test
names the command's sub-section). REF = the SDK's reference handler, anthropic.lib.tools
BetaLocalFilesystemMemoryTool, used where the docs give no text. EDIT = the text editor tool's reference
implementation (anthropic-quickstarts computer-use-demo tools/edit.py), whose error patterns the docs say the
memory tool follows ("Error handling").
"""

from __future__ import annotations

import pytest
from anthropic.lib.tools import ToolError

from helpers.memory_tool.commands import Limits, MemoryFile, MemoryTree
from helpers.memory_tool.views import human_size, split_lines

HEADER = "Here're the files and directories up to 2 levels deep in {}, excluding hidden items and node_modules:"


def tree(contents: dict[str, str] | None = None, **limits) -> MemoryTree:
    return MemoryTree([MemoryFile(p, c) for p, c in (contents or {}).items()], Limits(**limits))


def run(t: MemoryTree, **params) -> str:
    return t.run(params)


def refused(t: MemoryTree, **params) -> str:
    with pytest.raises(ToolError) as caught:
        t.run(params)
    return str(caught.value)


# -- view (DOCS "view") ------------------------------------------------------------------------------------------


def test_view_of_an_empty_store_is_the_header_and_the_directory_itself_not_an_error():
    assert run(tree(), command="view", path="/memories") == HEADER.format("/memories") + "\n0B\t/memories"


def test_view_of_a_directory_lists_two_levels_with_human_sizes_and_tabs():
    t = tree(
        {
            "/memories/notes.txt": "x" * 2048,
            "/memories/projects/bot.md": "y" * 512,
            "/memories/projects/deep/er/file.md": "z" * 10,  # three levels down: not listed, but counted
            "/memories/.secret": "hidden",
            "/memories/node_modules/pkg.js": "skipped",
        }
    )
    lines = run(t, command="view", path="/memories").split("\n")
    assert lines[0] == HEADER.format("/memories")
    assert lines[1:] == [
        "2.5K\t/memories",  # every file under it, hidden ones too (2,583 bytes)
        "2.0K\t/memories/notes.txt",
        "522B\t/memories/projects/",
        "512B\t/memories/projects/bot.md",
        "10B\t/memories/projects/deep/",
    ]
    sub = run(t, command="view", path="/memories/projects").split("\n")
    assert sub[0] == HEADER.format("/memories/projects") and sub[1] == "522B\t/memories/projects"
    assert "10B\t/memories/projects/deep/er/" in sub and "10B\t/memories/projects/deep/er/file.md" not in sub


def test_human_sizes():
    assert [human_size(n) for n in (0, 512, 1024, 1536, 2048, 12_345, 1_258_291)] == [
        "0B",
        "512B",
        "1.0K",
        "1.5K",
        "2.0K",
        "12K",
        "1.2M",
    ]


def test_view_of_a_file_numbers_lines_right_aligned_in_six_with_a_tab():
    t = tree({"/memories/notes.txt": "Hello World\nThis is line two\n"})
    assert run(t, command="view", path="/memories/notes.txt") == (
        "Here's the content of /memories/notes.txt with line numbers:\n     1\tHello World\n     2\tThis is line two"
    )


def test_view_range_pages_a_file_and_minus_one_means_to_the_end():
    t = tree({"/memories/n.txt": "\n".join(f"line {i}" for i in range(1, 11))})
    assert run(t, command="view", path="/memories/n.txt", view_range=[9, -1]).split("\n")[1:] == [
        "     9\tline 9",
        "    10\tline 10",
    ]
    assert run(t, command="view", path="/memories/n.txt", view_range=[2, 3]).count("\n") == 2


@pytest.mark.parametrize(
    "view_range, message",  # EDIT's texts
    [
        ([0, 3], "Invalid `view_range`: [0, 3]. Its first element `0` should be within the range of lines of the file: [1, 10]"),
        ([2, 11], "Invalid `view_range`: [2, 11]. Its second element `11` should be smaller than the number of lines in the file: `10`"),
        ([5, 4], "Invalid `view_range`: [5, 4]. Its second element `4` should be larger or equal than its first `5`"),
        ([1], "Invalid `view_range`. It should be a list of two integers."),
        (["1", "2"], "Invalid `view_range`. It should be a list of two integers."),
        ([True, 2], "Invalid `view_range`. It should be a list of two integers."),
    ],
)  # fmt: skip
def test_a_bad_view_range_is_refused_with_the_text_editor_tools_message(view_range, message):
    t = tree({"/memories/n.txt": "\n".join(f"line {i}" for i in range(1, 11))})
    assert refused(t, command="view", path="/memories/n.txt", view_range=view_range) == message


def test_view_range_on_a_directory_is_refused():
    assert refused(tree(), command="view", path="/memories", view_range=[1, 2]) == (
        "The `view_range` parameter is not allowed when `path` points to a directory."
    )


def test_a_long_file_view_is_cut_and_names_the_range_to_view_next():
    t = tree({"/memories/long.txt": "\n".join("x" * 99 for _ in range(500))}, view_chars=1_000)
    text = run(t, command="view", path="/memories/long.txt")
    shown = [line for line in text.split("\n")[1:] if "\t" in line]
    assert 1 <= len(shown) < 500 and len("\n".join(shown)) <= 1_000
    assert text.endswith(f"view them with view_range [{len(shown) + 1}, -1]]")
    rest = run(t, command="view", path="/memories/long.txt", view_range=[len(shown) + 1, len(shown) + 2])
    assert rest.split("\n")[1].startswith(str(len(shown) + 1).rjust(6))


def test_a_file_over_999999_lines_is_refused_by_view():
    t = tree({"/memories/huge.txt": "\n" * 1_000_000}, file_bytes=2_000_000, user_bytes=2_000_000)
    assert refused(t, command="view", path="/memories/huge.txt") == (
        "File /memories/huge.txt exceeds maximum line limit of 999,999 lines."
    )


def test_view_of_a_missing_path():
    assert refused(tree(), command="view", path="/memories/nope.txt") == (
        "The path /memories/nope.txt does not exist. Please provide a valid path."
    )


# -- create (DOCS "create") -------------------------------------------------------------------------------------


def test_create_makes_a_file_and_its_directories_and_refuses_an_existing_one():
    t = tree()
    assert run(t, command="create", path="/memories/a/b.txt", file_text="hi\n") == (
        "File created successfully at: /memories/a/b.txt"
    )
    assert t.changed and t.files["/memories/a/b.txt"].content == "hi\n" and t.is_dir("/memories/a")
    assert refused(t, command="create", path="/memories/a/b.txt", file_text="x") == (
        "Error: File /memories/a/b.txt already exists"
    )
    assert refused(t, command="create", path="/memories/a", file_text="x") == "Error: File /memories/a already exists"
    assert refused(t, command="create", path="/memories/a/b.txt/c", file_text="x") == (
        "Error: The path /memories/a/b.txt is a file, so /memories/a/b.txt/c cannot be created inside it"
    )


@pytest.mark.parametrize(
    "params, message",
    [
        ({"command": "create", "path": "/memories/x"}, "Error: Parameter `file_text` is required for command: create"),
        ({"command": "create", "path": "/memories/x", "file_text": 3}, "must be a string, got int"),
        ({"command": "create", "path": "/memories/x", "file_text": "a\x00b"}, "control character U+0000"),
        ({"command": "create", "path": "/memories/x", "file_text": "a\x1b[31m"}, "control character U+001B"),
        ({"command": "create", "file_text": "x"}, "Error: Parameter `path` is required for command: create"),
        ({"command": "launch", "path": "/memories"}, "Error: Unrecognized command launch. The allowed commands for the memory tool are: view, create, str_replace, insert, delete, rename"),
        ({"path": "/memories"}, "Error: Unrecognized command None."),
    ],
)  # fmt: skip
def test_missing_or_wrong_parameters_are_refused_by_name(params, message):
    assert message in refused(tree(), **params)


# -- str_replace (DOCS "str_replace") ---------------------------------------------------------------------------


def test_str_replace_edits_once_and_shows_a_numbered_snippet():
    t = tree({"/memories/p.txt": "a\nb\nFavorite color: blue\nc\nd\ne\n"})
    text = run(t, command="str_replace", path="/memories/p.txt", old_str="blue", new_str="green")
    assert text == (
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
        "     1\ta\n     2\tb\n     3\tFavorite color: green\n     4\tc\n     5\td"
    )
    assert t.files["/memories/p.txt"].content == "a\nb\nFavorite color: green\nc\nd\ne\n"


def test_str_replace_without_new_str_deletes_old_str():
    t = tree({"/memories/p.txt": "keep drop keep"})
    run(t, command="str_replace", path="/memories/p.txt", old_str=" drop")
    assert t.files["/memories/p.txt"].content == "keep keep"


def test_str_replace_errors():
    t = tree({"/memories/p.txt": "tea\ncoffee\ntea\n", "/memories/d/x": "."})
    assert refused(t, command="str_replace", path="/memories/p.txt", old_str="milk", new_str="x") == (
        "No replacement was performed, old_str `milk` did not appear verbatim in /memories/p.txt."
    )
    assert refused(t, command="str_replace", path="/memories/p.txt", old_str="tea", new_str="x") == (
        "No replacement was performed. Multiple occurrences of old_str `tea` in lines: 1, 3. Please ensure it is unique"
    )
    missing = "Error: The path {} does not exist. Please provide a valid path."
    assert refused(t, command="str_replace", path="/memories/q.txt", old_str="a") == missing.format("/memories/q.txt")
    assert refused(t, command="str_replace", path="/memories/d", old_str="a") == missing.format("/memories/d")
    assert "must not be empty" in refused(t, command="str_replace", path="/memories/p.txt", old_str="")
    assert not t.changed


# -- insert (DOCS "insert") -------------------------------------------------------------------------------------


def test_insert_after_a_line_and_at_the_top():
    t = tree({"/memories/todo.txt": "one\ntwo\nthree\n"})
    assert run(t, command="insert", path="/memories/todo.txt", insert_line=2, insert_text="- Review docs\n") == (
        "The file /memories/todo.txt has been edited."
    )
    run(t, command="insert", path="/memories/todo.txt", insert_line=0, insert_text="# TODO")
    assert split_lines(t.files["/memories/todo.txt"].content) == ["# TODO", "one", "two", "- Review docs", "three"]


@pytest.mark.parametrize("line", [-1, 4, "2", None, 1.5, True])
def test_insert_line_out_of_range_or_not_a_number(line):
    t = tree({"/memories/todo.txt": "one\ntwo\nthree\n"})
    params = {"command": "insert", "path": "/memories/todo.txt", "insert_line": line, "insert_text": "x"}
    text = refused(t, **params)
    if line is None:
        assert text == "Error: Parameter `insert_line` is required for command: insert"
    else:
        assert text == (
            f"Error: Invalid `insert_line` parameter: {line}. It should be within the range of lines of the file: [0, 3]"
        )


def test_insert_into_a_missing_file_or_a_directory():
    t = tree({"/memories/d/x": "."})
    for path in ("/memories/none.txt", "/memories/d"):
        assert refused(t, command="insert", path=path, insert_line=0, insert_text="x") == (
            f"Error: The path {path} does not exist"
        )


# -- delete (DOCS "delete") -------------------------------------------------------------------------------------


def test_delete_a_file_a_directory_recursively_but_never_the_root():
    t = tree({"/memories/a.txt": "1", "/memories/d/b.txt": "2", "/memories/d/e/c.txt": "3", "/memories/dx.txt": "4"})
    assert run(t, command="delete", path="/memories/a.txt") == "Successfully deleted /memories/a.txt"
    assert run(t, command="delete", path="/memories/d") == "Successfully deleted /memories/d"
    assert sorted(t.files) == ["/memories/dx.txt"]  # a sibling that shares the prefix stays
    assert refused(t, command="delete", path="/memories/d") == "Error: The path /memories/d does not exist"
    assert refused(t, command="delete", path="/memories") == "Cannot delete the /memories directory itself"  # REF
    assert refused(t, command="delete", path="/memories/") == "Cannot delete the /memories directory itself"


# -- rename (DOCS "rename") -------------------------------------------------------------------------------------


def test_rename_a_file_and_a_directory_without_overwriting():
    t = tree(
        {"/memories/draft.txt": "d", "/memories/final.txt": "f", "/memories/p/a.md": "a", "/memories/p/q/b.md": "b"}
    )
    assert run(t, command="rename", old_path="/memories/draft.txt", new_path="/memories/v1.txt") == (
        "Successfully renamed /memories/draft.txt to /memories/v1.txt"
    )
    run(t, command="rename", old_path="/memories/p", new_path="/memories/archive/p")
    assert sorted(t.files) == [
        "/memories/archive/p/a.md",
        "/memories/archive/p/q/b.md",
        "/memories/final.txt",
        "/memories/v1.txt",
    ]
    assert refused(t, command="rename", old_path="/memories/v1.txt", new_path="/memories/final.txt") == (
        "Error: The destination /memories/final.txt already exists"
    )
    assert refused(t, command="rename", old_path="/memories/gone.txt", new_path="/memories/x.txt") == (
        "Error: The path /memories/gone.txt does not exist"
    )
    assert refused(t, command="rename", old_path="/memories", new_path="/memories/x") == (
        "Cannot rename the /memories directory itself"  # REF
    )
    assert "inside itself" in refused(t, command="rename", old_path="/memories/archive", new_path="/memories/archive/x")
    assert "is a file" in refused(t, command="rename", old_path="/memories/archive", new_path="/memories/v1.txt/x")
    assert t.files["/memories/final.txt"].content == "f"


def test_rename_checks_both_paths():
    t = tree({"/memories/a.txt": "a"})
    assert refused(t, command="rename", old_path="/memories/a.txt", new_path="/tmp/a.txt") == (
        "Path must start with /memories, got: /tmp/a.txt"
    )
    assert "would escape" in refused(t, command="rename", old_path="/memories/../a.txt", new_path="/memories/b")
    assert "`new_path` is required" in refused(t, command="rename", old_path="/memories/a.txt")


# -- size limits (ours: MEMORY_TOOL_MAX_FILE_BYTES, MEMORY_TOOL_MAX_USER_BYTES, MEMORY_TOOL_MAX_FILES) ------------


def test_a_file_over_the_per_file_limit_is_refused_and_nothing_changes():
    t = tree({"/memories/a.txt": "x" * 87 + "END"}, file_bytes=100, user_bytes=1_000)
    assert (
        "Error: /memories/b.txt would be 101 bytes; a memory file holds at most 100 bytes (MEMORY_TOOL_MAX_FILE_BYTES)"
        in (refused(t, command="create", path="/memories/b.txt", file_text="y" * 101))
    )
    assert "would be 102 bytes" in refused(
        t, command="insert", path="/memories/a.txt", insert_line=0, insert_text="z" * 10
    )
    assert "would be 107 bytes" in refused(
        t, command="str_replace", path="/memories/a.txt", old_str="END", new_str="y" * 20
    )
    assert (
        sorted(t.files) == ["/memories/a.txt"] and t.files["/memories/a.txt"].content.endswith("END") and not t.changed
    )


def test_the_per_user_limit_counts_every_file_in_bytes():
    t = tree({"/memories/a.txt": "é" * 400}, file_bytes=1_000, user_bytes=1_000)  # 800 bytes in UTF-8
    message = refused(t, command="create", path="/memories/b.txt", file_text="y" * 201)
    assert "would hold 1,001 bytes; it holds at most 1,000 (MEMORY_TOOL_MAX_USER_BYTES)" in message
    run(t, command="create", path="/memories/b.txt", file_text="y" * 200)
    run(t, command="str_replace", path="/memories/b.txt", old_str="y" * 200, new_str="short")  # shrinking is fine


def test_the_number_of_files_is_limited():
    t = tree({f"/memories/{i}.txt": "." for i in range(3)}, files=3)
    assert "holds 3 files, the most it may (MEMORY_TOOL_MAX_FILES)" in refused(
        t, command="create", path="/memories/x.txt", file_text="."
    )
    run(t, command="rename", old_path="/memories/0.txt", new_path="/memories/zero.txt")  # moving adds no file
