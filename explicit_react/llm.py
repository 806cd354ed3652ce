"""Turns any model into ``complete(messages, stop) -> Completion``: LangChain chat models and LLMs,
any Runnable, or a plain ``callable(messages) -> str``; with the stop sequence, a client-side cut,
timeouts and retries for transient errors."""

from __future__ import annotations

import copy
import inspect
import random
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.language_models import BaseChatModel, BaseLLM
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableBinding, RunnableConfig, RunnableLambda

from explicit_react import drivers
from explicit_react.deadline import CallTimedOut, Deadline, DeadlineExceeded
from explicit_react.drivers import Call, Machine, Sleep
from explicit_react.errors import ConfigurationError, ModelCallError, raised_by_callback_handler
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

_TRANSIENT_NAMES = re.compile(
    r"RateLimit|ResourceExhausted|TooManyRequests|ServiceUnavailable|Unavailable|Timeout|TimedOut|"
    r"Connect|Overloaded|InternalServer|ServerError|DeadlineExceeded|Aborted|RemoteProtocol",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Completion:
    """One model reply: its text (cut at an invented observation), tool calls, usage, and time taken."""

    text: str
    usage: TokenUsage = field(default_factory=TokenUsage)
    seconds: float = 0.0
    tool_calls: tuple[dict[str, Any], ...] = ()
    """Native tool calls as ``{"name", "args", "id"}``; ``{"name", "error"}`` when the arguments were unreadable."""


def is_transient(exc: BaseException) -> bool:
    """True for errors worth retrying: rate limits, timeouts, dropped connections, 5xx."""
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    status = getattr(exc, "status_code", None) or getattr(exc, "code", None)
    if isinstance(status, int) and (status == 429 or 500 <= status < 600):
        return True
    return any(_TRANSIENT_NAMES.search(cls.__name__) for cls in type(exc).__mro__)


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
                texts.append(str(part.get("text", "")))
        return "".join(texts)
    return "" if content is None else str(content)


def usage_of(message: Any) -> TokenUsage:
    """The tokens ``message`` (a reply, or an error a model raised) reports in ``usage_metadata``."""
    meta = getattr(message, "usage_metadata", None)
    if not meta:
        return TokenUsage()
    n_in, n_out = int(meta.get("input_tokens", 0)), int(meta.get("output_tokens", 0))
    return TokenUsage(n_in, n_out, int(meta.get("total_tokens", n_in + n_out)))


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
        self.llm = llm
        self.stop = list(stop)
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
        # What every call needs to know about the model, found here once rather than at each call.
        self._runnable = isinstance(llm, Runnable)
        self._native = has_native_async(llm) if self._runnable else _is_async_callable(llm)
        self._is_llm = isinstance(llm, BaseLLM)
        self._takes_stop = self._is_llm or isinstance(llm, BaseChatModel)

    def with_llm(self, llm: Any) -> ModelAdapter:
        """The same settings around another model (for example the same model with another grammar)."""
        other = copy.copy(self)
        other.llm = llm
        return other

    # One call, no retries -----------------------------------------------------------------
    def _request(self, messages: Sequence[Message], callbacks: Callbacks, timeout: float | None) -> Call:
        """One call to the model as a driver request: ``invoke`` and, where the model has a native
        async form, ``ainvoke`` (a sync-only model is run in a daemon thread by the async driver)."""
        llm = self._llm
        if not self._runnable:
            plain = [dict(m) for m in messages]
            return Call(partial(llm, plain), partial(llm, plain) if self._native else None, timeout)
        prompt: Any = _as_prompt(messages) if self._is_llm else to_langchain(messages)
        config = RunnableConfig(callbacks=callbacks)
        kwargs = {"stop": self.stop or None} if self._takes_stop else {}
        native = partial(llm.ainvoke, prompt, config, **kwargs) if self._native else None
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
        self, messages: Sequence[Message], callbacks: Callbacks = None, deadline: Deadline | None = None
    ) -> Machine[Completion]:
        """The model's reply to ``messages`` as a step machine: each attempt within its timeout,
        transient errors retried after a backoff; raises ``ModelCallError`` or ``DeadlineExceeded``."""
        for attempt in range(self.max_retries + 1):
            limit, binding = deadline.timeout_for(self.timeout) if deadline else (self.timeout, False)
            started = time.monotonic()
            try:
                reply = yield self._request(messages, callbacks, limit)
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
        self, messages: Sequence[Message], *, callbacks: Callbacks = None, deadline: Deadline | None = None
    ) -> Completion:
        """The model's reply to ``messages``; raises ``ModelCallError`` or ``DeadlineExceeded``."""
        return drivers.run(self.calls(messages, callbacks, deadline))

    async def acomplete(
        self, messages: Sequence[Message], *, callbacks: Callbacks = None, deadline: Deadline | None = None
    ) -> Completion:
        """Async ``complete``."""
        return await drivers.arun(self.calls(messages, callbacks, deadline))

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
        kind = "timed out" if isinstance(exc, CallTimedOut) else f"failed{tries}: {type(exc).__name__}"
        detail = error_message(exc)  # redacted: an HTTP client's error may repeat the request's key
        raise ModelCallError(f"the model call {kind}" + (f": {detail}" if detail else "")) from exc


