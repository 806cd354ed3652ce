"""Deadline: the run's wall-clock budget, and running a blocking call so that it cannot outlive it."""

from __future__ import annotations

import asyncio
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


def call_with_timeout(fn: Callable[[], T], timeout: float | None) -> T:
    """Run ``fn()``; raise ``TimeoutError`` if it has not returned after ``timeout`` seconds.

    With a timeout the call runs in a daemon thread so a hanging call cannot block the caller;
    Python cannot kill a thread, so a call that never returns keeps its thread until it does.
    """
    if timeout is None:
        return fn()
    outcome: dict[str, Any] = {}
    finished, given_up = threading.Event(), threading.Event()
    context = contextvars.copy_context()
    context.run(_abandoned.set, given_up)

    def target() -> None:
        try:
            outcome["value"] = context.run(fn)
        except BaseException as exc:
            outcome["error"] = exc
        finally:
            finished.set()

    threading.Thread(target=target, daemon=True, name="explicit-react-call").start()
    if not finished.wait(max(timeout, 0.0)):
        given_up.set()
        raise TimeoutError(f"no reply after {timeout:.1f} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


async def acall_with_timeout(awaitable: Awaitable[T], timeout: float | None) -> T:
    """Await ``awaitable``; cancel it and raise ``TimeoutError`` after ``timeout`` seconds."""
    if timeout is None:
        return await awaitable
    try:
        return await asyncio.wait_for(awaitable, max(timeout, 0.0))
    except asyncio.TimeoutError:
        raise TimeoutError(f"no reply after {timeout:.1f} s") from None
