"""The callback events of a blocking call that the async driver runs in a worker thread, heard as
under a native async call: an async handler's coroutines run on the caller's event loop, and once
the caller has given the call up its late events are dropped and the runs it left open end with
the error that gave it up.

Why: LangChain's sync callback manager runs an async handler's coroutine on a new event loop of its
own, in the thread that fired the event. A handler that awaits something of the application's loop
(an ``asyncio.Lock``, an ``asyncio.Queue`` feeding a web client, as LangChain's
``AsyncIteratorCallbackHandler``) then hangs or breaks; under ``ainvoke`` of the classic executor it
runs on the caller's loop. The worker thread itself stays (``deadline.acall_in_thread`` says why).

How: the callback managers the blocking call was given (``LoopBridge.around`` finds them among a
``functools.partial``'s arguments: a manager, or a config's ``callbacks``) are swapped for copies
whose async handlers are ``_OnLoop`` proxies, which hand each coroutine to the caller's loop and
wait for it (that loop is free: it is awaiting the thread), so events keep their order. A ``_Gate``
handler, first in the copies, sees each event before the others: it keeps the runs started and not
yet ended, and once the call is over (``close``) stops every later event by raising ``_Dropped``
(a ``BaseException``, which LangChain neither logs nor hands to the other handlers) in the thread
still running the abandoned call. LangChain's own async handlers (the ``astream_events`` stream,
its tracers) are thread-safe and looked up by type, so they are left as they are.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import logging
import threading
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any
from uuid import UUID

from langchain_core.callbacks import (
    AsyncCallbackHandler,
    AsyncCallbackManagerForChainRun,
    AsyncCallbackManagerForLLMRun,
    AsyncCallbackManagerForRetrieverRun,
    AsyncCallbackManagerForToolRun,
    BaseCallbackHandler,
    BaseCallbackManager,
    CallbackManager,
    CallbackManagerForChainRun,
    CallbackManagerForLLMRun,
    CallbackManagerForRetrieverRun,
    CallbackManagerForToolRun,
)

from explicit_react.deadline import GivenUp

logger = logging.getLogger(__name__)

EVENTS = tuple(name for name in dir(BaseCallbackHandler) if name.startswith("on_"))
"""Every callback event a handler can receive."""

_ENDINGS: dict[str, tuple[type[Any], type[Any], str]] = {
    "on_chain_start": (AsyncCallbackManagerForChainRun, CallbackManagerForChainRun, "on_chain_error"),
    "on_tool_start": (AsyncCallbackManagerForToolRun, CallbackManagerForToolRun, "on_tool_error"),
    "on_llm_start": (AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun, "on_llm_error"),
    "on_chat_model_start": (AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun, "on_llm_error"),
    "on_retriever_start": (
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
        "on_retriever_error",
    ),
}
"""For each event that starts a run: its async and its sync run manager, and the event that ends it
with an error."""
_ENDS = frozenset(
    f"on_{kind}_{how}" for kind in ("chain", "tool", "llm", "retriever") for how in ("end", "error")
)


class _Dropped(BaseException):
    """An event of a call its caller has given up: raised by ``_Gate`` in the thread still running it."""


class LoopBridge:
    """The callbacks of one blocking call run from the async driver, bridged to ``loop``; with no
    ``loop`` (a call the sync driver runs in a thread, with a timeout), only gated: its async
    handlers run as LangChain runs them from sync code, and once it is given up its late events
    are dropped and its open runs ended (``close_now``), as under the async driver."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None) -> None:
        self.loop = loop
        self.call: Callable[[], Any] = _nothing
        self._gate = _Gate(self)
        self._handlers: list[BaseCallbackHandler] = []  # as given: those that hear an open run's end
        self._lock = threading.Lock()
        self._open: dict[UUID, tuple[str, dict[str, Any]]] = {}  # run id: its start event, arguments
        self._ending: dict[UUID, tuple[str, dict[str, Any]]] = {}  # runs whose end event is being heard
        self._over = GivenUp()  # set by ``close``: a proxy waiting for a coroutine stops waiting

    @classmethod
    def around(cls, blocking: Callable[[], Any], loop: asyncio.AbstractEventLoop | None) -> LoopBridge | None:
        """A bridge whose ``call`` is ``blocking`` with its callback managers bridged; ``None`` when
        ``blocking`` is not a ``partial`` or no handler hears it (the usual case: nothing is built)."""
        if not isinstance(blocking, partial):
            return None
        arguments = (*blocking.args, *blocking.keywords.values())
        if not any(_heard(_callbacks_in(value)) for value in arguments):
            return None
        bridge = cls(loop)
        args = [bridge._bridged(value) for value in blocking.args]
        keywords = {key: bridge._bridged(value) for key, value in blocking.keywords.items()}
        bridge.call = partial(blocking.func, *args, **keywords)
        return bridge

    def _bridged(self, value: Any) -> Any:
        """``value`` with its callbacks bridged: a callback manager, or a config dict's ``callbacks``."""
        manager = _callbacks_in(value)
        if not _heard(manager):
            return value
        assert manager is not None
        bridged = self._manager(manager)
        return bridged if value is manager else {**value, "callbacks": bridged}

    def _manager(self, manager: BaseCallbackManager) -> CallbackManager:
        proxies: dict[int, BaseCallbackHandler] = {}

        def swap(handlers: list[BaseCallbackHandler]) -> list[BaseCallbackHandler]:
            swapped: list[BaseCallbackHandler] = [self._gate]
            for handler in handlers:
                if (
                    self.loop is not None
                    and isinstance(handler, AsyncCallbackHandler)
                    and _loop_bound(handler)
                ):
                    handler = proxies.setdefault(id(handler), _OnLoop(handler, self))
                swapped.append(handler)
            return swapped

        self._handlers.extend(h for h in manager.handlers if h not in self._handlers)
        return CallbackManager(
            handlers=swap(manager.handlers),
            inheritable_handlers=swap(manager.inheritable_handlers),
            parent_run_id=manager.parent_run_id,
            tags=list(manager.tags),
            inheritable_tags=list(manager.inheritable_tags),
            metadata=dict(manager.metadata),
            inheritable_metadata=dict(manager.inheritable_metadata),
        )

    def admit(self, event: str, kwargs: dict[str, Any]) -> None:
        """Let ``event`` through (keeping the runs open), or raise ``_Dropped`` once the call is over."""
        with self._lock:
            if self._over.is_set():
                raise _Dropped(event)
            # Events of one call are fired one after another, in its thread: a new one means the
            # last has reached every handler, so the runs it ended are over.
            self._ending.clear()
            run_id = kwargs.get("run_id")
            if event in _ENDINGS and run_id is not None:
                self._open[run_id] = (event, kwargs)
            elif event in _ENDS and run_id is not None and run_id in self._open:
                self._ending[run_id] = self._open.pop(run_id)

    async def close(self, error: BaseException | None = None) -> None:
        """The call is over: later events are dropped; with ``error`` (it was given up: cancelled,
        timed out, Ctrl-C), each run it left open ends with ``error``, innermost first, as a native
        async call's runs do when it is cancelled."""
        for ended in self._ended(error, sync=False):
            await ended

    def close_now(self, error: BaseException | None = None) -> None:
        """``close`` for the sync driver: the open runs end through sync run managers."""
        for _ in self._ended(error, sync=True):
            pass

    def _ended(self, error: BaseException | None, *, sync: bool) -> Iterator[Any]:
        """Stop the events; with ``error``, end each run left open (yields what an async manager
        returns, to await)."""
        with self._lock:
            self._over.set()
            # A run whose end event was still being heard when the call was given up did not end
            # for every handler (``_OnLoop`` stops the event there): it ends with the error too.
            still_open = [*self._open.items(), *self._ending.items()]
            self._open, self._ending = {}, {}
        if error is None:
            return
        for run_id, (event, started) in reversed(still_open):
            async_manager, sync_manager, ending = _ENDINGS[event]
            manager = (sync_manager if sync else async_manager)(
                run_id=run_id,
                handlers=self._handlers,
                inheritable_handlers=[],
                parent_run_id=started.get("parent_run_id"),
                tags=started.get("tags"),
            )
            yield getattr(manager, ending)(error)

    def run_on_loop(self, coroutine: Any) -> Any:
        """Run an async handler's ``coroutine`` on the caller's loop, in this thread's context, and
        wait for it from the worker thread. Dropped when the loop is closed (``None``), or when the
        call is over before the coroutine ends (closed, or its task cancelled, and ``_Dropped``
        raised, so no handler after this one hears the event). Called on that loop itself (an awaitable the
        blocking call returned, awaited there), the coroutine is left to LangChain as before."""
        loop = self.loop
        assert loop is not None  # a bridge with no loop makes no ``_OnLoop`` proxies
        try:
            on_the_loop = asyncio.get_running_loop() is loop
        except RuntimeError:
            on_the_loop = False
        if on_the_loop:
            return coroutine
        context = contextvars.copy_context()
        finished = threading.Event()
        started: list[asyncio.Task[Any]] = []
        starting = threading.Lock()  # the task is made, or the worker has stopped waiting: not both

        def start() -> None:
            with starting:
                if finished.is_set():  # the call was over before the loop came to it
                    coroutine.close()
                    return
                task = context.run(loop.create_task, coroutine)
                started.append(task)
            task.add_done_callback(lambda _: finished.set())

        try:
            loop.call_soon_threadsafe(start)
        except RuntimeError:  # the loop is closed
            coroutine.close()
            return None
        forget = self._over.call_when_set(finished.set)
        try:
            finished.wait()
        finally:
            forget()
        with starting:
            task = started[0] if started else None
        if task is None:  # the call is over first: the event is dropped (``start`` closes it)
            if loop.is_closed():
                coroutine.close()  # ``start`` never ran, and never will
            raise _Dropped("the call was given up before this handler heard the event")
        if not task.done():
            with contextlib.suppress(RuntimeError):  # the loop is closed: the task ran its last
                loop.call_soon_threadsafe(task.cancel)
            # The handlers after this one do not hear the event either: the run ends with the
            # error that gave the call up (``close``), not with a late end.
            raise _Dropped("the call was given up while this handler heard the event")
        return None if task.cancelled() else task.result()


