"""Runs one action: finds the tool, fits the input to its schema (``tool_input``), runs it within a
timeout, and turns every failure into an observation that starts with ``Error:``."""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from langchain_core.callbacks import BaseCallbackManager, CallbackManager, Callbacks
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, Tool, tool
from pydantic import ValidationError

from explicit_react import drivers
from explicit_react.deadline import CallTimedOut, Deadline, DeadlineExceeded
from explicit_react.drivers import Call, Machine
from explicit_react.errors import ConfigurationError, raised_by_callback_handler
from explicit_react.network import is_transient
from explicit_react.observations import NO_OUTPUT, encodable, observation_text
from explicit_react.prompt import ToolSpec
from explicit_react.redaction import current_secrets, error_message, redact
from explicit_react.tool_input import (
    UNPARSED,
    agent_tool_input,
    fit_input,
    takes_text,
    text_only,
    too_deep_text,
)
from explicit_react.types import ToolInput

__all__ = [  # agent_tool_input, too_deep_text (tool_input) and the observation helpers importable here as before
    "NO_OUTPUT",
    "ToolExecutor",
    "ToolOutcome",
    "agent_tool_input",
    "as_tool",
    "encodable",
    "normalize_name",
    "observation_text",
    "too_deep_text",
    "tool_spec",
]


@dataclass(frozen=True)
class ToolOutcome:
    """What running one action produced. ``error`` is ``None`` or the kind of failure."""

    observation: str
    output: Any = None
    error: str | None = None
    seconds: float = 0.0
    return_direct: bool = False
    retryable: bool = False
    """The tool raised a passing failure (``network.is_transient``: a dropped connection, a timeout
    of its own, a rate limit, a 5xx): the same call may be made once more (``policy.record_call``)."""

    @property
    def ran(self) -> bool:
        """Whether the tool's function was entered: not for an unknown tool, nor for input refused
        before the call (not JSON) or by the tool's schema (pydantic rejects it before the function
        runs; a ``ValidationError`` the function raises itself reads the same, and counts the same)."""
        return self.error not in ("invalid_input", "unknown_tool")


def as_tool(obj: BaseTool | Callable[..., Any]) -> BaseTool:
    """A LangChain tool for ``obj``: a ``BaseTool`` as it is, a plain function through ``tool``."""
    if isinstance(obj, BaseTool):
        return obj
    if callable(obj):
        if not (getattr(obj, "__doc__", None) or "").strip():
            raise ConfigurationError(
                f"function {getattr(obj, '__name__', obj)!r} needs a docstring: it becomes the tool "
                "description the model reads"
            )
        return tool(obj)
    raise ConfigurationError(f"a tool must be a LangChain BaseTool or a function, not {type(obj).__name__}")


def tool_spec(t: BaseTool) -> ToolSpec:
    """The prompt's view of a LangChain tool."""
    if isinstance(t, Tool) and t.args_schema is None:  # its tool_call_schema is Tool._run's signature
        return ToolSpec(t.name, t.description, t.args, tuple(t.args))
    schema = t.tool_call_schema
    if isinstance(schema, dict):
        props, required = schema.get("properties", {}), schema.get("required", [])
    else:
        json_schema = schema.model_json_schema()  # type: ignore[union-attr]
        props, required = json_schema.get("properties", {}), json_schema.get("required", [])
    return ToolSpec(t.name, t.description, props, tuple(required))


def _schema_args(t: BaseTool) -> frozenset[str]:
    """Every argument of ``t``'s input schema, those hidden from the model (``tool_call_schema``) too."""
    schema = t.args_schema
    if isinstance(schema, dict):
        return frozenset(schema.get("properties", {}))
    return frozenset(getattr(schema, "model_fields", ()))


def normalize_name(name: str) -> str:
    """Tool names compared loosely: case, spaces, dashes and underscores ignored."""
    return "".join(ch for ch in name.lower() if ch.isalnum())


