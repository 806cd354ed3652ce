"""File tools: confined to their root, with capped output and an edit that must match once."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.tools import BaseTool

from explicit_react.tools import file_tools
from explicit_react.tools.files import (
    MAX_EDITED_FILE_BYTES,
    MAX_MATCHES,
    MAX_PLACES_COUNTED,
    MAX_READ_LINES,
    Workspace,
)

SENTINEL = "outside content: do not touch\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "pkg").mkdir(parents=True)
    (root / "app.py").write_text("import os\n\ndef main():\n    print('hello')\n    print('hello')\n")
    (root / "pkg" / "util.py").write_text("def helper():\n    return 42\n")
    (root / "README.md").write_text("# Demo\nhello world\n")
    (tmp_path / "secret.txt").write_text(SENTINEL)
    (root / "escape").symlink_to(tmp_path)  # a directory symlink that leads outside
    (root / "secret_link.txt").symlink_to(tmp_path / "secret.txt")
    return root


def tools_by_name(root: Path, read_only: bool = False) -> dict[str, BaseTool]:
    return {tool.name: tool for tool in file_tools(root, read_only=read_only)}


def test_tool_names_and_read_only(workspace: Path) -> None:
    assert list(tools_by_name(workspace)) == ["read_file", "grep", "search_files", "write_file", "edit_file"]
    assert list(tools_by_name(workspace, read_only=True)) == ["read_file", "grep", "search_files"]


def test_read_file_with_line_numbers_and_range(workspace: Path) -> None:
    read = tools_by_name(workspace)["read_file"]
    assert (
        read.invoke({"path": "app.py", "start": 3, "end": 4})
        == "    3  def main():\n    4      print('hello')"
    )
    assert read.invoke("pkg/util.py").splitlines()[0] == "    1  def helper():"


def test_read_file_caps_lines(workspace: Path) -> None:
    (workspace / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 1001)))
    observation = tools_by_name(workspace)["read_file"].invoke({"path": "long.txt"})
    lines = observation.splitlines()
    assert len(lines) == MAX_READ_LINES + 1
    assert (
        lines[-1]
        == f"[... showing {MAX_READ_LINES} lines; read again with start={MAX_READ_LINES + 1} for more]"
    )


def test_read_file_errors(workspace: Path) -> None:
    read = tools_by_name(workspace)["read_file"]
    assert read.invoke("missing.py").startswith("Error: 'missing.py' does not exist")
    assert read.invoke("pkg") == "Error: 'pkg' is a folder, not a file"
    assert read.invoke({"path": "app.py", "start": 0}).startswith("Error: bad line range")
    assert read.invoke({"path": "app.py", "start": 99}).startswith("Error: app.py has only 5 lines")
    (workspace / "blob.bin").write_bytes(b"\x00\x01\x02")
    assert read.invoke("blob.bin") == "Error: 'blob.bin' is a binary file"


def test_grep_plain_and_regex(workspace: Path) -> None:
    grep = tools_by_name(workspace)["grep"]
    assert grep.invoke({"pattern": "hello"}).splitlines() == [
        "README.md:2: hello world",
        "app.py:4: print('hello')",
        "app.py:5: print('hello')",
    ]
    assert grep.invoke({"pattern": "print(", "path": "app.py"}).count("\n") == 1  # literal, not a regex
    assert grep.invoke({"pattern": r"def \w+\(", "is_regex": True}).splitlines() == [
        "app.py:3: def main():",
        "pkg/util.py:1: def helper():",
    ]
    assert grep.invoke({"pattern": "(", "is_regex": True}).startswith("Error: invalid regular expression")
    assert grep.invoke({"pattern": "nothing-here"}) == "No matches for 'nothing-here' in the workspace root."


def test_grep_caps_matches(workspace: Path) -> None:
    (workspace / "many.txt").write_text("match\n" * (MAX_MATCHES + 50))
    lines = tools_by_name(workspace)["grep"].invoke({"pattern": "match", "path": "many.txt"}).splitlines()
    assert len(lines) == MAX_MATCHES + 1
    assert lines[-1].startswith(f"[... more than {MAX_MATCHES} matches")


def test_search_files(workspace: Path) -> None:
    search = tools_by_name(workspace)["search_files"]
    assert search.invoke({"glob": "*.py"}).splitlines() == ["app.py", "pkg/util.py"]
    assert search.invoke({"glob": "*", "dir": "pkg"}) == "pkg/util.py"
    assert search.invoke({"glob": "*.rs"}) == "No files match '*.rs' in the workspace root."


def test_write_and_edit(workspace: Path) -> None:
    tools = tools_by_name(workspace)
    assert tools["write_file"].invoke({"path": "new/dir/x.txt", "content": "a\nb\n"}) == (
        "Wrote 4 characters (2 lines) to new/dir/x.txt."
    )
    assert (workspace / "new" / "dir" / "x.txt").read_text() == "a\nb\n"
    assert tools["edit_file"].invoke({"path": "pkg/util.py", "old": "42", "new": "43"}) == (
        "Edited pkg/util.py (1 replacement)."
    )
    assert (workspace / "pkg" / "util.py").read_text() == "def helper():\n    return 43\n"


def test_ambiguous_edit_is_refused_and_changes_nothing(workspace: Path) -> None:
    before = (workspace / "app.py").read_text()
    edit = tools_by_name(workspace)["edit_file"]
    observation = edit.invoke({"path": "app.py", "old": "print('hello')", "new": "print('bye')"})
    assert observation.startswith("Error: `old` text matches 2 places in app.py")
    assert edit.invoke({"path": "app.py", "old": "absent", "new": "x"}).startswith(
        "Error: `old` text not found"
    )
    assert edit.invoke({"path": "app.py", "old": "", "new": "x"}).startswith("Error: `old` is empty")
    assert (workspace / "app.py").read_text() == before


HOSTILE_PATHS = ["../secret.txt", "pkg/../../secret.txt", "escape/secret.txt", "secret_link.txt", "escape"]


@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_paths_outside_the_root_are_refused_by_every_tool(workspace: Path, path: str) -> None:
    tools = tools_by_name(workspace)
    observations = [
        tools["read_file"].invoke({"path": path}),
        tools["grep"].invoke({"pattern": "outside", "path": path}),
        tools["search_files"].invoke({"glob": "*", "dir": path}),
        tools["write_file"].invoke({"path": path, "content": "overwritten"}),
        tools["edit_file"].invoke({"path": path, "old": "outside", "new": "inside"}),
    ]
    for observation in observations:
        assert observation.startswith("Error: "), observation
        assert "outside content" not in observation
        assert "contains '..'" in observation or "leads outside the workspace root" in observation
    assert (workspace.parent / "secret.txt").read_text() == SENTINEL


def test_absolute_paths_are_refused(workspace: Path) -> None:
    tools = tools_by_name(workspace)
    outside = str(workspace.parent / "secret.txt")
    for path in (outside, str(workspace / "app.py"), "/etc/passwd", "~/.bashrc"):
        observation = tools["read_file"].invoke({"path": path})
        assert "is an absolute path" in observation
    assert tools["write_file"].invoke({"path": outside, "content": "x"}).startswith("Error: ")
    assert (workspace.parent / "secret.txt").read_text() == SENTINEL


def test_listing_and_grep_skip_symlinks_that_lead_outside(workspace: Path) -> None:
    tools = tools_by_name(workspace)
    assert "secret" not in tools["search_files"].invoke({"glob": "*"})
    assert tools["grep"].invoke({"pattern": "outside content"}).startswith("No matches")


def test_symlink_inside_the_root_is_allowed(workspace: Path) -> None:
    (workspace / "alias.py").symlink_to(workspace / "app.py")
    assert "import os" in tools_by_name(workspace)["read_file"].invoke("alias.py")


def test_writing_through_a_symlinked_directory_is_refused(workspace: Path) -> None:
    observation = tools_by_name(workspace)["write_file"].invoke({"path": "escape/new.txt", "content": "x"})
    assert "leads outside the workspace root" in observation
    assert not (workspace.parent / "new.txt").exists()


def test_bad_arguments_and_async(workspace: Path) -> None:
    tools = tools_by_name(workspace)
    assert tools["edit_file"].invoke({"path": "app.py"}).startswith("Error: invalid tool arguments")
    assert (
        asyncio.run(tools["read_file"].ainvoke({"path": "README.md"})) == "    1  # Demo\n    2  hello world"
    )


def test_os_errors_become_observations(workspace: Path) -> None:
    observation = tools_by_name(workspace)["write_file"].invoke({"path": "app.py/inner.txt", "content": "x"})
    assert observation.startswith("Error: write_file failed: ")
    assert str(workspace) not in observation  # no absolute paths leak into the prompt


def test_root_must_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a directory"):
        file_tools(tmp_path / "missing")


def test_grep_searches_a_file_that_is_not_utf8_and_the_files_beside_it(workspace: Path) -> None:
    (workspace / "legacy.txt").write_bytes("caf\xe9 = 1\nneedle in latin-1\n".encode("latin-1"))
    (workspace / "modern.txt").write_text("caf\xe9 needle in utf-8\n", encoding="utf-8")
    tools = tools_by_name(workspace)
    grep = tools["grep"]
    assert grep.invoke({"pattern": "needle"}).splitlines() == [
        "legacy.txt:2: needle in latin-1",
        "modern.txt:1: caf\xe9 needle in utf-8",
    ]
    assert grep.invoke({"pattern": r"^n\w+", "is_regex": True}) == "legacy.txt:2: needle in latin-1"
    # A matched line keeps the surrogate that stands for the Latin-1 byte, as read_file shows it.
    shown = grep.invoke({"pattern": "caf", "path": "legacy.txt"})
    assert shown == "legacy.txt:1: caf\udce9 = 1"
    assert tools["read_file"].invoke({"path": "legacy.txt", "end": 1}) == "    1  caf\udce9 = 1"
    # Called directly, as a plain LangChain agent would, the tool does not raise either.
    assert Workspace(workspace).grep("= 1") == "legacy.txt:1: caf\udce9 = 1"


FILL_THEN_FAIL = """
import json, os, resource, signal, sys
from explicit_react.tools import file_tools
root = sys.argv[1]
tools = {tool.name: tool for tool in file_tools(root)}
original = open(os.path.join(root, "app.py")).read()
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))  # stands in for a disk that fills up
results = []
for name, arguments in [
    ("edit_file", {"path": "app.py", "old": "MARKER", "new": "X" * 1000}),
    ("write_file", {"path": "app.py", "content": "Z" * 3000}),
    ("write_file", {"path": "new.txt", "content": "Z" * 3000}),
]:
    observation = tools[name].invoke(arguments)
    kept = open(os.path.join(root, "app.py")).read() == original
    results.append([observation, kept, sorted(os.listdir(root))])
