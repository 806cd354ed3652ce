"""The file I/O under the file tools, written so that a file is never damaged: only regular files
are opened, and without blocking (``open_regular``); a write replaces the file only once a temporary
copy is complete and on disk (``replace_with``); lines are read a bounded piece at a time
(``numbered_lines``, ``nul_ahead``); and text is decoded so that every byte that is not UTF-8 comes
back unchanged when it is written (``decoded``, ``encoded``). ``text_lines`` numbers the lines of
a text as read_file does, for grep. ``file_text`` decodes a file the knowledge base indexes.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import os
import secrets
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from explicit_react.deadline import abandoned
from explicit_react.tools._errors import tool_error

LINE_READ_BYTES = 64 * 1024  # read_file holds at most this much of one line in memory


NOT_REGULAR = "is not a regular file (a FIFO, a device or a socket)"


def open_regular(path: Path, flags: int, mode: int = 0o666) -> Any:
    """``path`` opened in binary mode, if it is a regular file; an ``Error:`` otherwise.

    Opened with ``O_NONBLOCK``, so a FIFO or a device (which ``is_file`` checked moments ago, but
    the path may have been swapped since) is refused at once instead of blocking the agent. A file
    it creates gets ``mode`` less the umask (``os.open``'s own default, 0o777, made files executable)."""
    not_regular = tool_error(f"{path.name!r} {NOT_REGULAR}")
    try:
        descriptor = os.open(path, flags | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), mode)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO opened for writing with no reader
            raise not_regular from None
        raise
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise not_regular
    os.set_blocking(descriptor, True)
    return open(descriptor, "r+b" if flags & (os.O_WRONLY | os.O_RDWR) else "rb")