class ToolExecutor:
    """Runs actions against a fixed set of tools; never raises for anything the model did."""

    def __init__(self, tools: Sequence[BaseTool], *, suggest: Collection[str] | None = None) -> None:
        """``suggest``: names of the tools the model may use, the only ones a failed call's observation
        may name (with what each does); ``None``: no such list, so an unknown name is answered with
        every tool and a failed call suggests none. An empty list names no tool at all."""
        self.tools = {t.name: t for t in tools}
        self.suggest = frozenset(suggest) if suggest is not None else None
        if len(self.tools) != len(tools):
            names = [t.name for t in tools]
            twice = sorted({n for n in names if names.count(n) > 1})
            raise ConfigurationError(
                f"tool names must be unique: {', '.join(map(repr, twice))} is given more than once "
                "(rename one with tool.name = ...)"
            )
        self.specs = {t.name: tool_spec(t) for t in tools}
        # Arguments the application sets (LangChain's InjectedToolArg): hidden from the model, so
        # never taken from its input (a model could run get_order as another user_id).
        self._hidden = {t.name: _schema_args(t) - frozenset(self.specs[t.name].args) for t in tools}
        self._loose = {normalize_name(name): name for name in self.tools}

    def resolve(self, name: str) -> str | None:
        """The real tool name the model meant (exact, or equal ignoring case and separators)."""
        if name in self.tools:
            return name
        return self._loose.get(normalize_name(name))

    def unknown_tool_observation(self, name: str) -> str:
        """The observation for a tool name that matches no tool: the real names (those in ``suggest``,
        when it is given) and the closest one."""
        names = sorted(n for n in self.tools if self.suggest is None or n in self.suggest)
        if not names:
            return f"Error: there is no tool named {name!r}. There are no tools: answer without them."
        close = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
        if close:
            return f"Error: there is no tool named {name!r}. Did you mean {close[0]!r}? Available tools: {', '.join(names)}."
        # No name is close: say what each tool does, so the model can map its idea to a real tool
        # (Qwen2.5 1.5B asked for 'battery_catalog' and 'employee_database' when it had knowledge_search).
        return (
            f"Error: there is no tool named {name!r}. Use one of these tools instead:\n{self._listing(names)}"
        )

    def _listing(self, names: Sequence[str]) -> str:
        return "\n".join(f"- {n}: {_first_sentence(self.tools[n].description)}" for n in names[:12])

    def _suggest(self, outcome: ToolOutcome, name: str) -> ToolOutcome:
        """``outcome`` with the other tools in ``suggest`` listed when the call failed.

        Measured with Qwen2.5 1.5B under the llama.cpp grammar: a model that sent words to the
        calculator repeated the call after "find each value first, with another tool"; told what the
        other tools do, it can pick the one that looks values up (docs/benchmarks.md)."""
        if not outcome.error:
            return outcome
        others = [n for n in sorted(self.suggest or ()) if n != name and n in self.tools]
        if not others:
            return outcome
        observation = f"{outcome.observation}\nOther tools:\n{self._listing(others)}"
        return dataclasses.replace(outcome, observation=observation)

    def fit_input(self, name: str, tool_input: ToolInput) -> str | dict[str, Any]:
        """The model's input shaped for tool ``name`` (see ``tool_input.fit_input``)."""
        return fit_input(self.tools[name], self.specs[name], tool_input)

    def _prepare(self, name: str, tool_input: ToolInput) -> tuple[BaseTool | None, Any, ToolOutcome | None]:
        real = self.resolve(name)
        if real is None:
            return None, None, ToolOutcome(self.unknown_tool_observation(name), error="unknown_tool")
        fitted = self.fit_input(real, tool_input)
        if isinstance(fitted, dict) and UNPARSED in fitted:
            if _handles_validation_errors(self.tools[real]):  # the tool's own text, as in the classic
                return self.tools[real], fitted[UNPARSED], None
            return (
                None,
                None,
                self._suggest(
                    ToolOutcome(
                        self._schema_hint(real, "Action Input is not a JSON object"), error="invalid_input"
                    ),
                    real,
                ),
            )
        if isinstance(fitted, dict) and (hidden := self._hidden[real]):
            fitted = {key: value for key, value in fitted.items() if key not in hidden}
        return self.tools[real], fitted, None

    def _schema_hint(self, name: str, problem: str) -> str:
        return f"Error: invalid input for tool {name!r}: {problem}. Expected Action Input: {self._expected(name)}"

    def _expected(self, name: str) -> str:
        """What Action Input tool ``name`` takes, as the prompt shows it: JSON of its arguments, plain
        text for one text argument, ``{"n": integer}`` for one argument of another kind, nothing
        for none. Never "plain text" for an input that text does not fill."""
        spec = self.specs[name]
        if spec.takes_json:
            return spec.describe().split("Action Input: ", 1)[-1]
        if not spec.args:
            return "nothing (the tool takes no input)"
        (arg, schema), *_ = spec.args.items()
        if takes_text(self.tools[name]) or text_only(schema):
            return "plain text"
        return f"{{{spec.field(arg)}}}"

    def _finish(self, t: BaseTool, output: Any, started: float) -> ToolOutcome:
        if isinstance(output, ToolMessage):  # a content_and_artifact tool: keep both (see _call_id)
            output = (output.content, output.artifact)
        # Redacted: a tool's own error text (a handled ToolException) may repeat a request, key and all.
        observation = redact(observation_text(tool_content(t, output)), current_secrets())
        error = "tool_error" if _reported_failure(observation) else None
        outcome = ToolOutcome(
            observation, output, error, time.monotonic() - started, t.return_direct and not error
        )
        return self._suggest(outcome, t.name)

    def _failure(self, t: BaseTool, exc: BaseException, started: float, timeout: float | None) -> ToolOutcome:
        failed = self._failed(t, exc, started, timeout)  # an error's text may name a file that is not UTF-8
        failed = dataclasses.replace(failed, observation=encodable(failed.observation))
        return self._suggest(failed, t.name)

    def _failed(self, t: BaseTool, exc: BaseException, started: float, timeout: float | None) -> ToolOutcome:
        seconds = time.monotonic() - started
        if isinstance(exc, ValidationError):
            hidden = self._hidden.get(t.name, frozenset())
            problems = "; ".join(
                dict.fromkeys(
                    "a value the application gives is missing (not one for you to give)"
                    if e["loc"] and e["loc"][0] in hidden
                    else f"argument {'.'.join(map(str, e['loc'])) or '(input)'!r}: {e['msg']}"
                    for e in exc.errors()
                )
            )
            return ToolOutcome(self._schema_hint(t.name, problems), error="invalid_input", seconds=seconds)
        if isinstance(exc, CallTimedOut):
            return ToolOutcome(
                f"Error: tool {t.name!r} timed out after {timeout or 0:.1f} s. Try a simpler input or another tool.",
                error="tool_timeout",
                seconds=seconds,
            )
        message = error_message(exc) or type(exc).__name__  # redacted: an API client's error may hold its key
        observation = f"Error: tool {t.name!r} failed: {type(exc).__name__}: {message}"
        if retryable := is_transient(exc):
            observation += "\nThis failure may pass: the same call may be tried once more."
        return ToolOutcome(observation, error="tool_error", seconds=seconds, retryable=retryable)

    def calls(
        self,
        name: str,
        tool_input: ToolInput,
        *,
        callbacks: Callbacks = None,
        timeout: float | None = None,
        deadline: Deadline | None = None,
        run_kwargs: Mapping[str, Any] | None = None,
        artifact: bool = True,
    ) -> Machine[ToolOutcome]:
        """Run tool ``name`` as a step machine; the outcome's observation says what happened.

        ``run_kwargs`` go to the tool's ``run``/``arun`` (the compat executor's ``verbose``, ``color``
        and the agent's ``observation_prefix``/``llm_prefix``, which reach ``on_tool_end``).
        ``artifact=False`` calls a ``content_and_artifact`` tool as the classic does, with no call id:
        its callbacks and verbose output see the content, and ``output`` is the content alone.
        Raises only ``DeadlineExceeded``, when the run's own deadline (not ``timeout``) cut the call.
        """
        try:
            t, fitted, refused = self._prepare(name, tool_input)
        except (ValueError, RecursionError) as exc:  # input too deep or too broken to fit
            return ToolOutcome(
                f"Error: invalid input for tool {name!r}: {type(exc).__name__}", error="invalid_input"
            )
        if refused is not None or t is None:
            return refused  # type: ignore[return-value]
        limit, binding = deadline.timeout_for(timeout) if deadline else (timeout, False)
        started = time.monotonic()
        extra = {"tool_call_id": _call_id(t) if artifact else None, **(run_kwargs or {})}
        native = partial(t.arun, fitted, callbacks=callbacks, **extra) if _has_native_async(t) else None
        run_as = _own_callbacks_passed(t, callbacks) if t.callbacks else (t, callbacks)
        try:
            output = yield Call(partial(_run_sync, *run_as, fitted, extra), native, limit)
        except CallTimedOut as exc:
            if binding:
                raise DeadlineExceeded(f"time ran out while tool {t.name!r} was running") from exc
            return self._failure(t, exc, started, limit)
        except (Exception, SystemExit, asyncio.CancelledError) as exc:
            # A careless library's sys.exit() is the tool's failure, and so is a CancelledError from
            # inside the tool (a pool dropped its request), unless the run itself is being cancelled.
            run_cancelled = isinstance(exc, asyncio.CancelledError) and _run_cancelled()
            if run_cancelled or raised_by_callback_handler(exc):
                raise
            return self._failure(t, exc, started, limit)
        return self._finish(t, output, started)

    def execute(
        self,
        name: str,
        tool_input: ToolInput,
        *,
        callbacks: Callbacks = None,
        timeout: float | None = None,
        deadline: Deadline | None = None,
    ) -> ToolOutcome:
        """Run tool ``name`` (see ``calls``); never raises for anything the model did."""
        return drivers.run(
            self.calls(name, tool_input, callbacks=callbacks, timeout=timeout, deadline=deadline)
        )

    async def aexecute(
        self,
        name: str,
        tool_input: ToolInput,
        *,
        callbacks: Callbacks = None,
        timeout: float | None = None,
        deadline: Deadline | None = None,
    ) -> ToolOutcome:
        """Async ``execute``: async tools are awaited, sync tools run in a worker thread."""
        machine = self.calls(name, tool_input, callbacks=callbacks, timeout=timeout, deadline=deadline)
        return await drivers.arun(machine)


