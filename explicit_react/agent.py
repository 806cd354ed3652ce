"""ExplicitReActAgent: a LangChain ``Runnable`` around the Think → Act → Observe loop.

The loop's decisions live in ``loop.ReActLoop`` (a step machine, free of I/O); this module wires the
constructor's options into its parts (prompt, transport, model adapters, tool executor, budget,
listeners; ``wiring`` builds the larger ones) and hands the loop to a driver: ``drivers.drive`` for
``run``/``stream``/``invoke``, ``drivers.adrive`` for their async forms.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Collection, Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Literal

from langchain_core.agents import AgentFinish
from langchain_core.runnables import Runnable, RunnableConfig, ensure_config
from langchain_core.runnables.config import (
    get_async_callback_manager_for_config,
    get_callback_manager_for_config,
)
from langchain_core.tools import BaseTool

from explicit_react import chain_run, drivers, options, threaded, wiring
from explicit_react.context import StreamedInput, read_input, result_to_output
from explicit_react.drivers import Machine, Notify, heard
from explicit_react.loop import ReActLoop, RunListener
from explicit_react.policy import Budget
from explicit_react.prompt import ReActPrompt
from explicit_react.run_state import Acted
from explicit_react.scratchpad import ScratchpadLimits
from explicit_react.transport import Transport, Turn
from explicit_react.types import AgentResult, Step

AgentInput = str | Mapping[str, Any]

__all__ = ["AgentInput", "ExplicitReActAgent", "RunListener", "read_input", "result_to_output"]


class ExplicitReActAgent(ReActLoop, Runnable[AgentInput, dict[str, Any]]):
    """A ReAct agent whose every part is explicit: prompt, parser, scratchpad, executor, policy.

    ``llm``: a LangChain chat model or LLM, any Runnable, or ``callable(messages) -> str``.
    ``tools``: LangChain ``BaseTool``s or plain functions; ``None`` gives web search and Python.
    Limits (``None`` = none): ``max_iterations`` turns, ``max_tool_calls``, ``max_seconds`` of wall
    clock, ``max_tokens`` in total. ``allowed_tools`` denies every other tool. ``on_limit``:
    ``"generate"`` asks the model once more for an answer at a limit, ``"force"`` just stops.
    ``on_llm_error``: ``"stop"`` ends a run whose model failed (after ``max_retries``) with the
    ``llm_error`` stop reason; ``"raise"`` raises ``ModelCallError`` instead, so ``with_retry`` and
    ``with_fallbacks`` around the agent fire. Every option is checked here: a bad value raises
    ``ConfigurationError`` naming the option and what it allows.
    ``verbose=True`` prints a coloured trace; ``trace_path`` writes one JSON line per step; other
    ``listeners`` get the same events. ``max_reply_chars``: a longer model reply is cut before it
    is read (the model is told). ``keep_tool_output=False`` drops each tool's raw return value
    from ``Step.tool_output`` (the observation, cut to ``max_observation_chars``, stays).
    ``constrain_local`` (text mode): a llama.cpp model's replies are held by a grammar to the
    format, its Actions to the real tool names, and its reply at a limit to a Final Answer.
    ``check_answer=True`` reads each Final Answer against the question and the tool results before
    it ends the run (no model call; ``answer_check.py``): an answer with no number where the question
    asks for one, not in the unit asked, with a calculation left undone, or with a number no source
    states goes back to the model once per kind of problem, as a step with error ``answer_check``.
    """

    def __init__(
        self,
        llm: Any,
        tools: Sequence[BaseTool | Callable[..., Any]] | None = None,
        *,
        max_iterations: int | None = 5,
        max_tool_calls: int | None = None,
        max_seconds: float | None = None,
        max_tokens: int | None = None,
        allowed_tools: Collection[str] | None = None,
        tool_timeout: float | None = None,
        llm_timeout: float | None = None,
        max_retries: int = 2,
        retry_backoff: float = 1.0,
        on_limit: Literal["generate", "force"] = "generate",
        max_observation_chars: int = 4000,
        keep_recent_steps: int | None = 6,
        prompt: str | ReActPrompt | None = None,
        verbose: bool = False,
        trace_path: str | Path | None = None,
        listeners: Sequence[RunListener] = (),
        mode: Literal["text", "tool_calling", "two_phase"] = "text",
        constrain_local: bool = True,
        max_reply_chars: int | None = 20_000,
        keep_tool_output: bool = True,
        on_llm_error: Literal["stop", "raise"] = "stop",
        check_answer: bool = False,
    ) -> None:
        # Every option is checked here, so a mistake fails now and not at the first tool call.
        self.budget = Budget(
            options.count("max_iterations", max_iterations, minimum=1, none_means="no limit"),
            options.count("max_tool_calls", max_tool_calls, minimum=0, none_means="no limit"),
            options.seconds("max_seconds", max_seconds),
            options.count("max_tokens", max_tokens, minimum=0, none_means="no limit"),
        )
        tool_timeout = options.seconds("tool_timeout", tool_timeout)
        llm_timeout = options.seconds("llm_timeout", llm_timeout)
        max_retries = options.count("max_retries", max_retries, minimum=0) or 0
        retry_backoff = options.number("retry_backoff", retry_backoff, minimum=0)
        options.choice("on_limit", on_limit, ("generate", "force"))
        options.choice("on_llm_error", on_llm_error, ("stop", "raise"))
        options.choice("mode", mode, ("text", "tool_calling", "two_phase"))
        options.count("max_observation_chars", max_observation_chars, minimum=1)
        options.count("keep_recent_steps", keep_recent_steps, minimum=0, none_means="keeping every step")
        options.count("max_reply_chars", max_reply_chars, minimum=1, none_means="no limit")
        for name, value in (
            ("verbose", verbose),
            ("constrain_local", constrain_local),
            ("keep_tool_output", keep_tool_output),
            ("check_answer", check_answer),
        ):
            options.flag(name, value)
        self.tools, self.allowed_tools, self.executor = wiring.tool_executor(tools, allowed_tools)
        self.llm = llm
        options.instance("prompt", prompt, (str, ReActPrompt), "a system prompt (a string) or a ReActPrompt")
        self.prompt = prompt if isinstance(prompt, ReActPrompt) else ReActPrompt(prompt)
        self.limits = ScratchpadLimits(
            max_observation_chars=max_observation_chars, keep_recent=keep_recent_steps
        )
        self.transport: Transport = wiring.transport_for(
            mode, self.prompt, self.limits, constrain_local=constrain_local
        )
        self.mode = mode
        self.model, self.final_model = wiring.model_adapters(
            llm,
            self.transport,
            wiring.shown(self.tools, self.allowed_tools),
            timeout=llm_timeout,
            max_retries=max_retries,
            retry_backoff=retry_backoff,
        )
        self.tool_timeout = tool_timeout
        self.on_limit = on_limit
        self.on_llm_error = on_llm_error
        self.max_reply_chars = max_reply_chars
        self.keep_tool_output = keep_tool_output
        self.check_answer = check_answer
        self.listeners = wiring.listeners(listeners, verbose=verbose, trace_path=trace_path)

    # Think, Act, Observe on their own (ReActLoop.observe is the third) -----------------------
    def think(
        self, question: str, steps: Sequence[Step] = (), context: Any = "", *, steps_left: int | None = None
    ) -> Turn:
        """THINK: ask the model for its next thought and action (or answer), and read the reply.
        ``question`` and ``context`` are read as ``run`` reads them (``context.read_input``)."""
        return drivers.run(self.thinking(self._run_with(question, steps, context), steps_left))

    async def athink(
        self, question: str, steps: Sequence[Step] = (), context: Any = "", *, steps_left: int | None = None
    ) -> Turn:
        """Async ``think``."""
        return await drivers.arun(self.thinking(self._run_with(question, steps, context), steps_left))

    def act(self, turn: Turn) -> Acted:
        """ACT: run the action the model chose, if the policy allows it. On its own it has no
        history: repeats and unsourced numbers are checked only inside a run, which keeps the steps.
        A turn that holds a Final Answer has nothing to act on: ``ValueError``."""
        return drivers.run(self.acting(turn, self.new_run("", ""), in_run=False))

    async def aact(self, turn: Turn) -> Acted:
        """Async ``act``."""
        return await drivers.arun(self.acting(turn, self.new_run("", ""), in_run=False))

    def _run_with(self, question: str, steps: Sequence[Step], context: Any) -> Any:
        question, context = read_input(question, context)  # any context shape ``run`` takes
        run = self.new_run(question, context)
        run.steps = list(steps)
        return run

    # A whole run --------------------------------------------------------------------------
    def _session(
        self, input: AgentInput, config: RunnableConfig | None, context: Any, configure: chain_run.Configure
    ) -> Machine[AgentResult]:
        """One run with its LangChain chain events around it (``chain_run``: none when no one could
        hear them); yields each ``Step``, then the result, and returns the result."""
        question, context = read_input(input, context)
        config = ensure_config(config)
        inputs = {"input": question, "context": context}
        name = config.get("run_name") or self.get_name()
        parts = (self.model.llm, self.final_model.llm, *self.tools)
        manager, callbacks = yield from chain_run.start(config, configure, inputs, name, parts)
        run = self.new_run(question, context, manager, callbacks, config)
        try:
            yield from self.steps(run)
        except GeneratorExit as exc:  # the caller stopped reading the stream: the chain run ends here
            if heard(manager):
                drivers.notify_closed(Notify((manager,), "on_chain_error", (exc,)))
            raise
        except BaseException as exc:
            if heard(manager):
                yield Notify((manager,), "on_chain_error", (exc,))
            raise
        result = run.result
        assert result is not None
        end = Notify((manager,), "on_chain_end", (result_to_output(result),)) if heard(manager) else None
        if end is not None:
            finish = AgentFinish({"output": result.answer}, run.final_log)
            yield Notify((manager,), "on_agent_finish", (finish,))
        try:
            yield result  # inside the chain run: astream_events shows it before the run's end
        except GeneratorExit:  # the caller stopped reading at the result: the run still ended well
            if end is not None:
                drivers.notify_closed(end)
            raise
        if end is not None:
            yield end
        return result

    def stream(  # type: ignore[override]
        self, input: AgentInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Step | AgentResult]:
        """Yield each ``Step`` as soon as its observation is in, then the ``AgentResult``."""
        return drivers.drive(self._session(input, config, kwargs.pop("context", None), _SYNC))

    def astream(  # type: ignore[override]
        self, input: AgentInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Step | AgentResult]:
        """Async ``stream``."""
        return drivers.adrive(self._session(input, config, kwargs.pop("context", None), _ASYNC))

    def run(self, question: str, context: Any = "", *, config: RunnableConfig | None = None) -> AgentResult:
        """Answer ``question`` (with optional ``context``, any shape ``context.read_context`` takes);
        returns the answer, every step and the stop reason."""
        session = self._session({"input": question, "context": context}, config, None, _SYNC)
        return drivers.run(session)

    async def arun(
        self, question: str, context: Any = "", *, config: RunnableConfig | None = None
    ) -> AgentResult:
        """Async ``run``."""
        session = self._session({"input": question, "context": context}, config, None, _ASYNC)
        return await drivers.arun(session)

    def think_act_observe(self, question: str, context: str = "") -> tuple[str, list[dict[str, Any]]]:
        """The seed's interface: the answer and the steps as dicts."""
        result = self.run(question, context)
        return result.answer, [step.to_dict() for step in result.steps]

    def invoke(
        self, input: AgentInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        """Runnable entry point: a question, ``{"input", "context"}``, a prompt value, a list of
        messages or a ``{"messages": [...]}`` state in (``context.read_input``); a dict with
        ``output`` out, and ``messages`` (the answer as an ``AIMessage``) for a messages state."""
        result = drivers.run(self._session(input, config, kwargs.get("context"), _SYNC))
        return result_to_output(result, input)

    async def ainvoke(
        self, input: AgentInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        """Async ``invoke``."""
        result = await drivers.arun(self._session(input, config, kwargs.get("context"), _ASYNC))
        return result_to_output(result, input)

    def batch(
        self,
        inputs: list[AgentInput],
        config: RunnableConfig | list[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[dict[str, Any]]:
        """LangChain's ``Runnable.batch`` on daemon threads: one Ctrl-C stops it (``threaded``)."""
        return threaded.batch(partial(self.invoke, **kwargs), inputs, config, return_exceptions)

    def batch_as_completed(  # type: ignore[override]
        self,
        inputs: Sequence[AgentInput],
        config: RunnableConfig | Sequence[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> Iterator[tuple[int, dict[str, Any] | Exception]]:
        """LangChain's ``Runnable.batch_as_completed`` on daemon threads, as ``batch``."""
        return threaded.batch_as_completed(partial(self.invoke, **kwargs), inputs, config, return_exceptions)

    def transform(
        self, input: Iterator[AgentInput], config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[dict[str, Any]]:
        """In a chain, the agent emits its output dict once (``stream`` is for steps).

        The step before may stream its output in pieces (a ``RunnableParallel`` gives one chunk per
        key), so the pieces are gathered into one input first (``context.StreamedInput``) and the run starts only
        when the input is whole: run on each piece, the agent saw a question with no context."""
        whole = StreamedInput()
        for chunk in input:
            whole.add(chunk)
        if whole.seen:
            yield self.invoke(whole.value, config, **kwargs)

    async def atransform(
        self, input: AsyncIterator[AgentInput], config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[dict[str, Any]]:
        """Async ``transform``."""
        whole = StreamedInput()
        async for chunk in input:
            whole.add(chunk)
        if whole.seen:
            yield await self.ainvoke(whole.value, config, **kwargs)


_SYNC: chain_run.Configure = get_callback_manager_for_config
_ASYNC: chain_run.Configure = get_async_callback_manager_for_config
"""How each driver's runs configure their LangChain callback manager (``chain_run.start``)."""
