"""File tools confined to one root directory: read_file, grep, search_files, write_file, edit_file.

Confinement: every path is relative to the root. Absolute paths and ``..`` are refused outright,
and a path is resolved (following symlinks) and refused unless the result is still inside the
root, so a symlink that leads outside cannot be read, listed, searched or written through. Not
covered: another process swapping a checked path for a symlink between the check and the use.

Files are never damaged: only regular files are opened (without blocking, so a FIFO or a device
is refused, not waited on), edits keep every byte they do not replace (text that is not UTF-8 and
CRLF line ends included), a write goes to a temporary file that replaces the file only once it is
complete (a full disk leaves the old file as it was), a file with a NUL byte is binary and refused,
and every input has a size cap with a message that says so. The reading and writing itself is in
``_file_io.py``.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import re2
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field

from explicit_react.deadline import abandoned
from explicit_react.tools._errors import FileText, Text, tool_error, validation_error_observation
from explicit_react.tools._file_io import (
    NOT_REGULAR,
    decoded,
    encoded,
    has_surrogates,
    matchable,
    nul_ahead,
    numbered_lines,
    open_regular,
    replace_with,
    text_lines,
)

MAX_READ_LINES = 400
MAX_LINE_CHARS = 500
MAX_MATCHES = 100
MAX_FILES_LISTED = 200
MAX_SEARCHED_FILE_BYTES = 2_000_000
MAX_EDITED_FILE_BYTES = 10_000_000
MAX_WRITTEN_CHARS = 10_000_000
MAX_PATTERN_CHARS = 1_000
MAX_PLACES_COUNTED = 100  # edit_file's refusal says "more than 100 places" beyond
SKIPPED_DIRECTORIES = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", "venv"})


class Workspace:
    """A root directory and the rule that every path used by the tools stays inside it."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise ValueError(f"file tools root is not a directory: {root}")

    def resolve(self, path: str) -> Path:
        """The real path of ``path`` inside the root, or an ``Error:`` ToolException."""
        if not path or not path.strip():
            raise tool_error("empty path; give a path relative to the workspace root")
        if "\x00" in path:
            raise tool_error("the path contains a NUL character")
        # A backslash is a folder separator as Windows writes it ("notes\\a.txt"), not a character
        # of a file name: read as one, "sub\\a.txt" made a file of that name and "..\\x" passed the
        # check for "..".
        candidate = Path(path.strip().replace("\\", "/"))
        first = candidate.parts[0] if candidate.parts else ""
        home = first == "~" or (first.startswith("~") and len(candidate.parts) > 1)
        if candidate.is_absolute() or home:  # "~/x" and "~user/x" name a home folder; "~notes.txt" is a file
            raise tool_error(f"{path!r} is an absolute path; use a path relative to the workspace root")
        if ".." in candidate.parts:
            raise tool_error(f"{path!r} contains '..'; paths must stay inside the workspace root")
        try:
            real = (self.root / candidate).resolve()
        except (RuntimeError, OSError):  # a symlink loop; its message names absolute paths
            raise tool_error(f"{path!r} is a symlink loop") from None
        if not real.is_relative_to(self.root):
            raise tool_error(f"{path!r} leads outside the workspace root (through a symlink); refused")
        return real

    def relative(self, real: Path) -> str:
        """How a path inside the root is shown to the model."""
        return real.relative_to(self.root).as_posix() or "."

    def where(self, real: Path) -> str:
        """A place inside the root as a sentence names it: "the workspace root" rather than ".", which
        before a full stop read as "..", the parent folder."""
        return "the workspace root" if real == self.root else self.relative(real)

    def files_under(self, start: Path) -> Iterator[Path]:
        """Every regular file under ``start`` (itself, if a file) that resolves inside the root, in
        name order, folders depth first. A folder walked with a stack of its own, not ``os.walk``
        (recursive in Python 3.11: a tree 1,000 folders deep raised ``RecursionError``); one that
        cannot be listed or searched is skipped, not the whole search; and the walk stops once the
        agent gives up on the call (``deadline.abandoned``), not after the whole tree."""
        if start.is_file():
            yield start
            return
        given_up = abandoned()
        folders = [start]
        while folders:
            if given_up is not None and given_up.is_set():
                return
            folder = folders.pop()
            try:
                with os.scandir(folder) as listing:
                    entries = sorted(listing, key=lambda entry: entry.name)
            except OSError:
                continue
            subfolders = []
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):  # a folder link is not followed
                        if entry.name not in SKIPPED_DIRECTORIES:
                            subfolders.append(Path(entry.path))
                        continue
                    real = Path(entry.path).resolve()
                    if real.is_relative_to(self.root) and real.is_file():
                        yield Path(entry.path)
                except (RuntimeError, OSError):  # a symlink loop, a folder that cannot be searched
                    continue
            folders += reversed(subfolders)  # as os.walk goes: this folder's files, then each folder in order

    # The tools. Each returns the observation text or raises an ``Error:`` ToolException.

    def read_file(self, path: str, start: int = 1, end: int | None = None) -> str:
        """Lines ``start``..``end`` (1-based, inclusive) with line numbers."""
        real = self._existing_file(path)
        if start < 1 or (end is not None and end < start):
            raise tool_error(f"bad line range start={start}, end={end}; lines are numbered from 1")
        last = end if end is not None else start + MAX_READ_LINES - 1
        last = min(last, start + MAX_READ_LINES - 1)
        shown: list[str] = []
        total, more = 0, False
        with open_regular(real, os.O_RDONLY) as handle:
            for number, line in numbered_lines(handle):
                if b"\x00" in line:
                    raise tool_error(f"{path!r} is a binary file")
                total = number
                if number > last:
                    more = True
                    break
                if number >= start:
                    shown.append(f"{number:>5}  {_clip_line(decoded(line).rstrip(chr(13) + chr(10)))}")
            if more and nul_ahead(handle, MAX_EDITED_FILE_BYTES):
                raise tool_error(f"{path!r} is a binary file")
        if total == 0:
            return f"{self.relative(real)} is empty."
        if start > total:
            raise tool_error(f"{self.relative(real)} has only {total} lines; start={start} is past the end")
        if more and (end is None or end > last):
            shown.append(f"[... showing {MAX_READ_LINES} lines; read again with start={last + 1} for more]")
        return "\n".join(shown)

    def grep(self, pattern: str, path: str = ".", is_regex: bool = False) -> str:
        """Lines containing ``pattern`` as ``file:line: text``."""
        if not pattern:
            raise tool_error("empty pattern; give the text to search for")
        if len(pattern) > MAX_PATTERN_CHARS:
            raise tool_error(f"pattern too long ({len(pattern):,} characters, at most {MAX_PATTERN_CHARS:,})")
        matcher = _linear_time_regex(pattern, literal=not is_regex)
        start = self._existing(path)
        given_up = abandoned()
        matches: list[str] = []
        skipped = 0
        for file in self.files_under(start) if start.is_dir() else [start]:
            data = _searchable(file)
            if isinstance(data, str):  # why it is not searched
                if file == start:  # the one file asked for: "No matches" would be untrue
                    shown = "; read_file shows it" if data == _OVER_GREP_LIMIT else ""
                    raise tool_error(f"{path!r} {data}{shown}")
                skipped += 1
                continue
            if given_up is not None and given_up.is_set():
                break
            text = decoded(data)
            utf8 = text.isascii() or not has_surrogates(text)
            for number, line in enumerate(text_lines(text), start=1):
                # RE2 takes only text that encodes to UTF-8: a byte that is not UTF-8 (a surrogate
                # here) is matched as U+FFFD, while the line shown keeps it, as read_file shows it.
                if matcher.search(line if utf8 else matchable(line)):
                    if len(matches) == MAX_MATCHES:
                        matches.append(f"[... more than {MAX_MATCHES} matches; narrow the pattern or path]")
                        return "\n".join(matches)
                    matches.append(f"{self.relative(file)}:{number}: {_clip_line(line.strip())}")
        note = f" ({skipped} files skipped: binary, over {MAX_SEARCHED_FILE_BYTES:,} bytes, or unreadable)"
        if matches:
            return "\n".join(matches)
        return f"No matches for {pattern!r} in {self.where(start)}{note if skipped else ''}."

    def search_files(self, glob: str = "*", dir: str = ".") -> str:
        """Files whose name (or path relative to the root) matches ``glob``."""
        if len(glob) > MAX_PATTERN_CHARS:
            raise tool_error(f"glob too long ({len(glob):,} characters, at most {MAX_PATTERN_CHARS:,})")
        start = self._existing(dir)
        if not start.is_dir():
            raise tool_error(f"{dir!r} is not a directory")
        # "**/" is any number of folders, none included, as in pathlib and git: "**/*.txt" is every
        # .txt file, the top folder's too ("*" alone already crosses "/" in fnmatch).
        globs = {glob, glob.replace("**/", "")}
        found: list[str] = []
        for file in self.files_under(start):
            shown = self.relative(file)
            if any(fnmatch.fnmatch(file.name, each) or fnmatch.fnmatch(shown, each) for each in globs):
                if len(found) == MAX_FILES_LISTED:
                    found.append(f"[... more than {MAX_FILES_LISTED} files; narrow the glob or dir]")
                    break
                found.append(shown)
        return "\n".join(found) if found else f"No files match {glob!r} in {self.where(start)}."

    def write_file(self, path: str, content: str) -> str:
        """Create or overwrite a text file (parent directories are created)."""
        real = self.resolve(path)
        if path.strip().endswith(("/", "\\")):  # resolve drops the "/": "notes/" became a file "notes"
            raise tool_error(f"{path!r} names a folder; give a file name, such as {path.strip()}notes.txt")
        if real.is_dir():
            raise tool_error(f"{path!r} is a directory")
        if len(content) > MAX_WRITTEN_CHARS:
            raise tool_error(f"content too long ({len(content):,} characters, at most {MAX_WRITTEN_CHARS:,})")
        data = encoded(content)
        real.parent.mkdir(parents=True, exist_ok=True)
        try:  # refuses a FIFO or a device and a file it may not write, as writing in place did
            with open_regular(real, os.O_WRONLY) as handle:
                existing: os.stat_result | None = os.fstat(handle.fileno())
        except FileNotFoundError:
            existing = None
        replace_with(real, data, existing)
        lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
        return f"Wrote {len(content)} characters ({lines} lines) to {self.relative(real)}."

    def edit_file(self, path: str, old: str, new: str) -> str:
        """Replace the one place where ``old`` occurs with ``new``."""
        real = self._existing_file(path)
        if not old:
            raise tool_error("`old` is empty; copy the exact text to replace from read_file")
        if len(new) > MAX_WRITTEN_CHARS:
            raise tool_error(f"`new` too long ({len(new):,} characters, at most {MAX_WRITTEN_CHARS:,})")
        with open_regular(real, os.O_RDWR) as handle:
            data = handle.read(MAX_EDITED_FILE_BYTES + 1)
            if len(data) > MAX_EDITED_FILE_BYTES:
                raise tool_error(f"{path!r} is too large to edit (over {MAX_EDITED_FILE_BYTES:,} bytes)")
            if b"\x00" in data:
                raise tool_error(f"{path!r} is a binary file")
            text = decoded(data)
            if "\r\n" in text and old not in text:  # as read_file showed it, without the CR
                old = old.replace("\r\n", "\n").replace("\n", "\r\n")
            self._check_once(real, text, old)
            if "\r\n" in text and _crlf_at(text, text.index(old)):  # new lines end as the place's do
                new = new.replace("\r\n", "\n").replace("\n", "\r\n")
            replaced = encoded(text.replace(old, new, 1))
            if len(replaced) > MAX_EDITED_FILE_BYTES:
                raise tool_error(
                    f"the edit would make {path!r} too large (over {MAX_EDITED_FILE_BYTES:,} bytes)"
                )
            existing = os.fstat(handle.fileno())
        replace_with(real, replaced, existing)
        return f"Edited {self.relative(real)} (1 replacement)."

    def _check_once(self, real: Path, text: str, old: str) -> None:
        """Refuse an edit whose ``old`` text is not in ``text`` exactly once. Places that overlap
        count too: ``str.count`` finds two "pass" lines once in three such lines, and the edit then
        silently replaced the first of the two places the model may have meant."""
        count = _places(text, old)
        if count == 0:
            raise tool_error(
                f"`old` text not found in {self.relative(real)}; read_file first and copy an exact snippet"
            )
        if count > 1:
            places = f"more than {MAX_PLACES_COUNTED}" if count > MAX_PLACES_COUNTED else str(count)
            raise tool_error(
                f"`old` text matches {places} places in {self.relative(real)}; "
                "include more surrounding lines so it matches exactly once"
            )

    def _existing(self, path: str) -> Path:
        real = self.resolve(path)
        if not real.exists():
            raise tool_error(f"{path!r} does not exist (paths are relative to the workspace root)")
        return real

    def _existing_file(self, path: str) -> Path:
        real = self._existing(path)
        if real.is_dir():
            raise tool_error(f"{path!r} is a folder, not a file")
        if not real.is_file():
            raise tool_error(f"{path!r} {NOT_REGULAR}")
        return real