def _handles_validation_errors(t: BaseTool) -> bool:
    """Whether ``t`` answers arguments its schema refuses with its own observation
    (``handle_validation_error``): text that is no arguments then goes to the tool as the classic
    sends it, so that LangChain's handling gives that observation and the tool's callbacks fire.
    Only for a pydantic schema (a class): LangChain refuses text for a JSON-schema tool (a dict)
    before validating."""
    return bool(t.handle_validation_error) and isinstance(t.args_schema, type)


def _has_native_async(t: BaseTool) -> bool:
    """True when ``t`` has an async implementation of its own; a sync-only tool's ``arun`` would use
    the event loop's default executor, whose threads a hung call keeps alive at exit."""
    if isinstance(t, (StructuredTool, Tool)):
        return t.coroutine is not None
    return type(t)._arun is not BaseTool._arun


def _own_callbacks_passed(t: BaseTool, callbacks: Callbacks) -> tuple[BaseTool, BaseCallbackManager]:
    """A tool's own ``callbacks=`` handlers, moved into the callbacks its call is given (as handlers
    of that call alone, by the ``CallbackManager.configure`` LangChain runs inside the call), and a
    copy of the tool without them: the same handlers hear the same events, but now the drivers see
    them, so a sync tool's async handlers run on the caller's event loop under ``arun``, and a call
    given up ends their runs (``callback_bridge``). Left on the tool, they were configured inside the
    call, out of reach: an async handler awaiting the application's loop hung there."""
    manager = CallbackManager.configure(inheritable_callbacks=callbacks, local_callbacks=t.callbacks)
    return t.model_copy(update={"callbacks": None}), manager


