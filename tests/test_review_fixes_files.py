"""Defects a review of the file tools found, each with the case that showed it.

1. A write or an edit replaced the file with a new one carrying only the owner and the mode: its
   POSIX ACL was lost, and the mode's group bits (the ACL's mask) then let the owning group read
   what the ACL denied it. Other extended attributes were lost too.
2. ``edit_file`` on a CRLF file put bare LF line ends in (``new`` with a line break, ``old`` found
   as given), or CR CR LF (``new`` already with CRLF).
3. ``grep`` and ``search_files`` walked on after the agent gave up on the call.
4. A folder that can be listed but not searched made the whole ``grep`` fail.
5. A tree 1,200 folders deep raised ``RecursionError`` out of both (``os.walk`` recurses in 3.11).
6. ``grep`` said "No matches" for a file it had skipped (over 2 MB, a FIFO).
7. ``edit_file``'s ``new`` and ``search_files``'s ``glob`` had no size cap.
"""

from __future__ import annotations

import os
import struct
import threading
import time
from pathlib import Path

import pytest
from langchain_core.tools import BaseTool

from explicit_react.deadline import CallTimedOut, call_with_timeout
from explicit_react.tools import file_tools
from explicit_react.tools.files import MAX_PATTERN_CHARS, MAX_WRITTEN_CHARS


def tools(root: Path) -> dict[str, BaseTool]:
    return {tool.name: tool for tool in file_tools(root)}


def acl(entries: list[tuple[int, int, int]]) -> bytes:
    """A POSIX ACL as Linux stores it in ``system.posix_acl_access``."""
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *entry) for entry in entries)


UNDEFINED = 0xFFFFFFFF
GROUP_DENIED = acl(
    [(0x01, 6, UNDEFINED), (0x02, 6, 65534), (0x04, 0, UNDEFINED), (0x10, 6, UNDEFINED), (0x20, 0, UNDEFINED)]
)


@pytest.mark.parametrize("tool", ["edit_file", "write_file"])
def test_a_rewritten_file_keeps_its_access_list_and_attributes(tmp_path: Path, tool: str) -> None:
    path = tmp_path / "payroll.csv"
    path.write_text("alice,100\n")
    try:
        os.setxattr(path, "system.posix_acl_access", GROUP_DENIED)
        os.setxattr(path, "user.origin", b"hr")
    except OSError as error:
        pytest.skip(f"this file system keeps no ACLs or user attributes ({error})")
    arguments = (
        {"path": "payroll.csv", "old": "100", "new": "120"}
        if tool == "edit_file"
        else {"path": "payroll.csv", "content": "alice,120\n"}
    )
    assert tools(tmp_path)[tool].invoke(arguments).startswith(("Edited", "Wrote"))
    assert path.read_text() == "alice,120\n"
    assert os.getxattr(path, "system.posix_acl_access") == GROUP_DENIED
    assert os.getxattr(path, "user.origin") == b"hr"


@pytest.mark.parametrize(
    ("old", "new", "after"),
    [
        ("beta", "beta\nbeta2", b"alpha\r\nbeta\r\nbeta2\r\ngamma\r\n"),  # old found as given
        ("alpha\nbeta", "alpha\r\n1.5\nbeta", b"alpha\r\n1.5\r\nbeta\r\ngamma\r\n"),  # new mixed
        ("beta\r\ngamma", "beta\r\ngamma!", b"alpha\r\nbeta\r\ngamma!\r\n"),  # both with CRLF already
    ],
)
def test_an_edit_of_a_crlf_file_puts_crlf_lines_in(tmp_path: Path, old: str, new: str, after: bytes) -> None:
    (tmp_path / "a.txt").write_bytes(b"alpha\r\nbeta\r\ngamma\r\n")
    assert tools(tmp_path)["edit_file"].invoke({"path": "a.txt", "old": old, "new": new}).startswith("Edited")
    assert (tmp_path / "a.txt").read_bytes() == after