def _nothing() -> None:
    pass


def _callbacks_in(value: Any) -> BaseCallbackManager | None:
    """The callback manager ``value`` is, or a config's (a dict's ``callbacks``); else ``None``."""
    if isinstance(value, BaseCallbackManager):
        return value
    if isinstance(value, dict) and isinstance(callbacks := value.get("callbacks"), BaseCallbackManager):
        return callbacks
    return None


def _heard(manager: BaseCallbackManager | None) -> bool:
    return manager is not None and bool(manager.handlers or manager.inheritable_handlers)


def _loop_bound(handler: AsyncCallbackHandler) -> bool:
    """Whether an async handler's coroutines must run on the caller's loop: all but LangChain's own
    (the ``astream_events`` stream, tracers: thread-safe, and found by their type)."""
    return not type(handler).__module__.startswith("langchain_core.")


class _Gate(BaseCallbackHandler):
    """First handler of a bridged manager: every event passes ``LoopBridge.admit`` before the others."""

    def __init__(self, bridge: LoopBridge) -> None:
        self.bridge = bridge


def _gate_event(event: str) -> Callable[..., None]:
    def admit(self: _Gate, *args: Any, **kwargs: Any) -> None:
        self.bridge.admit(event, kwargs)

    admit.__name__ = event
    return admit