def _run_sync(t: BaseTool, callbacks: Callbacks, tool_input: Any, extra: dict[str, Any]) -> Any:
    """``t.run``; for an async-only tool ``t.arun``'s coroutine, which the sync driver runs to
    completion (cancelled when the call is given up), so ``run`` and ``arun`` give the same step.
    A ``BaseTool`` must define ``_run``: one that works only async says so by the
    ``NotImplementedError`` its own ``_run`` raises (as an async-only model does,
    ``llm._invoke_or_await``), its callbacks hearing of it. One from deeper down (a feature the tool
    lacks) is the call's error: the tool is not run twice. ``extra``: call id, display arguments."""
    if isinstance(t, (StructuredTool, Tool)) and t.func is None and t.coroutine is not None:
        return t.arun(tool_input, callbacks=callbacks, **extra)
    try:
        return t.run(tool_input, callbacks=callbacks, **extra)
    except NotImplementedError as error:
        if not (_has_native_async(t) and _raised_in_run(error)):
            raise
        return t.arun(tool_input, callbacks=callbacks, **extra)


def _raised_in_run(error: BaseException) -> bool:
    """Whether ``error`` was raised by a tool's own ``_run`` (the innermost frame of its traceback)."""
    trace = error.__traceback__
    while trace is not None and trace.tb_next is not None:
        trace = trace.tb_next
    return trace is not None and trace.tb_frame.f_code.co_name == "_run"


