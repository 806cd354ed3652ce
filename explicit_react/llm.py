"""Turns any model into ``complete(messages, stop) -> Completion``: LangChain chat models and LLMs,
any Runnable, or a plain ``callable(messages) -> str``; with the stop sequence, a client-side cut,
timeouts and retries for transient errors."""

from __future__ import annotations

import copy
import random
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Any, cast

from langchain_core.callbacks import Callbacks
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import DEFAULT_RECURSION_LIMIT

from explicit_react import drivers
from explicit_react.deadline import CallTimedOut, Deadline, DeadlineExceeded
from explicit_react.drivers import Call, Machine, Sleep
from explicit_react.errors import ConfigurationError, ModelCallError, raised_by_callback_handler
from explicit_react.model_kind import (
    async_only,
    has_native_async,
    is_async_callable,
    reads_text,
    takes_stop,
    with_bound_stops,
)
from explicit_react.network import is_transient, unreachable
from explicit_react.parser import OBSERVATION
from explicit_react.prompt import Message
from explicit_react.redaction import error_message
from explicit_react.types import TokenUsage

STOP_SEQUENCE = f"\n{OBSERVATION}:"
# A model that ignores the stop sequence may write its own observation; everything from there on is cut.
# Possessive: spaces and digits split only one way, and backtracking over them is quadratic.
_INVENTED_OBSERVATION = re.compile(
    rf"^[ \t>*_#]*+{OBSERVATION}\s*+\d*+\s*+[:：]", re.IGNORECASE | re.MULTILINE
)


@dataclass(frozen=True)
class Completion:
    """One model reply: its text (cut at an invented observation), tool calls, usage, and time taken."""

    text: str
    usage: TokenUsage = field(default_factory=TokenUsage)
    seconds: float = 0.0
    tool_calls: tuple[dict[str, Any], ...] = ()
    """Native tool calls as ``{"name", "args", "id"}``; ``{"name", "error"}`` when the arguments were unreadable."""


def cut_invented_observation(text: str) -> str:
    """The reply up to a model-written ``Observation:`` line (the first line of a reply is kept)."""
    match = _INVENTED_OBSERVATION.search(text, 1)
    return text[: match.start()].rstrip() if match else text