print(json.dumps(results))
"""


def test_a_failed_write_or_edit_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    original = "A" * 1000 + "\nMARKER\n" + "B" * 400 + "\n"
    (tmp_path / "app.py").write_text(original)
    run = subprocess.run(
        [sys.executable, "-c", FILL_THEN_FAIL, str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    results = json.loads(run.stdout)
    for (observation, kept, names), tool in zip(
        results, ["edit_file", "write_file", "write_file"], strict=True
    ):
        assert observation.startswith(f"Error: {tool} failed: "), results
        assert kept, f"{tool} damaged app.py: {observation}"
        assert names == ["app.py"], names  # no temporary file left behind
    assert (tmp_path / "app.py").read_text() == original


def test_an_edit_or_write_interrupted_by_an_error_leaves_no_trace(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = sorted(p.name for p in workspace.iterdir())
    original = (workspace / "app.py").read_bytes()

    def disk_full(descriptor: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    tools = tools_by_name(workspace)
    observation = tools["edit_file"].invoke({"path": "app.py", "old": "import os", "new": "import sys"})
    assert observation == "Error: edit_file failed: No space left on device"
    observation = tools["write_file"].invoke({"path": "app.py", "content": "x"})
    assert observation == "Error: write_file failed: No space left on device"
    assert (workspace / "app.py").read_bytes() == original
    assert sorted(p.name for p in workspace.iterdir()) == before


def test_an_edit_keeps_the_permission_bits_and_a_symlink_to_the_file(workspace: Path) -> None:
    (workspace / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (workspace / "run.sh").chmod(0o750)
    (workspace / "alias.sh").symlink_to("run.sh")
    tools = tools_by_name(workspace)
    assert tools["edit_file"].invoke({"path": "alias.sh", "old": "hi", "new": "bye"}).startswith("Edited")
    assert (
        tools["write_file"]
        .invoke({"path": "run.sh", "content": "#!/bin/sh\necho hello\n"})
        .startswith("Wrote")
    )
    assert (workspace / "alias.sh").is_symlink() and os.readlink(workspace / "alias.sh") == "run.sh"
    assert (workspace / "run.sh").read_text() == "#!/bin/sh\necho hello\n"
    assert stat.S_IMODE((workspace / "run.sh").stat().st_mode) == 0o750


def test_read_file_refuses_a_file_whose_nul_byte_is_past_the_lines_it_shows(workspace: Path) -> None:
    (workspace / "late.dat").write_bytes(b"header\n" * 1000 + b"\x00\x01 binary tail\n")
    read = tools_by_name(workspace)["read_file"]
    assert read.invoke({"path": "late.dat", "start": 1, "end": 2}) == "Error: 'late.dat' is a binary file"
    assert read.invoke({"path": "late.dat"}) == "Error: 'late.dat' is a binary file"


def test_read_file_looks_for_a_nul_byte_only_as_far_as_the_edit_size_cap(workspace: Path) -> None:
    """A huge log costs the 400 lines shown plus the first 10 MB, not the whole file."""
    lines = MAX_EDITED_FILE_BYTES // len(b"line\n") + 10
    (workspace / "huge.log").write_bytes(b"line\n" * lines + b"\x00")
    read = tools_by_name(workspace)["read_file"]
    assert read.invoke({"path": "huge.log", "end": 1}) == "    1  line"


@pytest.mark.parametrize(
    "separator", ["\f", "\x0b", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\r"]
)
def test_grep_numbers_lines_as_read_file_does(workspace: Path, separator: str) -> None:
    """Only "\\n" ends a line: a form feed, U+2028 or a lone \\r inside a line (as in GNU-style C or
    a JSON string) does not shift the line numbers grep gives from those read_file shows."""
    (workspace / "src.c").write_text(f"int a;\n{separator}\nint b; {separator} x\nTARGET();\n", newline="")
    tools = tools_by_name(workspace)
    assert tools["grep"].invoke({"pattern": "TARGET", "path": "src.c"}) == "src.c:4: TARGET();"
    assert tools["read_file"].invoke({"path": "src.c", "start": 4}) == "    4  TARGET();"
    assert tools["grep"].invoke({"pattern": "int b", "path": "src.c"}) == f"src.c:3: int b; {separator} x"


def test_grep_matches_the_end_of_a_crlf_line_and_not_past_the_last_line(workspace: Path) -> None:
    (workspace / "dos.txt").write_bytes(b"first\r\nsecond\r\n")
    grep = tools_by_name(workspace)["grep"]
    assert grep.invoke({"pattern": "d$", "path": "dos.txt", "is_regex": True}) == "dos.txt:2: second"
    assert grep.invoke({"pattern": "^$", "path": "dos.txt", "is_regex": True}) == (
        "No matches for '^$' in dos.txt."
    )


def test_an_edit_whose_old_text_overlaps_itself_in_two_places_is_refused(workspace: Path) -> None:
    """Two "pass" lines occur at lines 3-4 and at lines 4-5: which to replace is ambiguous."""
    before = "def f():\n    if x:\n        pass\n        pass\n        pass\n"
    (workspace / "f.py").write_text(before)
    edit = tools_by_name(workspace)["edit_file"]
    observation = edit.invoke(
        {"path": "f.py", "old": "        pass\n        pass\n", "new": "        return 1\n"}
    )
    assert observation == (
        "Error: `old` text matches 2 places in f.py; include more surrounding lines so it matches exactly once"
    )
    assert edit.invoke({"path": "f.py", "old": "aa", "new": "b"}).startswith("Error: `old` text not found")
    (workspace / "a.txt").write_text("aaaa")  # "aa" starts at three places, two of them apart
    assert edit.invoke({"path": "a.txt", "old": "aa", "new": "b"}).startswith(
        "Error: `old` text matches 3 places in a.txt"
    )
    assert (workspace / "f.py").read_text() == before
    assert (workspace / "a.txt").read_text() == "aaaa"
    assert edit.invoke({"path": "a.txt", "old": "aaaa", "new": "b"}) == "Edited a.txt (1 replacement)."
    (workspace / "many.txt").write_text("a" * 300)  # places are counted only so far
    assert edit.invoke({"path": "many.txt", "old": "a", "new": "b"}).startswith(
        f"Error: `old` text matches more than {MAX_PLACES_COUNTED} places in many.txt"
    )
