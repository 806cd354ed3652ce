"""Runs one model object's generations one at a time on a thread of its own, handing a streamed
reply's chunks through a queue.

Why: llama.cpp runs one generation at a time per model object, and ``ChatLlama`` used to hold its
lock across each ``yield`` of a streamed reply. LangChain runs a sync model's stream in the event
loop's default executor one ``next()`` at a time, each a job of its own: with the lock held between
them, the other calls' jobs waited on it in every executor thread, and the next chunk's job found no
thread free. Seven concurrent ``ainvoke`` calls (``streaming=True``) on one model, or one ``astream``
and six ``ainvoke``, hung forever. Here a reply is produced whole, by one job on the model's own
thread (which alone takes the lock there), and a caller waiting for its turn waits on a queue or an
asyncio future, holding no pool thread.

The thread is a daemon, started when a job arrives and ended when none is left: a model object
left alone holds no thread, and a generation that never ends does not keep the interpreter from
exiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["Producer", "TurnTaker", "astream_in_turn", "in_turn", "stream_in_turn"]

T = TypeVar("T")
Producer = Callable[[Callable[[Any], None], threading.Event], None]
"""A job that hands each item it makes to its first argument, and stops early once its
second (the consumer went away) is set."""
_END = object()


class TurnTaker:
    """A queue of jobs run one at a time, in order, on a daemon thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: deque[tuple[Callable[[], Any], Future[Any]]] = deque()
        self._running = False

    def submit(self, job: Callable[[], T]) -> Future[T]:
        """Queue ``job``; its future has its result or exception. A future cancelled before its turn
        skips the job (an ``ainvoke`` whose caller timed out while waiting)."""
        future: Future[T] = Future()
        with self._lock:
            self._jobs.append((job, future))
            if not self._running:
                self._running = True
                threading.Thread(target=self._run, name="explicit_react-llama", daemon=True).start()
        return future

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._jobs:
                    self._running = False
                    return
                job, future = self._jobs.popleft()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = job()
            except BaseException as error:  # KeyboardInterrupt too: the caller gets it, the thread goes on
                future.set_exception(error)
            else:
                future.set_result(result)


def stream_in_turn(turns: TurnTaker, produce: Producer) -> Iterator[Any]:
    """The items ``produce`` makes, as it makes them; it runs as one job of ``turns``. Closing the
    iterator early tells it to stop; its exception is raised here after the items it made."""
    items: queue.SimpleQueue[Any] = queue.SimpleQueue()
    stop = threading.Event()
    future = turns.submit(lambda: _produced(produce, items.put, stop))
    try:
        while (item := items.get()) is not _END:
            yield item
        future.result()
    finally:
        stop.set()
        future.cancel()


async def astream_in_turn(turns: TurnTaker, produce: Producer) -> AsyncIterator[Any]:
    """``stream_in_turn`` for a coroutine: waiting for an item holds no thread."""
    loop = asyncio.get_running_loop()
    items: asyncio.Queue[Any] = asyncio.Queue()
    stop = threading.Event()

    def put(item: Any) -> None:
        try:
            loop.call_soon_threadsafe(items.put_nowait, item)
        except RuntimeError:  # the loop is closed: nobody reads on
            stop.set()

    future = turns.submit(lambda: _produced(produce, put, stop))
    try:
        while (item := await items.get()) is not _END:
            yield item
        await asyncio.wrap_future(future)
    finally:
        stop.set()
        future.cancel()


async def in_turn(turns: TurnTaker, job: Callable[[threading.Event], T]) -> T:
    """``job(stopped)``'s result, run in its turn. Cancelling the wait before its turn skips it;
    cancelling it later sets ``stopped``, for the job to end early."""
    stopped = threading.Event()
    try:
        return await asyncio.wrap_future(turns.submit(lambda: job(stopped)))
    finally:
        stopped.set()


def _produced(produce: Producer, put: Callable[[Any], None], stop: threading.Event) -> None:
    try:
        produce(put, stop)
    finally:
        with contextlib.suppress(Exception):
            put(_END)
