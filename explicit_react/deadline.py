"""Deadline: the run's wall-clock budget, and running a blocking call so that it cannot outlive it."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor, Future
from functools import partial
from typing import Any, TypeVar

T = TypeVar("T")


_abandoned: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar(
    "explicit_react_abandoned", default=None
)


def abandoned() -> threading.Event | None:
    """Inside a call run in a daemon thread here (``call_with_timeout`` with a timeout,
    ``acall_in_thread``, a ``DaemonExecutor``'s, so a sync ``batch``'s runs): an event set when the
    caller stops waiting for it (its timeout fired, or Ctrl-C). A tool that starts processes watches
    it to stop them at once instead of running on unseen. ``None`` outside such a call."""
    return _abandoned.get()


class GivenUp(threading.Event):
    """The event ``abandoned`` returns for a call run here: besides being waited on or polled, it
    calls what is registered with ``call_when_set`` as it is set (an async call's cancellation)."""

    def __init__(self) -> None:
        super().__init__()
        self._guard = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    def set(self) -> None:
        with self._guard:
            super().set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def call_when_set(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` once the event is set (at once if it is); returns what forgets it."""
        with self._guard:
            if not self.is_set():
                self._callbacks.append(callback)
                return partial(self._forget, callback)
        callback()
        return _nothing

    def _forget(self, callback: Callable[[], None]) -> None:
        with self._guard, contextlib.suppress(ValueError):  # called already
            self._callbacks.remove(callback)


def _nothing() -> None:
    pass


async def cancelled_when_abandoned(awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` as a task that is cancelled as soon as the call this runs in is given up
    (``abandoned``: its timeout fired, the run's time ran out, Ctrl-C).

    For an async call run to completion from sync code in a daemon thread (an async-only tool, an
    ``async def`` model, under ``run``): cancellation reaches it at its next ``await``, as it does
    under ``arun``, so it stops there instead of running on unseen to its side effects, and its
    thread is freed. Only a call that ignores cancellation is left to end on its own."""
    given_up = abandoned()  # in the context this coroutine runs in: the call's own
    if not isinstance(given_up, GivenUp):  # not in a call run here: nothing gives it up
        return await awaitable
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(awaitable)

    def cancel() -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed: the call is over
            loop.call_soon_threadsafe(task.cancel)

    forget = given_up.call_when_set(cancel)
    try:
        return await task
    finally:
        forget()


class DeadlineExceeded(TimeoutError):
    """The run's ``max_seconds`` budget ran out while a call was in progress."""


class CallTimedOut(TimeoutError):
    """A call given a timeout here (``call_with_timeout``, ``acall_with_timeout``) ran past it; a
    ``TimeoutError`` the call raised itself (a socket's, an HTTP client's) is not this one."""


class GivenUpRun(KeyboardInterrupt):
    """Raised in a sync run whose caller gave up on it (``abandoned`` is set: a ``batch`` stopped by
    Ctrl-C, or the timeout of a call the run itself is inside), at its next model or tool call: a
    run nobody waits for calls nothing more. A ``KeyboardInterrupt``, so the run ends as at Ctrl-C."""


class Deadline:
    """A wall-clock budget that starts when it is created; ``seconds=None`` never expires."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.started = time.monotonic()

    def elapsed(self) -> float:
        """Seconds since the deadline started."""
        return time.monotonic() - self.started

    def remaining(self) -> float | None:
        """Seconds left (never negative), or ``None`` for no limit."""
        if self.seconds is None:
            return None
        return max(0.0, self.seconds - self.elapsed())

    def expired(self) -> bool:
        """True once the budget is used up."""
        remaining = self.remaining()
        return remaining is not None and remaining <= 0

    def timeout_for(self, limit: float | None) -> tuple[float | None, bool]:
        """The timeout for one call with its own ``limit``, and whether the deadline is the binding one."""
        remaining = self.remaining()
        if remaining is None:
            return limit, False
        if limit is None or remaining <= limit:
            return remaining, True
        return limit, False


class _Workers:
    """Daemon threads that run blocking calls, reused from one call to the next.

    Daemon threads, so that a call that never returns never keeps the process from exiting (a
    ``ThreadPoolExecutor``'s threads are joined at exit, and ``asyncio.run`` joins its default
    executor's); reused, because starting a thread per call costs more CPU than handing the call to
    a waiting one (``bench/concurrency.py``, its sync tool). No cap: there are as many threads as
    calls in flight, so the caller's concurrency decides (asyncio's default executor ran at most
    ``min(32, cpu + 4)``), and a hung call holds its thread, not a place others wait for. A thread
    with no call for ``idle_seconds`` ends, so the pool shrinks back after a burst.
    """

    def __init__(self, idle_seconds: float) -> None:
        self.idle_seconds = idle_seconds
        self._reset()

    def _reset(self) -> None:
        """An empty pool (also in a forked child, which has none of its parent's threads)."""
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[Callable[[], Callable[[], None]]] = queue.SimpleQueue()
        self._free = 0  # threads waiting for a job, less the jobs queued for them

    def run(self, job: Callable[[], Callable[[], None]]) -> None:
        """Run ``job()`` in a waiting thread, or in a new one if none is free; then the callable it
        returns (which tells the caller), once the thread counts as free again, so that a call the
        caller makes as soon as it hears finds it. Neither may raise."""
        with self._lock:
            if self._free > 0:
                self._free -= 1
                self._jobs.put(job)
                return
        threading.Thread(target=self._work, args=(job,), daemon=True, name="explicit-react-call").start()

    def _work(self, job: Callable[[], Callable[[], None]] | None) -> None:
        jobs, lock = self._jobs, self._lock
        while True:
            if job is not None:
                tell = job()
                with lock:
                    self._free += 1
                tell()
                job = None  # hold nothing of the last call while waiting
                del tell
            try:
                job = jobs.get(timeout=self.idle_seconds)
            except queue.Empty:
                with lock:  # a job queued for this thread as it timed out is still taken
                    try:
                        job = jobs.get_nowait()
                    except queue.Empty:
                        self._free -= 1
                        return


_WORKERS = _Workers(idle_seconds=60.0)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_WORKERS._reset)


def _start_daemon(
    fn: Callable[[], T],
    done: Callable[[T | None, BaseException | None], None],
    context: contextvars.Context | None = None,
) -> threading.Event:
    """Run ``fn()`` in a daemon thread of the shared pool (in ``context``, by default a copy of the
    caller's); ``done(value, error)`` after. Returns the event to set when the caller gives up on
    the call (see ``abandoned``), which is set too when the call this one runs inside is given up."""
    if context is None:
        context = contextvars.copy_context()
    given_up = GivenUp()
    # A call inside a call that is given up is given up with it: a time-limited tool call inside a
    # batch's run when Ctrl-C gives the run up (python_repl then stops its process at once).
    outer = context.run(_abandoned.get)
    unlink = outer.call_when_set(given_up.set) if isinstance(outer, GivenUp) else _nothing
    context.run(_abandoned.set, given_up)

    def target() -> Callable[[], None]:
        try:
            value = context.run(fn)
        except BaseException as exc:
            return partial(done, None, exc)
        finally:
            unlink()
        return partial(done, value, None)

    _WORKERS.run(target)
    return given_up


def call_with_timeout(fn: Callable[[], T], timeout: float | None) -> T:
    """Run ``fn()``; raise ``TimeoutError`` if it has not returned after ``timeout`` seconds.

    With a timeout the call runs in a daemon thread so a hanging call cannot block the caller;
    Python cannot kill a thread, so a call that never returns keeps its thread until it does (a
    daemon thread never keeps the process from exiting).
    """
    return fn() if timeout is None else call_in_daemon(fn, timeout)


def call_in_daemon(fn: Callable[[], T], timeout: float | None = None) -> T:
    """Run ``fn()`` in a daemon thread and wait for it, at most ``timeout`` seconds (``None``: for as
    long as it takes). Ctrl-C reaches the caller at once, and the call is given up then too."""
    outcome: dict[str, Any] = {}
    finished = threading.Event()

    def done(value: Any, error: BaseException | None) -> None:
        outcome["value"], outcome["error"] = value, error
        finished.set()

    given_up = _start_daemon(fn, done)
    try:
        # 1e10 s overflows the wait
        in_time = finished.wait(None if timeout is None else min(max(timeout, 0.0), threading.TIMEOUT_MAX))
    except BaseException:  # Ctrl-C while waiting: the call is given up too
        given_up.set()
        raise
    if not in_time:
        given_up.set()
        raise CallTimedOut(f"no reply after {timeout:.1f} s")
    if outcome["error"] is not None:
        raise outcome["error"]
    return outcome["value"]


class DaemonExecutor(Executor):
    """An ``Executor`` on the shared daemon threads (``_Workers``), at most ``max_workers`` calls at
    once (by default ``ThreadPoolExecutor``'s ``min(32, cpu + 4)``), each in a copy of the context it
    was submitted from (as LangChain's ``ContextThreadPoolExecutor``).

    Used as a context manager it waits, as a ``ThreadPoolExecutor`` does, for the calls submitted
    to end, except when its block is left by Ctrl-C (a ``KeyboardInterrupt``, or any other
    ``BaseException``: a ``GeneratorExit`` too, a generator's reader that stopped reading), or Ctrl-C
    comes while it waits: then it waits for nothing. Calls not started are cancelled, those running
    are given up (``abandoned``) and left to end on their own in their daemon threads, which never
    keep the process from exiting.
    """

    def __init__(self, max_workers: int | None = None) -> None:
        if max_workers is not None and max_workers < 1:
            raise ValueError("max_workers must be greater than 0")
        self._limit = max_workers or min(32, (os.cpu_count() or 1) + 4)
        self._lock = threading.Lock()
        self._waiting: deque[tuple[Future[Any], Callable[[], Any], contextvars.Context]] = deque()
        self._running: dict[Future[Any], threading.Event] = {}
        self._idle = threading.Condition(self._lock)
        self._shut = False

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        call = (future, lambda: fn(*args, **kwargs), contextvars.copy_context())
        with self._lock:
            if self._shut:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._waiting.append(call)
            self._start_next()
        return future

    def _start_next(self) -> None:
        """Start waiting calls while there is room (the lock held)."""
        while self._waiting and len(self._running) < self._limit:
            future, fn, context = self._waiting.popleft()
            if not future.set_running_or_notify_cancel():
                continue

            def done(value: Any, error: BaseException | None, future: Future[Any] = future) -> None:
                if error is not None:
                    future.set_exception(error)
                else:
                    future.set_result(value)
                with self._lock:
                    self._running.pop(future, None)
                    self._start_next()
                    if not self._running and not self._waiting:
                        self._idle.notify_all()

            self._running[future] = _start_daemon(fn, done, context)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shut = True
            if cancel_futures:
                self._cancel_waiting()
        if wait:
            try:
                with self._idle:
                    while self._running or self._waiting:
                        self._idle.wait()
            except BaseException:  # Ctrl-C while waiting
                self.abandon()
                raise

    def abandon(self) -> None:
        """Wait for nothing: cancel the calls not started, give up those running."""
        with self._lock:
            self._shut = True
            self._cancel_waiting()
            running = list(self._running.values())
        for given_up in running:
            given_up.set()

    def _cancel_waiting(self) -> None:
        while self._waiting:
            self._waiting.popleft()[0].cancel()

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        if exc_type is not None and not issubclass(exc_type, Exception):
            self.abandon()
        else:
            self.shutdown(wait=True)


async def acall_in_thread(fn: Callable[[], T], timeout: float | None) -> T:
    """Run the blocking ``fn()`` off the event loop; raise ``TimeoutError`` after ``timeout`` seconds
    (``None``: wait for as long as it takes).

    It runs in a daemon thread of the shared pool (``_Workers``), never in the loop's default
    executor, whose threads ``asyncio.run`` waits for as it ends, Ctrl-C or not: a call that never
    returned kept the process from exiting, and that executor ran at most ``min(32, cpu + 4)``
    calls at once, whatever the batch's concurrency. Cancelled (Ctrl-C cancels ``asyncio.run``'s
    task) or timed out, the call is given up (``abandoned``) and left to end on its own.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():  # cancelled, or timed out, already
            return
        if isinstance(error, StopIteration):  # a future refuses it, and was never settled: a hang
            error = _carried_stop(error)
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def done(value: Any, error: BaseException | None) -> None:
        with contextlib.suppress(RuntimeError):  # the event loop closed while the call ran
            loop.call_soon_threadsafe(settle, value, error)

    given_up = _start_daemon(fn, done)
    try:
        if timeout is None:
            return await future
        return await acall_with_timeout(future, timeout)
    except BaseException:
        given_up.set()
        raise


def _carried_stop(error: StopIteration) -> RuntimeError:
    """A ``StopIteration`` a call raised (a bare ``next()`` on an empty iterator), as the
    ``RuntimeError`` that can cross an ``await`` (LangChain's ``run_in_executor`` does the same)."""
    carried = RuntimeError(f"StopIteration: {error}" if str(error) else "StopIteration")
    carried.__cause__ = error
    return carried


async def acall_with_timeout(awaitable: Awaitable[T], timeout: float | None) -> T:
    """Await ``awaitable``; after ``timeout`` seconds, cancel it and raise ``CallTimedOut`` at once.

    ``asyncio.wait_for`` would wait for the cancelled call to end, and a call that ignores
    cancellation (catches ``CancelledError``, or blocks in C code) would hold the run past its
    timeout and hand back its late result; here it is left to end on its own, as a thread is."""
    if timeout is None:
        return await awaitable
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait({task}, timeout=max(timeout, 0.0))
    except BaseException:  # cancelled while waiting: so is the call
        with contextlib.suppress(BaseException):  # a second cancellation ends the wait early
            await _cancelled(task)
        raise
    if not done:
        await _cancelled(task)
        raise CallTimedOut(f"no reply after {timeout:.1f} s")
    return task.result()


UNWIND_SECONDS = 0.25
"""How long a cancelled call is given to unwind: a LangChain call that is cancelled reports its
error to its callbacks as it unwinds, which takes a few turns of the event loop; waited for, that
report comes before the run's next call and its end, not inside them."""


async def _cancelled(task: asyncio.Future[Any]) -> None:
    """Cancel ``task`` and give it ``UNWIND_SECONDS`` to end; one that ignores the cancellation is
    left to end on its own, its late outcome retrieved by nobody (no "never retrieved" warning).
    A cancellation of the run while it waits is raised."""
    task.cancel()
    task.add_done_callback(_retrieve)
    await asyncio.wait({task}, timeout=UNWIND_SECONDS)


def _retrieve(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()
