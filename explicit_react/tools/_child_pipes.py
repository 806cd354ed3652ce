"""The child's pipes, as python_repl reads and writes them: the code written to its stdin
(``write_all``, ``awrite_all``), and stdout and stderr read in daemon threads (``pump_pipe``, and
``pump_in_thread`` for the async path, whose future is done at the pipe's end) into a ``Capture``
that keeps only the head and the tail, so the child never blocks and the agent never fills up; small
reads are let gather for a moment. ``head_text`` and ``tail_text`` turn a capture into the text of
the observation, cut to fit (``[... output cut: N bytes in all]``).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from typing import IO

TRACEBACK_LINES = 12
READ_SIZE = 65536
# The child's output is line-buffered. A read this small means it writes little at a time: the pump
# then lets the output gather in the pipe for a moment rather than waking up (and taking the GIL)
# for every line. A child that writes fast fills larger reads and is never held back.
SMALL_READ, GATHER_SECONDS = 4096, 0.002


class Capture:
    """What one output pipe delivered: the first ``head`` bytes, the last ``tail`` bytes and the
    total; the rest is read and dropped, so the child never blocks and the agent never fills up."""

    def __init__(self, head: int, tail: int) -> None:
        self.head, self.tail, self.total = bytearray(), bytearray(), 0
        self._head_size, self._tail_size = head, tail

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if len(self.head) < self._head_size:
            self.head += chunk[: self._head_size - len(self.head)]
        self.tail = (self.tail + chunk)[-self._tail_size :]


def pump_pipe(stream: IO[bytes] | None, capture: Capture) -> None:
    assert stream is not None
    with contextlib.suppress(OSError, ValueError):
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
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def finish() -> None:
        if not done.done():
            done.set_result(None)

    def pump() -> None:
        try:
            with open(fd, "rb") as stream:
                pump_pipe(stream, capture)
        finally:
            with contextlib.suppress(RuntimeError):  # the event loop is closed: nobody waits any more
                loop.call_soon_threadsafe(finish)

    threading.Thread(target=pump, daemon=True).start()
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


def tail_text(capture: Capture, max_chars: int) -> str:
    """The last lines of the output (a traceback ends with the error), each line cut at its end and
    whole lines dropped from the front to fit ``max_chars``."""
    text = bytes(capture.tail).decode("utf-8", "replace")
    lines = [line[:max_chars] for line in text.rstrip("\n").splitlines()[-TRACEBACK_LINES:]]
    while lines and sum(len(line) + 1 for line in lines) - 1 > max_chars:
        lines.pop(0)
    return "\n".join(lines)