def _reported_failure(observation: str) -> bool:
    """Whether a tool's output is a failure it reported: text that starts with ``Error:``, what the
    built-in tools and LangChain's ``handle_tool_error`` return, and what many tools written by hand
    return for a failure ("Error: order not found"). A raise is known from the call (``_failed``).
    Only the whole prefix counts: "Error rate for checkout: 0.37%" is a result."""
    return observation.startswith("Error:")


def _run_cancelled() -> bool:
    """Whether the task driving the run has a cancel request pending (``Task.cancelling``; on 3.10,
    which cannot tell, always). Never under the sync driver, which gives a call up by a timeout or
    Ctrl-C: a ``CancelledError`` there is the tool's own."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running event loop: the sync driver
        return False
    cancelling = getattr(task, "cancelling", None)
    return task is not None and (cancelling is None or cancelling() > 0)


def _has_artifact(t: BaseTool) -> bool:
    return t.response_format == "content_and_artifact"


def tool_content(t: BaseTool, output: Any) -> Any:
    """A tool's return value as ``BaseTool.run`` gives it with no tool call id: the content alone of a
    ``content_and_artifact`` tool's ``(content, artifact)`` (``ToolOutcome.output`` keeps both)."""
    return output[0] if _has_artifact(t) and isinstance(output, tuple) else output


def _call_id(t: BaseTool) -> str | None:
    """A call id for a ``content_and_artifact`` tool, else ``None``: LangChain returns such a tool's
    artifact (in a ``ToolMessage``) only when the call has an id, and drops it otherwise."""
    return f"explicit_react_{t.name}" if _has_artifact(t) else None


def _first_sentence(text: str, limit: int = 100) -> str:
    sentence = " ".join(text.split()).split(". ", 1)[0].rstrip(".")
    return sentence[: limit - 1].rstrip() + "…" if len(sentence) > limit else sentence + "."
