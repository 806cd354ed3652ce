"""Deadline: the run's wall-clock budget, and running a blocking call so that it cannot outlive it."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


_abandoned: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar(
    "explicit_react_abandoned", default=None
)


def abandoned() -> threading.Event | None:
    """Inside a call run by ``call_with_timeout``: an event set when the caller stops waiting for it
    (its timeout fired). A tool that starts processes watches it to stop them at once instead of
    running on unseen. ``None`` outside such a call."""
    return _abandoned.get()


class DeadlineExceeded(TimeoutError):
    """The run's ``max_seconds`` budget ran out while a call was in progress."""


class CallTimedOut(TimeoutError):
    """A call given a timeout here (``call_with_timeout``, ``acall_with_timeout``) ran past it; a
    ``TimeoutError`` the call raised itself (a socket's, an HTTP client's) is not this one."""


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


def _start_daemon(
    fn: Callable[[], T], done: Callable[[T | None, BaseException | None], None]
) -> threading.Event:
    """Run ``fn()`` in a new daemon thread (in a copy of the caller's context); ``done(value, error)``
    after. Returns the event to set when the caller gives up on the call (see ``abandoned``)."""
    context = contextvars.copy_context()
    given_up = threading.Event()
    context.run(_abandoned.set, given_up)

    def target() -> None:
        try:
            value = context.run(fn)
        except BaseException as exc:
            done(None, exc)
        else:
            done(value, None)

    threading.Thread(target=target, daemon=True, name="explicit-react-call").start()
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


async def acall_in_thread(fn: Callable[[], T], timeout: float | None) -> T:
    """Run the blocking ``fn()`` off the event loop; raise ``TimeoutError`` after ``timeout`` seconds.

    With a timeout it runs in a daemon thread of its own (the loop's default executor would keep a
    hung call's thread, and with it the process, alive at exit); without one, in the default executor.
    """
    if timeout is None:
        return await asyncio.to_thread(fn)
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():  # timed out and cancelled already
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def done(value: Any, error: BaseException | None) -> None:
        with contextlib.suppress(RuntimeError):  # the event loop closed while the call ran
            loop.call_soon_threadsafe(settle, value, error)

    given_up = _start_daemon(fn, done)
    try:
        return await acall_with_timeout(future, timeout)
    except BaseException:
        given_up.set()
        raise


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
        task.cancel()
        raise
    if not done:
        task.cancel()
        task.add_done_callback(_retrieve)  # its late outcome is nobody's: no "never retrieved" warning
        raise CallTimedOut(f"no reply after {timeout:.1f} s")
    return task.result()


def _retrieve(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()
