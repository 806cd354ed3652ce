"""Carries out what a step machine asks for, synchronously (``drive``) or on an event loop (``adrive``).

A step machine is a generator that holds the decisions of a run and never waits: when it needs the
outside world it yields a request and receives the result at the ``yield`` (or has the error raised
there). ``Call`` runs a blocking or async call within a timeout, ``Sleep`` waits, ``Notify`` tells
callback managers and listeners about an event; anything else the machine yields is an output for
the caller (a ``Step``, a result). These two drivers are the only code that waits, so a run behaves
the same from ``run`` and from ``arun``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from explicit_react.callback_bridge import LoopBridge
from explicit_react.deadline import (
    GivenUpRun,
    abandoned,
    acall_in_thread,
    acall_with_timeout,
    call_in_daemon,
    call_with_timeout,
    cancelled_when_abandoned,
)
from explicit_react.types import current_run

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Call:
    """Run ``blocking()``, or await ``awaitable()`` when driven async, within ``timeout`` seconds.

    With no ``awaitable`` (the call has no native async form), the async driver runs ``blocking()``
    in a daemon thread, bridging the callback managers among its arguments when it is a
    ``functools.partial`` (``callback_bridge``). A timeout raises ``TimeoutError`` at the machine's
    ``yield``."""

    blocking: Callable[[], Any]
    awaitable: Callable[[], Awaitable[Any]] | None = None
    timeout: float | None = None


@dataclass(frozen=True, slots=True)
class Sleep:
    """Wait ``seconds`` (a retry's backoff)."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Notify:
    """Call ``method(*args, **kwargs)`` on each of ``targets`` that has it (callback managers, listeners),
    with ``types.current_run`` set to ``run_id`` (a run's listeners read their run's id there)."""

    targets: Sequence[Any]
    method: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    run_id: str | None = None


def heard(manager: Any) -> bool:
    """Whether a LangChain run manager's events reach anyone: ``False`` for ``None`` and for a manager
    with no handlers (LangChain drops its events at once), so a machine need not build an event for it."""
    return manager is not None and bool(getattr(manager, "handlers", True))


Machine = Generator[Any, Any, T]
"""A step machine: yields requests (``Call``, ``Sleep``, ``Notify``) and outputs, returns ``T``."""

_REQUESTS = (Call, Sleep, Notify)


_closing: contextvars.ContextVar[list[Awaitable[Any]] | None] = contextvars.ContextVar(
    "explicit_react_closing", default=None
)


def notify_closed(notify: Notify) -> None:
    """For a machine being closed (a stream its caller stopped reading), which can yield nothing
    more: carry ``notify`` out now. A sync target is called at once; an async one's awaitable is
    left for ``adrive`` to await while it closes (``aclose`` may await), or dropped unawaited when
    no async driver is closing the machine."""
    with _in_run(notify):
        pending_calls = _notify(notify)
    for pending in pending_calls:
        if (closing := _closing.get()) is not None:
            closing.append(pending)
        elif inspect.iscoroutine(pending):
            pending.close()


class _Progress:
    """A machine being driven (the part both drivers share): iterate it for the machine's next
    request or output; set ``reply`` or ``error`` (an exception raised while the request was carried
    out, which goes to the machine at its ``yield``) before the next one."""

    def __init__(self, machine: Machine[Any]) -> None:
        self.machine = machine
        self.reply: Any = None
        self.error: BaseException | None = None
        self.value: Any = None

    def __iter__(self) -> Iterator[Any]:
        machine = self.machine
        try:
            while True:
                reply, error, self.reply, self.error = self.reply, self.error, None, None
                yield machine.send(reply) if error is None else machine.throw(error)
        except StopIteration as done:
            self.value = done.value

    def __enter__(self) -> _Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.machine.close()

    def close(self) -> list[Awaitable[Any]]:
        """Close the machine; what its closing left to await (``notify_closed``)."""
        token = _closing.set([])
        try:
            self.machine.close()
            return _closing.get() or []
        finally:
            _closing.reset(token)


def drive(machine: Machine[T]) -> Generator[Any, None, T]:
    """Carry out ``machine``'s requests here and now; yield its outputs; return what it returns.

    Run where a caller may give up on it (a sync ``batch``'s thread, a call with a timeout: see
    ``deadline.abandoned``), a given-up run makes no more calls and waits no more: ``GivenUpRun``
    goes to the machine instead, and its callbacks still hear that it ended."""
    given_up = abandoned()
    with _Progress(machine) as progress:
        for request in progress:
            if not isinstance(request, _REQUESTS):
                yield request
            elif given_up is not None and given_up.is_set() and not isinstance(request, Notify):
                progress.error = GivenUpRun("the caller gave up on this run")
            else:
                _perform(request, progress)
    return progress.value


async def adrive(machine: Machine[Any]) -> AsyncGenerator[Any, None]:
    """Carry out ``machine``'s requests on the running event loop; yield its outputs."""
    progress = _Progress(machine)
    try:
        for request in progress:
            if isinstance(request, _REQUESTS):
                await _aperform(request, progress)
            else:
                yield request
    finally:
        for pending in progress.close():  # a closed stream's last callbacks
            await pending


def _perform(request: Call | Sleep | Notify, progress: _Progress) -> None:
    """Carry out ``request``; its result, or what it raised (a KeyboardInterrupt too: callbacks hear
    of it), goes to the machine."""
    try:
        if isinstance(request, Call):
            progress.reply = _call_blocking(request)
        elif isinstance(request, Sleep):
            time.sleep(request.seconds)
        else:
            with _in_run(request):
                for pending in _notify(request):  # an async listener's method (sync managers return None)
                    run_to_completion(pending)
    except BaseException as exc:
        progress.error = exc


def _call_blocking(request: Call) -> Any:
    """A call from sync code. With a timeout it runs in a thread, which may be given up (timed out,
    Ctrl-C): then its callbacks are gated as the async driver gates them (``callback_bridge``), so
    its runs end with the error that gave it up, and its late events, after the run has moved on,
    are dropped."""
    bridge = None if request.timeout is None else LoopBridge.around(request.blocking, None)
    if bridge is None:  # the usual case: no timeout, or no handler hears the call
        return call_with_timeout(partial(_completed, request.blocking), request.timeout)
    try:
        value = call_with_timeout(partial(_completed, bridge.call), request.timeout)
    except BaseException as exc:
        bridge.close_now(exc)
        raise
    bridge.close_now()
    return value


def run_to_completion(awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` from sync code: with ``asyncio.run``, on a thread of its own (in this
    thread's context) when this thread already runs an event loop, where ``asyncio.run`` refuses
    (a sync ``run`` called from a notebook cell or from async code)."""

    async def awaited() -> T:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(awaited())
    # A daemon thread, not a pool: Ctrl-C reaches the caller at once, and a call that never ends does
    # not keep the process from exiting (a pool's shutdown waited for it).
    return call_in_daemon(lambda: asyncio.run(awaited()))


async def _aperform(request: Call | Sleep | Notify, progress: _Progress) -> None:
    """Async ``_perform`` (a cancellation too goes to the machine)."""
    try:
        if isinstance(request, Call):
            if request.awaitable is None:
                progress.reply = await _acall_blocking(request)
            elif request.timeout is None:  # the usual case, awaited here: every layer costs at each resume
                progress.reply = await request.awaitable()
            else:
                progress.reply = await acall_with_timeout(request.awaitable(), request.timeout)
        elif isinstance(request, Sleep):
            await asyncio.sleep(request.seconds)
        else:
            with _in_run(request):
                for pending in _notify(request):
                    await pending
    except BaseException as exc:
        progress.error = exc


def run(machine: Machine[T]) -> T:
    """Drive a machine to its end, synchronously, dropping its outputs; what it returns."""
    outputs = drive(machine)
    while True:
        try:
            next(outputs)
        except StopIteration as done:
            return done.value


async def arun(machine: Machine[T]) -> T:
    """Async ``run``: a coroutine, not ``adrive``'s async generator, which every resumption of an
    awaited call would pass through (measurably slower, ``bench/concurrency.py``); outputs are dropped."""
    with _Progress(machine) as progress:
        for request in progress:
            if isinstance(request, _REQUESTS):
                await _aperform(request, progress)
    return progress.value


def _completed(blocking: Callable[[], Any]) -> Any:
    """``blocking()``, from sync code; an awaitable it returns (a plain callable that is an ``async
    def`` model) is run to completion here, within the call's timeout, and cancelled if the call is
    given up (``_acall_blocking`` awaits it on the caller's loop instead)."""
    value = blocking()
    if inspect.isawaitable(value):
        return run_to_completion(cancelled_when_abandoned(value))
    return value


async def _acall_blocking(request: Call) -> Any:
    """A call with no native async form, in a thread (see ``deadline.acall_in_thread``), whose
    callbacks are heard as a native async call's: its async handlers run on this loop, and once
    it is over (given up too) it fires nothing more (see ``callback_bridge``)."""
    bridge = LoopBridge.around(request.blocking, asyncio.get_running_loop())
    if bridge is None:  # the usual case: no handler hears the call
        return await _acall_in_thread(request.blocking, request.timeout)
    try:
        value = await _acall_in_thread(bridge.call, request.timeout)
    except BaseException as exc:
        await bridge.close(exc)
        raise
    await bridge.close()
    return value


async def _acall_in_thread(blocking: Callable[[], Any], timeout: float | None) -> Any:
    started = time.monotonic()
    value = await acall_in_thread(blocking, timeout)
    if inspect.isawaitable(value):  # a plain callable that returned a coroutine
        left = None if timeout is None else timeout - (time.monotonic() - started)
        value = await acall_with_timeout(value, left)
    return value


def _notify(request: Notify) -> list[Awaitable[Any]]:
    """Call the handlers; the awaitables async callback managers return (to await, in order)."""
    pending = []
    for target in request.targets:
        handler = getattr(target, request.method, None)
        if handler is not None and inspect.isawaitable(result := handler(*request.args, **request.kwargs)):
            pending.append(result)
    return pending


@contextlib.contextmanager
def _in_run(notify: Notify) -> Iterator[None]:
    """``current_run`` set to ``notify.run_id`` (when it has one) while its handlers are called and
    awaited. The driver sets it, not the machine: a generator has no context of its own, so a value
    it set would reach whoever resumes it next (another run's stream, a copied context)."""
    if notify.run_id is None:
        yield
        return
    token = current_run.set(notify.run_id)
    try:
        yield
    finally:
        current_run.reset(token)