# Constrained decoding for llama.cpp models -------------------------------------------------------
# A small local model often names a tool that does not exist, in the style of the prompt's example
# ("battery_catalog" for "knowledge_search"). llama.cpp can restrict sampling to a grammar (GBNF), so
# for those models each turn is held to the ReAct format with the Action one of the real tool names.


def _gbnf_literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


_GRAMMAR_RULES = (
    'final ::= "Final Answer: " text',
    'text ::= line ("\\n" line)*',
    "line ::= [^\\n]+",
)


KNOWS_ANSWER = "I now know the final answer"
"""How the prompt's format has the model say it is done; under the grammar a Final Answer must follow.
Qwen2.5 1.5B wrote it and then repeated its last calculation until loop detection stopped the run."""


def _class_char(char: str) -> str:
    return "\\" + char if char in "\\]^-[" else char


def _not_prefixed(name: str, prefix: str) -> list[str]:
    """GBNF rules ``name`` for one line (1 to ~400 characters) that does not begin with ``prefix``."""
    rules = []
    for i, char in enumerate(prefix):
        options = [f"[^{_class_char(char)}\\n] {name}-rest"]
        if i + 1 < len(prefix):
            options.append(f"{_gbnf_literal(char)} {name}-{i + 1}")
        if i:
            options.append('""')
        rules.append(f"{name}-{i} ::= " + " | ".join(options))
    rules.append(f"{name}-rest ::= [^\\n]{{0,399}}")
    return [r.replace(f"{name}-0", name) for r in rules]


def _thought_rules(*, knows: bool) -> list[str]:
    """A Thought is one line and at most about 400 characters: an endless one used up the reply's
    token budget before the Final Answer (Qwen2.5 1.5B, at a limit). With ``knows``, a Thought that
    opens with ``KNOWS_ANSWER`` is the rule ``knows`` (followed by the answer), any other ``thought``."""
    if not knows:
        return ['thought ::= "Thought: " [^\\n]{1,400} "\\n"+']
    return [
        'thought ::= "Thought: " free "\\n"+',
        f'knows ::= "Thought: " {_gbnf_literal(KNOWS_ANSWER)} [^\\n]{{0,400}} "\\n"+',
        *_not_prefixed("free", KNOWS_ANSWER),
    ]


def react_grammar(tool_names: Sequence[str]) -> str:
    """A GBNF grammar for one ReAct turn: a one-line Thought, then an Action on one of ``tool_names``
    with its Action Input, or a Final Answer. Inputs and answers may run over several lines.
    A Thought that opens with the format's "I now know the final answer" must end in the Final Answer.
    With no tool names, only a Final Answer."""
    if not tool_names:
        return final_answer_grammar()
    tools = " | ".join(_gbnf_literal(name) for name in tool_names)
    return "\n".join(
        [
            "root ::= knows final | thought (action | final)",
            'action ::= "Action: " tool "\\n" "Action Input: " text',
            f"tool ::= {tools}",
            *_thought_rules(knows=True),
            *_GRAMMAR_RULES,
        ]
    )


def final_answer_grammar() -> str:
    """A GBNF grammar for the tool-free call at a limit: a one-line Thought, then a Final Answer."""
    return "\n".join(["root ::= thought final", *_thought_rules(knows=False), *_GRAMMAR_RULES])


def takes_grammar(llm: Any) -> bool:
    """True for a llama.cpp chat model: one whose ``client`` is a ``llama_cpp.Llama`` (``ChatLlama``, ``ChatLlamaCpp``)."""
    llama_cpp = sys.modules.get("llama_cpp")
    return (
        llama_cpp is not None
        and isinstance(llm, BaseChatModel)
        and isinstance(getattr(llm, "client", None), llama_cpp.Llama)
    )


def with_grammar(llm: Any, grammar: str, stop: Sequence[str]) -> Runnable[Any, Any]:
    """``llm`` bound to ``grammar`` (GBNF text) and the stop sequence, for a model where ``takes_grammar``."""
    from llama_cpp import LlamaGrammar

    return llm.bind(grammar=LlamaGrammar.from_string(grammar, verbose=False), stop=list(stop) or None)


def has_native_async(llm: Any) -> bool:
    """True unless ``llm`` (a runnable, through its bindings) is a chat model or LLM that implements
    only the sync API, or a sync-only ``RunnableLambda``: LangChain would run those in the event
    loop's default executor, whose threads a hung call keeps alive at exit."""
    while isinstance(llm, RunnableBinding):
        llm = llm.bound
    kind = type(llm)
    if isinstance(llm, BaseChatModel):
        return kind._agenerate is not BaseChatModel._agenerate or kind._astream is not BaseChatModel._astream
    if isinstance(llm, BaseLLM):
        from langchain_core.language_models.llms import LLM

        overrides = [kind._agenerate is not BaseLLM._agenerate and kind._agenerate is not LLM._agenerate]
        overrides += [kind._astream is not BaseLLM._astream]
        if issubclass(kind, LLM):
            overrides.append(kind._acall is not LLM._acall)
        return any(overrides)
    if isinstance(llm, RunnableLambda):
        return hasattr(llm, "afunc")
    return True


def _is_async_callable(fn: Any) -> bool:
    call = type(fn).__call__ if not inspect.isroutine(fn) else None
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


def _as_prompt(messages: Sequence[Message]) -> str:
    return "\n\n".join(m["content"] for m in messages)