def message_text(content: Any) -> str:
    """Text of a message's content; a list of parts keeps the text parts (thinking blocks dropped)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type") == "text":
                texts.append(str(part.get("text") or ""))  # a part may hold "text": None
        return "".join(texts)
    return "" if content is None else str(content)


def usage_of(message: Any) -> TokenUsage:
    """The tokens ``message`` (a reply, or an error a model raised) reports in ``usage_metadata``."""
    meta = getattr(message, "usage_metadata", None)
    if not meta:
        return TokenUsage()
    n_in, n_out = _count(meta.get("input_tokens")), _count(meta.get("output_tokens"))
    total = _count(meta.get("total_tokens"))
    return TokenUsage(n_in, n_out, total or n_in + n_out)


def _count(value: Any) -> int:
    """A token count as a client reports it; ``None`` or anything else that is no number: 0 (some
    clients send ``None`` for a count they do not know, and a missing count is no reason to fail)."""
    try:
        return int(value) if value is not None else 0
    except (TypeError, ValueError):
        return 0


def _tool_calls(reply: Any) -> tuple[dict[str, Any], ...]:
    calls = [
        {"name": c["name"], "args": c.get("args") or {}, "id": c.get("id")}
        for c in getattr(reply, "tool_calls", None) or []
    ]
    calls += [
        {"name": c.get("name") or "", "error": c.get("error") or "invalid"}
        for c in getattr(reply, "invalid_tool_calls", None) or []
    ]
    return tuple(calls)


def to_langchain(messages: Sequence[Message]) -> list[BaseMessage]:
    """Role/content dicts as LangChain messages. A system message with the same text as a recent one
    is the same object (as a ``ChatPromptTemplate`` gives the same object for a fixed message at
    every call): the system prompt is the same at every turn of every run."""
    out: list[BaseMessage] = []
    for m in messages:
        role, content = m["role"], m["content"]
        if role == "system":
            out.append(
                _system_message(content) if isinstance(content, str) else SystemMessage(content=content)
            )
        elif role == "assistant":
            out.append(AIMessage(content=content, tool_calls=m.get("tool_calls", [])))
        elif role == "tool":
            out.append(ToolMessage(content=content, tool_call_id=m["tool_call_id"]))
        else:
            out.append(HumanMessage(content=content))
    return out


@lru_cache(maxsize=32)
def _system_message(content: str) -> SystemMessage:
    return SystemMessage(content=content)


class ModelAdapter:
    """Calls one model in a uniform way: ``complete(messages) -> Completion``.

    ``timeout`` bounds each call, ``max_retries`` retries transient errors with exponential backoff
    (``retry_backoff`` seconds, doubled each time, with jitter). The stop sequence is passed to
    models that take one; the reply is always cut client-side at an invented ``Observation:`` too.
    """

    def __init__(
        self,
        llm: Any,
        *,
        stop: Sequence[str] = (STOP_SEQUENCE,),
        timeout: float | None = None,
        max_retries: int = 2,
        retry_backoff: float = 1.0,
    ) -> None:
        if not (isinstance(llm, Runnable) or callable(llm)):
            raise ConfigurationError(
                f"llm must be a LangChain model, a Runnable or a callable(messages) -> str, "
                f"not {type(llm).__name__}"
            )
        if max_retries < 0:
            raise ConfigurationError("max_retries must not be negative")
        self.stop = list(stop)
        self.llm = llm
        self.timeout = timeout
        self.max_retries = max_retries
        self.retry_backoff = retry_backoff

    @property
    def llm(self) -> Any:
        """The model called."""
        return self._llm

    @llm.setter
    def llm(self, llm: Any) -> None:
        self._llm = llm
        # What every call needs to know about the model (beneath LangChain's wrappers: model_kind),
        # found here once rather than at each call.
        self._runnable = runnable = isinstance(llm, Runnable)
        self._native = has_native_async(llm) if runnable else is_async_callable(llm)
        self._async_only = runnable and async_only(llm)
        self._is_llm = runnable and reads_text(llm)
        # No stop keyword at all when there is none to send: a stop of None replaces a bound one.
        stops = with_bound_stops(self.stop, llm) if runnable and self.stop and takes_stop(llm) else []
        self._stop_kwargs = {"stop": stops} if stops else {}

    def with_llm(self, llm: Any) -> ModelAdapter:
        """The same settings around another model (for example the same model with another grammar)."""
        other = copy.copy(self)
        other.llm = llm
        return other

    # One call, no retries -----------------------------------------------------------------
    def _request(
        self,
        messages: Sequence[Message],
        callbacks: Callbacks,
        timeout: float | None,
        run: RunnableConfig | None,
    ) -> Call:
        """One call to the model as a driver request: ``invoke`` and, where the model has a native
        async form, ``ainvoke`` (a sync-only model is run in a daemon thread by the async driver).
        An async-only model's ``ainvoke`` serves the sync driver too, which runs it to completion."""
        llm = self._llm
        if not self._runnable:
            plain = [dict(m) for m in messages]
            return Call(partial(llm, plain), partial(llm, plain) if self._native else None, timeout)
        prompt: Any = _as_prompt(messages) if self._is_llm else to_langchain(messages)
        config, kwargs = call_config(run, callbacks), self._stop_kwargs
        native = partial(llm.ainvoke, prompt, config, **kwargs) if self._native else None
        if self._async_only:
            return Call(partial(llm.ainvoke, prompt, config, **kwargs), native, timeout)
        if self._native:
            return Call(partial(_invoke_or_await, llm, prompt, config, kwargs), native, timeout)
        return Call(partial(llm.invoke, prompt, config, **kwargs), native, timeout)

    def _completion(self, reply: Any, started: float) -> Completion:
        content = reply.content if isinstance(reply, BaseMessage) else reply
        text = cut_invented_observation(message_text(content))
        for stop in self.stop:  # a model that ignored the stop sequence
            text = text.split(stop, 1)[0]
        return Completion(text, usage_of(reply), time.monotonic() - started, _tool_calls(reply))

    # With timeouts and retries ------------------------------------------------------------
    def _delay(self, attempt: int) -> float:
        return self.retry_backoff * (2**attempt) * (0.5 + random.random())

    def calls(
        self,
        messages: Sequence[Message],
        callbacks: Callbacks = None,
        deadline: Deadline | None = None,
        config: RunnableConfig | None = None,
    ) -> Machine[Completion]:
        """The model's reply to ``messages`` as a step machine: each attempt within its timeout,
        transient errors retried after a backoff; raises ``ModelCallError`` or ``DeadlineExceeded``.
        ``config``: the run's, whose values a model call sees (``call_config``)."""
        for attempt in range(self.max_retries + 1):
            limit, binding = deadline.timeout_for(self.timeout) if deadline else (self.timeout, False)
            started = time.monotonic()
            try:
                reply = yield self._request(messages, callbacks, limit, config)
                return self._completion(reply, started)
            except Exception as exc:
                if raised_by_callback_handler(exc):
                    raise
                if binding and isinstance(exc, CallTimedOut):
                    raise DeadlineExceeded("time ran out while waiting for the model") from exc
                delay = self._retry_delay(exc, attempt, deadline)
            yield Sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def complete(
        self,
        messages: Sequence[Message],
        *,
        callbacks: Callbacks = None,
        deadline: Deadline | None = None,
        config: RunnableConfig | None = None,
    ) -> Completion:
        """The model's reply to ``messages``; raises ``ModelCallError`` or ``DeadlineExceeded``."""
        return drivers.run(self.calls(messages, callbacks, deadline, config))

    async def acomplete(
        self,
        messages: Sequence[Message],
        *,
        callbacks: Callbacks = None,
        deadline: Deadline | None = None,
        config: RunnableConfig | None = None,
    ) -> Completion:
        """Async ``complete``."""
        return await drivers.arun(self.calls(messages, callbacks, deadline, config))

    def _retry_delay(self, exc: Exception, attempt: int, deadline: Deadline | None) -> float:
        """The delay before the next attempt; raises ``ModelCallError`` when there is none to make.

        The delay is drawn once, so the wait that is checked against the deadline is the wait slept.
        """
        delay = self._delay(attempt)
        remaining = deadline.remaining() if deadline is not None else None
        out_of_time = remaining is not None and remaining <= delay
        if is_transient(exc) and attempt < self.max_retries and not out_of_time:
            return delay
        tries = f" after {attempt + 1} attempts" if attempt else ""
        offline = " cannot reach the model's server (no network?):" if unreachable(exc) else ""
        kind = (
            "timed out" if isinstance(exc, CallTimedOut) else f"failed{tries}:{offline} {type(exc).__name__}"
        )
        detail = error_message(exc)  # redacted: an HTTP client's error may repeat the request's key
        failure = ModelCallError(f"the model call {kind}" + (f": {detail}" if detail else ""))
        if (paid := getattr(exc, "usage_metadata", None)) is not None:  # two_phase's thought: tokens paid for
            setattr(failure, "usage_metadata", paid)  # noqa: B010
        # Not "from exc": a traceback prints the cause's unredacted text. It stays the __context__,
        # which "from None" keeps out of every traceback.
        raise failure from None


