"""The child's pipes, as python_repl reads and writes them: the code written to its stdin
(``write_all``, ``awrite_all``), and stdout and stderr read in daemon threads (``pump_pipe``, and
``pump_in_thread`` for the async path, whose future is done at the pipe's end) into a ``Capture``
that keeps only the head and the tail, so the child never blocks and the agent never fills up; small
reads are let gather for a moment. ``head_text``, ``tail_text`` and ``last_line_text`` turn a
capture into the text of the observation, cut to fit (``[... output cut: N bytes in all]``).
``reported_exit`` reads the exit status the runner leaves in its working folder as it exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

TRACEBACK_LINES = 12
READ_SIZE = 65536
# The child's output is line-buffered. A read this small means it writes little at a time: the pump
# then lets the output gather in the pipe for a moment rather than waking up (and taking the GIL)
# for every line. A child that writes fast fills larger reads and is never held back.
SMALL_READ, GATHER_SECONDS = 4096, 0.002


class Capture:
    """What one output pipe delivered: the first ``head`` bytes, the last ``tail`` bytes and the
    total; the rest is read and dropped, so the child never blocks and the agent never fills up.

    With ``line_head``, also the first ``line_head`` bytes of the last line that is not blank
    (``last_line``): a traceback ends with the line naming the exception, and when its message is
    longer than ``tail`` the tail no longer holds that line's start, only ``, 10638, 10639, ...``."""

    def __init__(self, head: int, tail: int, line_head: int = 0) -> None:
        self.head, self.tail, self.total = bytearray(), bytearray(), 0
        self._head_size, self._tail_size, self._line_size = head, tail, line_head
        self._line = bytearray()  # the start of the line being written
        self._ended_line = b""  # the start of the last line ended that is not blank

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if len(self.head) < self._head_size:
            self.head += chunk[: self._head_size - len(self.head)]
        self.tail = (self.tail + chunk)[-self._tail_size :]
        if self._line_size:
            self._follow_lines(chunk)

    @property
    def last_line(self) -> bytes:
        """The start of the last line that is not blank: the one being written, unless it is blank."""
        return bytes(self._line) if self._line.strip() else self._ended_line

    def _follow_lines(self, chunk: bytes) -> None:
        """Keep the starts of the lines ``chunk`` ends and begins, never more than ``line_head``
        bytes of one: a few searches of the chunk, whatever its number of lines."""
        size, last_end = self._line_size, chunk.rfind(b"\n")
        if last_end == -1:  # the line being written goes on
            self._line += chunk[: size - len(self._line)]
            return
        first_end = chunk.find(b"\n")
        self._end_line(self._line + chunk[: min(first_end, size)])
        # The lines that start and end in this chunk, without the blank ones at their end.
        whole_lines = chunk[first_end + 1 : last_end].rstrip()
        if whole_lines:
            start = whole_lines.rfind(b"\n") + 1
            self._end_line(whole_lines[start : start + size])
        self._line = bytearray(chunk[last_end + 1 : last_end + 1 + size])

    def _end_line(self, start: bytes | bytearray) -> None:
        if start.strip():
            self._ended_line = bytes(start[: self._line_size])


def pump_pipe(stream: IO[bytes] | None, capture: Capture) -> None:
    """Read ``stream`` into ``capture`` to its end, then close it (the thread that reads it owns it:
    left to the garbage collector, each call's pipes were a ``ResourceWarning``)."""
    assert stream is not None
    with stream, contextlib.suppress(OSError, ValueError):
        while chunk := stream.read1(READ_SIZE):  # type: ignore[attr-defined]
            capture.add(chunk)
            if len(chunk) < SMALL_READ:
                time.sleep(GATHER_SECONDS)


def write_all(stream: IO[bytes] | None, data: bytes) -> None:
    assert stream is not None
    with contextlib.suppress(OSError, ValueError):
        stream.write(data)
        stream.close()


def pump_in_thread(fd: int, capture: Capture) -> asyncio.Future[None]:
    """Read the pipe ``fd`` into ``capture`` (and close it) in a thread; the future is done at its end."""

    return in_thread(lambda: pump_pipe(open(fd, "rb"), capture), daemon=True)  # pump_pipe closes it


def in_thread(fn: Callable[[], None], *, daemon: bool) -> asyncio.Future[None]:
    """Run ``fn`` in a thread of its own; the future (of the running loop) is done when it ends.
    A thread that is not a ``daemon`` is waited for by the process as it exits."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def finish() -> None:
        if not done.done():
            done.set_result(None)

    def run() -> None:
        try:
            fn()
        finally:
            with contextlib.suppress(RuntimeError):  # the event loop is closed: nobody waits any more
                loop.call_soon_threadsafe(finish)

    threading.Thread(target=run, daemon=daemon).start()
    return done


async def awrite_all(stream: asyncio.StreamWriter, data: bytes) -> None:
    with contextlib.suppress(OSError, ConnectionError):
        stream.write(data)
        await stream.drain()
        stream.close()


def head_text(capture: Capture, max_chars: int) -> str:
    """The start of the output, with a marker (counted in ``max_chars``) when it was cut."""
    text = bytes(capture.head).decode("utf-8", "replace")
    if len(text) <= max_chars and capture.total <= len(capture.head):
        return text.rstrip("\n")
    marker = f"\n[... output cut: {capture.total:,} bytes in all]"
    return text[: max(0, max_chars - len(marker))] + marker if max_chars > len(marker) else ""


def last_line_text(capture: Capture, max_chars: int) -> str:
    """The start of the last line that is not blank, stripped and cut to ``max_chars``."""
    return capture.last_line.decode("utf-8", "replace").strip()[:max_chars]


def reported_exit(path: Path) -> int | None:
    """The exit status the runner wrote to the file ``path`` in the child's working folder as it
    exited, or ``None`` when it wrote none (a signal killed it, or the code took the file's place).

    The folder belongs to the code, so the file is opened as nothing else: not through a symlink,
    not a FIFO (whose open would block), and only a short status in it counts."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        data = os.read(descriptor, 16) if stat.S_ISREG(os.fstat(descriptor).st_mode) else b""
    except OSError:
        data = b""
    finally:
        os.close(descriptor)
    status = data.strip()
    return int(status) if status.isdigit() and len(status) <= 3 else None


def tail_text(capture: Capture, max_chars: int) -> str:
    """The last lines of the output (a traceback ends with the error), each line cut at its end and
    whole lines dropped from the front to fit ``max_chars``."""
    text = bytes(capture.tail).decode("utf-8", "replace")
    lines = [line[:max_chars] for line in text.rstrip("\n").splitlines()[-TRACEBACK_LINES:]]
    while lines and sum(len(line) + 1 for line in lines) - 1 > max_chars:
        lines.pop(0)
    return "\n".join(lines)