def replace_with(real: Path, data: bytes, existing: os.stat_result | None) -> None:
    """Make ``data`` the content of ``real`` all at once: it is written to a new temporary file in
    the same folder, flushed to disk, given the permission bits (and, where allowed, the owner) of
    the file it replaces, and renamed over it. A write that fails (a full disk, a quota, a file size
    limit) removes the temporary file and leaves ``real`` exactly as it was; truncating ``real`` and
    writing it again would have lost it. The temporary name is new (``O_EXCL``) and never a symlink
    (``O_NOFOLLOW``), in ``real``'s folder, which ``Workspace.resolve`` checked is inside the root. A new file
    gets mode 0o666 less the umask; an existing one keeps its mode, so a secret stays unreadable to
    others while it is written."""
    temporary = real.parent / f".{secrets.token_hex(8)}.explicit_react.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    descriptor = os.open(temporary, flags, 0o600 if existing is not None else 0o666)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(descriptor, view) :]
            if existing is not None:
                if (existing.st_uid, existing.st_gid) != (os.geteuid(), os.getegid()):
                    with contextlib.suppress(OSError):  # only root may give a file away
                        os.fchown(descriptor, existing.st_uid, existing.st_gid)
                _copy_extended_attributes(real, descriptor)
                os.fchmod(descriptor, stat.S_IMODE(existing.st_mode))  # after fchown, which clears setuid
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        os.replace(temporary, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _sync_folder(real.parent)


_ACCESS_LISTS = ("system.posix_acl_access", "system.nfs4_acl", "system.richacl")
"""Extended attributes that grant or deny access: a copy that loses one may widen who can read."""


def _copy_extended_attributes(real: Path, descriptor: int) -> None:
    """Give the new file the extended attributes of the one it replaces: its POSIX ACL above all
    (the mode's group bits are then the ACL's mask, so a file rewritten without its ACL let its owning
    group read what the ACL denied it), then its other attributes where allowed. An access list that
    cannot be copied refuses the write: access must not widen."""
    if not hasattr(os, "listxattr"):
        return
    try:
        names = os.listxattr(real)
    except OSError:  # a file system without extended attributes
        return
    for name in names:
        try:
            os.setxattr(descriptor, name, os.getxattr(real, name))
        except OSError as error:
            if name in _ACCESS_LISTS:
                raise OSError(
                    error.errno, f"cannot keep the file's access list ({name}): {error.strerror}"
                ) from error


def _sync_folder(folder: Path) -> None:
    """Flush the rename to disk too (best effort: some file systems refuse a folder's fsync)."""
    try:
        descriptor = os.open(
            folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
        )
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(descriptor)
    finally:
        os.close(descriptor)


def nul_ahead(handle: Any, limit: int) -> bool:
    """Whether the rest of the file, up to its first ``limit`` bytes, holds a NUL byte: read_file
    reads only the lines it shows, and a file with a NUL byte past them is binary too. Read in 64 KB
    pieces, and no further once the agent gives up on the call; past ``limit`` (the size edit_file
    edits) a huge log is not read to its end to show 400 lines."""
    given_up = abandoned() or threading.Event()
    while not given_up.is_set() and (room := limit - handle.tell()) > 0:
        piece = handle.read(min(LINE_READ_BYTES, room))
        if not piece:
            return False
        if b"\x00" in piece:
            return True
    return False


def numbered_lines(handle: Any) -> Iterator[tuple[int, bytes]]:
    """``(number, line)`` for each line; a line is cut at ``LINE_READ_BYTES`` (the rest is skipped
    unread into memory), so one 300 MB line costs 64 KB, not 600 MB. The first piece holding a NUL
    byte ends the lines (a binary file: nothing after it is read), and so does the agent giving up on
    the call (``deadline.abandoned``), so a huge file costs no time after the call's timeout."""
    given_up = abandoned() or threading.Event()
    number = 0
    while not given_up.is_set() and (piece := handle.readline(LINE_READ_BYTES)):
        number += 1
        line = piece
        while b"\x00" not in piece and not piece.endswith(b"\n") and not given_up.is_set():
            if not (piece := handle.readline(LINE_READ_BYTES)):
                break
            if b"\x00" in piece:
                line += b"\x00"
        yield number, line
        if b"\x00" in line:
            return


def text_lines(text: str) -> list[str]:
    """The lines of ``text`` as ``numbered_lines`` numbers them for read_file: only ``\n`` ends a
    line, and the ``\r`` of a CRLF end is dropped, as read_file drops it. ``str.splitlines`` also
    breaks at a form feed, U+2028, a lone ``\r`` and more, so grep's line numbers drifted from
    read_file's after such a character."""
    lines = text.split("\n")
    if lines[-1] == "":  # the end of the last line, not a line of its own
        lines.pop()
    return [line.rstrip("\r") for line in lines]


def decoded(data: bytes) -> str:
    """UTF-8 text in which every byte that is not UTF-8 stands as a lone surrogate, so that
    ``encoded`` gives back exactly the same bytes (a Latin-1 ``é`` stays the byte 0xE9)."""
    return data.decode("utf-8", "surrogateescape")


def has_surrogates(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate, which UTF-8 cannot encode."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def matchable(line: str) -> str:
    """``line`` with each surrogate that stands for a byte that is not UTF-8 as U+FFFD."""
    return line.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def encoded(text: str) -> bytes:
    """The bytes ``decoded`` read, given back exactly; an ``Error:`` for a lone surrogate it did not make."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise tool_error("the text holds a lone surrogate (an invalid character); write it as text") from None


_WIDE_MARKS = (
    (codecs.BOM_UTF32_LE, "utf-32"),  # before UTF-16's little-endian mark, which begins it
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
"""The byte order marks of the encodings whose text is full of NUL bytes, and those encodings."""


def file_text(data: bytes) -> str | None:
    """The text of a document file (the knowledge base's), or ``None`` for a binary file, which
    would be indexed as gibberish.

    A file that starts with a UTF-16 or UTF-32 byte order mark (as Windows tools save "Unicode"
    text) is read in that encoding, any other as UTF-8 without a UTF-8 mark: left in the text, the
    mark Notepad writes hid the heading on the first line. Bytes that are not UTF-8 are read as
    Windows-1252 (``_windows_1252``); any other byte not valid in the encoding becomes U+FFFD. Text holding a NUL character is binary: no text file has one."""
    encoding = next((name for mark, name in _WIDE_MARKS if data.startswith(mark)), "utf-8-sig")
    # the utf-16/32 codecs read the mark and drop it
    text = data.decode(encoding, errors="explicit_react.cp1252" if encoding == "utf-8-sig" else "replace")
    return None if "\x00" in text else text


def _windows_1252(error: UnicodeError) -> tuple[str, int]:
    """The bytes UTF-8 could not read, read as Windows-1252 (Latin-1 with curly quotes) instead, as
    Windows editors save text: "Le café" so saved read as "Le caf\ufffd", and "café" was never found.
    Only the bad bytes: a UTF-8 file with one pasted Windows-1252 line keeps the rest as it is."""
    assert isinstance(error, UnicodeDecodeError)
    return error.object[error.start : error.end].decode("cp1252", errors="replace"), error.end


codecs.register_error("explicit_react.cp1252", _windows_1252)