class _OnLoop(BaseCallbackHandler):
    """A sync stand-in for an async ``handler``: each event's coroutine runs on the caller's loop."""

    def __init__(self, handler: AsyncCallbackHandler, bridge: LoopBridge) -> None:
        self.handler = handler
        self.bridge = bridge
        self.raise_error = handler.raise_error
        self.run_inline = handler.run_inline


def _on_loop_event(event: str) -> Callable[..., Any]:
    def deliver(self: _OnLoop, *args: Any, **kwargs: Any) -> Any:
        result = getattr(self.handler, event)(*args, **kwargs)
        if not inspect.iscoroutine(result):  # a sync method of an async handler
            return result
        try:
            return self.bridge.run_on_loop(result)
        except NotImplementedError:  # on_chat_model_start: LangChain falls back to on_llm_start
            raise
        except Exception as exc:  # as LangChain's async manager: logged, raised only if asked
            if self.raise_error:
                raise
            logger.warning("Error in %s.%s callback: %r", type(self.handler).__name__, event, exc)
            return None

    deliver.__name__ = event
    return deliver


def _handlers_choice(name: str) -> property:
    return property(lambda self: getattr(self.handler, name))


for _event in EVENTS:
    setattr(_Gate, _event, _gate_event(_event))
    setattr(_OnLoop, _event, _on_loop_event(_event))
for _ignore in (name for name in dir(BaseCallbackHandler) if name.startswith("ignore_")):
    setattr(_OnLoop, _ignore, _handlers_choice(_ignore))  # the events the handler itself ignores