def call_config(run: RunnableConfig | None, callbacks: Callbacks) -> RunnableConfig:
    """The config of one model call: ``callbacks``, and what LangChain passes from a run's config to
    its child runs (``patch_config``): configurable values, tags, metadata and recursion limit. The
    run's own name, id and callbacks are the agent run's, not the call's; its ``max_concurrency``
    bounds the batch the run is one of (``abatch``), not one model call."""
    if not run:
        return RunnableConfig(callbacks=callbacks)
    passed = {  # empty and default values left out: each costs LangChain work at every call
        key: value
        for key, value in run.items()
        if value
        and key not in _RUN_OWN
        and not (key == "recursion_limit" and value == DEFAULT_RECURSION_LIMIT)
    }
    return cast(RunnableConfig, {**passed, "callbacks": callbacks})


_RUN_OWN = frozenset({"callbacks", "run_name", "run_id", "max_concurrency"})


def _invoke_or_await(llm: Any, prompt: Any, config: RunnableConfig, kwargs: dict[str, Any]) -> Any:
    """``llm.invoke``; for a model whose sync call is not implemented (an async-only client, known
    only by the ``NotImplementedError`` its sync method raises itself), its ``ainvoke``'s awaitable,
    which the sync driver runs to completion within the call's timeout. Its callbacks hear of the
    failed sync call too. A ``NotImplementedError`` from deeper down (a feature the client lacks)
    is the call's error: the request is not made twice."""
    try:
        return llm.invoke(prompt, config, **kwargs)
    except NotImplementedError as error:
        trace = error.__traceback__
        while trace is not None and trace.tb_next is not None:
            trace = trace.tb_next
        if trace is None or trace.tb_frame.f_code.co_name not in _SYNC_BODIES:
            raise
        return llm.ainvoke(prompt, config, **kwargs)


_SYNC_BODIES = frozenset({"_generate", "_stream", "_call"})
"""A chat model's or LLM's own sync methods: one that raises ``NotImplementedError`` is a stub."""


def _as_prompt(messages: Sequence[Message]) -> str:
    return "\n\n".join(m["content"] for m in messages)