def test_the_lf_part_of_a_mixed_file_keeps_lf(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_bytes(b"def f():\n    a = 2\n    return a\n# pasted\r\n")
    tools(tmp_path)["edit_file"].invoke({"path": "m.py", "old": "    a = 2", "new": "    a = 2\n    b = 3"})
    assert (tmp_path / "m.py").read_bytes() == b"def f():\n    a = 2\n    b = 3\n    return a\n# pasted\r\n"


def test_an_lf_file_keeps_lf(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"alpha\nbeta\n")
    tools(tmp_path)["edit_file"].invoke({"path": "a.txt", "old": "beta", "new": "beta\nbeta2"})
    assert (tmp_path / "a.txt").read_bytes() == b"alpha\nbeta\nbeta2\n"


@pytest.mark.parametrize("tool", ["grep", "search_files"])
def test_a_given_up_search_stops_walking(tmp_path: Path, tool: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(300):
        folder = tmp_path / f"d{i:03d}"
        folder.mkdir()
        (folder / "f.txt").write_text("nothing here\n")
    from explicit_react.tools import files

    opened: list[Path] = []
    scandir = os.scandir

    def slow_scandir(path: object) -> object:
        opened.append(Path(str(path)))
        time.sleep(0.01)
        return scandir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(files.os, "scandir", slow_scandir)
    arguments = {"pattern": "needle"} if tool == "grep" else {"glob": "*.nomatch"}
    with pytest.raises(CallTimedOut):
        call_with_timeout(lambda: tools(tmp_path)[tool].invoke(arguments), 0.3)
    at_timeout = len(opened)
    time.sleep(1.0)
    assert len(opened) <= at_timeout + 2  # before: the walk went on to all 301 folders
    assert at_timeout < 301


def test_a_folder_that_cannot_be_searched_is_skipped(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root searches any folder")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("# TODO fix\n")
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "x.py").write_text("# TODO\n")
    locked.chmod(0o644)  # listable, not searchable
    try:
        assert tools(tmp_path)["grep"].invoke({"pattern": "TODO"}).startswith("src/app.py:1: # TODO fix")
        assert tools(tmp_path)["search_files"].invoke({"glob": "*.py"}).startswith("src/app.py")
    finally:
        locked.chmod(0o755)


def test_a_folder_that_cannot_be_searched_is_skipped_as_root_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("# TODO fix\n")
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "x.py").write_text("# TODO\n")
    resolve = Path.resolve

    def refusing(self: Path, strict: bool = False) -> Path:
        if "locked" in self.parts:
            raise PermissionError(13, "Permission denied")
        return resolve(self, strict)

    monkeypatch.setattr(Path, "resolve", refusing)
    assert tools(tmp_path)["grep"].invoke({"pattern": "TODO", "path": "."}) == "src/app.py:1: # TODO fix"
    assert tools(tmp_path)["search_files"].invoke({"glob": "*.py"}) == "src/app.py"


def test_a_very_deep_tree_is_searched_without_recursion(tmp_path: Path) -> None:
    levels = [tmp_path / "d"]
    for _ in range(1199):  # one level at a time: mkdir(parents=True) recurses too
        levels.append(levels[-1] / "d")
    for level in levels:
        level.mkdir()
    (levels[-1] / "needle.txt").write_text("needle\n")
    try:
        assert tools(tmp_path)["grep"].invoke({"pattern": "needle"}).endswith("needle.txt:1: needle")
        assert tools(tmp_path)["search_files"].invoke({"glob": "needle.txt"}).endswith("/needle.txt")
    finally:  # bottom up: shutil.rmtree recurses too, and pytest's cleanup of old tmp folders failed on it
        (levels[-1] / "needle.txt").unlink()
        for level in reversed(levels):
            level.rmdir()


def test_grep_says_why_it_skipped_the_file_it_was_given(tmp_path: Path) -> None:
    (tmp_path / "app.log").write_text("ERROR disk full\n" + "x" * 2_100_000)
    os.mkfifo(tmp_path / "pipe")
    grep = tools(tmp_path)["grep"]
    assert grep.invoke({"pattern": "ERROR", "path": "app.log"}) == (
        "Error: 'app.log' is over 2,000,000 bytes, more than grep searches; read_file shows it"
    )
    assert grep.invoke({"pattern": "x", "path": "pipe"}) == (
        "Error: 'pipe' is not a regular file (a FIFO, a device or a socket)"  # read_file refuses it too
    )
    assert grep.invoke({"pattern": "ERROR"}) == (
        "No matches for 'ERROR' in the workspace root (1 files skipped: binary, over 2,000,000 bytes, or unreadable)."
    )
    (tmp_path / "blob.bin").write_bytes(b"ERROR\x00\x01")
    assert (
        grep.invoke({"pattern": "ERROR", "path": "blob.bin"}) == "Error: 'blob.bin' is a binary file"
    )  # no read_file hint: it refuses it too


def test_edit_new_text_and_glob_have_caps(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    edit = tools(tmp_path)["edit_file"].invoke(
        {"path": "a.txt", "old": "x", "new": "y" * (MAX_WRITTEN_CHARS + 1)}
    )
    assert edit.startswith("Error: `new` too long") and (tmp_path / "a.txt").read_text() == "x\n"
    glob = tools(tmp_path)["search_files"].invoke({"glob": "*" * (MAX_PATTERN_CHARS + 1)})
    assert glob.startswith("Error: glob too long") and len(glob) < 200


def test_the_walk_order_is_os_walks(tmp_path: Path) -> None:
    for name in ("b/z.txt", "b/a/y.txt", "a.txt", "c/x.txt", "b.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("hit\n")
    order = [line.split(":")[0] for line in tools(tmp_path)["grep"].invoke({"pattern": "hit"}).splitlines()]
    walked = [
        os.path.relpath(os.path.join(d, n), tmp_path)
        for d, subdirs, names in os.walk(tmp_path)
        if not subdirs.sort()
        for n in sorted(names)
    ]
    assert order == walked


def test_searches_in_threads_at_once_agree(tmp_path: Path) -> None:
    for i in range(20):
        (tmp_path / f"f{i}.txt").write_text(f"line {i}\n")
    results: list[str] = []
    threads = [
        threading.Thread(target=lambda: results.append(tools(tmp_path)["grep"].invoke({"pattern": "line"})))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(results)) == 1 and results[0].count("\n") == 19