def _linear_time_regex(pattern: str, *, literal: bool = False) -> Any:
    """``pattern`` compiled by RE2, whose matching time grows linearly with the text: Python's ``re``
    backtracks, and ``(=+)+#`` over a line of ``=`` ran for hours holding the GIL, where no timeout
    can stop it. RE2 has no backreferences or lookaround; such a pattern gets a clear refusal."""
    options = re2.Options()
    options.log_errors = False  # the error goes to the model, not to stderr
    options.literal = literal
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else exc
        raise tool_error(
            f"invalid regular expression {pattern!r}: {reason} (RE2 syntax: no backreferences or lookaround)"
        ) from None


def _places(text: str, old: str) -> int:
    """At how many places ``old`` starts in ``text``, overlapping places included, counted up to one
    past ``MAX_PLACES_COUNTED``: each place is one more search of the text, and beyond a hundred the
    exact number does not help the model write a unique ``old``."""
    count, start = 0, text.find(old)
    while start != -1 and count <= MAX_PLACES_COUNTED:
        count += 1
        start = text.find(old, start + 1)
    return count


def _crlf_at(text: str, at: int) -> bool:
    """Whether the line at ``at`` ends with CRLF (the last line, which may have no end: the line
    before it), in a file whose parts may end their lines differently."""
    end = text.find("\n", at)
    if end == -1:
        end = text.rfind("\n", 0, at)
    return end > 0 and text[end - 1] == "\r"


_OVER_GREP_LIMIT = f"is over {MAX_SEARCHED_FILE_BYTES:,} bytes, more than grep searches"
"""Why grep skips a file that read_file still shows (a page at a time)."""


def _searchable(path: Path) -> bytes | str:
    """The content of a text file small enough to search, or why grep skips the file."""
    try:
        with open_regular(path, os.O_RDONLY) as handle:
            data: bytes = handle.read(MAX_SEARCHED_FILE_BYTES + 1)
    except ToolException as error:  # not a regular file
        return str(error).removeprefix("Error: ").removeprefix(f"{path.name!r} ")
    except OSError as error:
        return f"cannot be read ({error.strerror or error})"
    if len(data) > MAX_SEARCHED_FILE_BYTES:
        return _OVER_GREP_LIMIT
    return "is a binary file" if b"\x00" in data else data


def _clip_line(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + " [...]"


class ReadFileInput(BaseModel):
    """Arguments of read_file."""

    path: FileText = Field(description="file path relative to the workspace root")
    start: int = Field(default=1, description="first line (1-based)")
    end: int | None = Field(default=None, description="last line (inclusive)")


class GrepInput(BaseModel):
    """Arguments of grep."""

    pattern: Text = Field(description="text to find")
    path: FileText = Field(default=".", description="file or directory to search")
    is_regex: bool = Field(default=False, description="treat pattern as a regular expression")


class SearchFilesInput(BaseModel):
    """Arguments of search_files."""

    glob: FileText = Field(default="*", description="file name pattern, e.g. *.py")
    dir: FileText = Field(default=".", description="directory to search")


class WriteFileInput(BaseModel):
    """Arguments of write_file."""

    path: FileText = Field(description="file path relative to the workspace root")
    content: FileText = Field(description="the complete new file content")


class EditFileInput(BaseModel):
    """Arguments of edit_file."""

    path: FileText = Field(description="file path relative to the workspace root")
    old: FileText = Field(description="exact text to replace; must occur exactly once")
    new: FileText = Field(description="replacement text")


def file_tools(root: str | os.PathLike[str], read_only: bool = False) -> list[BaseTool]:
    """File tools confined to ``root``; ``read_only=True`` leaves out write_file and edit_file."""
    workspace = Workspace(root)
    specs: list[tuple[Any, str, type[BaseModel]]] = [
        (workspace.read_file, "Read a text file with line numbers. Args: path, start, end.", ReadFileInput),
        (
            workspace.grep,
            "Find lines containing pattern in files under path. Returns file:line: text.",
            GrepInput,
        ),
        (
            workspace.search_files,
            "List files whose name matches glob (e.g. *.py) under dir.",
            SearchFilesInput,
        ),
    ]
    if not read_only:
        specs += [
            (workspace.write_file, "Create or overwrite a file with content.", WriteFileInput),
            (
                workspace.edit_file,
                "Replace exact text old with new in a file; old must occur once.",
                EditFileInput,
            ),
        ]
    return [
        StructuredTool.from_function(
            func=_observing_os_errors(method),
            name=method.__name__,
            description=description,
            args_schema=schema,
            handle_tool_error=True,
            handle_validation_error=validation_error_observation,
        )
        for method, description, schema in specs
    ]


def _observing_os_errors(method: Any) -> Any:
    """Turn an OSError (permission denied, disk full ...) into an ``Error:`` observation."""

    def run(*arguments: Any, **named: Any) -> str:
        try:
            result: str = method(*arguments, **named)
            return result
        except OSError as exc:
            raise tool_error(f"{method.__name__} failed: {exc.strerror or exc}") from None

    run.__name__ = method.__name__
    run.__doc__ = method.__doc__
    return run
