"""ExplicitReActAgent: Think → Act → Observe, in a loop you can read top to bottom.

    render the prompt → the model completes it → parse the reply
    → a Final Answer ends the run; an Action runs through the policy and the tool executor
    → the observation becomes a step → check the budgets → repeat

Bad model output and tool failures become observations the model can recover from; normal stops
are data (``AgentResult.stop_reason``), never exceptions.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, Protocol

from langchain_core.agents import AgentAction, AgentFinish
from langchain_core.callbacks import AsyncCallbackManagerForChainRun, CallbackManagerForChainRun
from langchain_core.runnables import Runnable, RunnableConfig, ensure_config
from langchain_core.runnables.config import (
    get_async_callback_manager_for_config,
    get_callback_manager_for_config,
)
from langchain_core.tools import BaseTool

from explicit_react.deadline import DeadlineExceeded
from explicit_react.errors import ConfigurationError, ModelCallError
from explicit_react.executor import ToolExecutor, ToolOutcome, as_tool
from explicit_react.llm import Completion, ModelAdapter
from explicit_react.parser import plain_text
from explicit_react.policy import SOURCED_NUMBERS, Budget, RunGuard
from explicit_react.prompt import Message, ReActPrompt, ToolSpec
from explicit_react.scratchpad import ScratchpadLimits, truncate_middle
from explicit_react.transport import NativeToolCalling, TextProtocol, Transport, Turn
from explicit_react.types import Action, AgentResult, FinalAnswer, Step, StopReason, TokenUsage

AgentInput = str | Mapping[str, Any]
AnyRunManager = CallbackManagerForChainRun | AsyncCallbackManagerForChainRun | None


class RunListener(Protocol):
    """Receives a run's progress; ``display.TracePrinter`` and ``trace.JsonlTrace`` are listeners."""

    def on_turn_start(self, turn: int, max_turns: int) -> None:
        """The model is about to be asked for turn ``turn`` (1-based)."""

    def on_step(self, step: Step, turn: int, max_turns: int) -> None:
        """A step completed (its observation is in)."""

    def on_result(self, result: AgentResult) -> None:
        """The run ended."""


@dataclass(frozen=True)
class Acted:
    """What the Act phase did: the outcome to observe (``None`` when nothing ran), and a stop if any."""

    outcome: ToolOutcome | None
    tool: str = ""
    stop: StopReason | None = None


@dataclass
class _Run:
    """The state of one run: the question, the steps so far, the guard, the counters."""

    question: str
    context: str
    guard: RunGuard
    manager: AnyRunManager = None
    steps: list[Step] = field(default_factory=list)
    usage: TokenUsage = field(default_factory=TokenUsage)
    llm_calls: int = 0
    result: AgentResult | None = None
    final_log: str = ""

    @cached_property
    def callbacks(self) -> Any:
        """The child callback manager the run's model and tool calls report to. Built once: each call
        copies it into a manager of its own, so sharing it is safe (and ``get_child`` is not free)."""
        return self.manager.get_child() if self.manager else None

    def sources(self) -> str:
        """What the run has been told: the question, the context, and each tool result that worked."""
        return "\n".join(
            [self.question, self.context, *(s.observation for s in self.steps if s.error is None)]
        )

    def count(self, usage: TokenUsage) -> None:
        self.usage += usage
        self.llm_calls += 1
        self.guard.record_tokens(usage.total_tokens)

    def finish(self, answer: str, stop: StopReason, error: str | None = None, log: str = "") -> AgentResult:
        self.final_log = log or answer
        self.result = AgentResult(
            answer=answer,
            steps=list(self.steps),
            stop_reason=stop,
            error=error,
            question=self.question,
            usage=self.usage,
            elapsed_seconds=self.guard.deadline.elapsed(),
            llm_calls=self.llm_calls,
        )
        return self.result


class ExplicitReActAgent(Runnable[AgentInput, dict[str, Any]]):
    """A ReAct agent whose every part is explicit: prompt, parser, scratchpad, executor, policy.

    ``llm``: a LangChain chat model or LLM, any Runnable, or ``callable(messages) -> str``.
    ``tools``: LangChain ``BaseTool``s or plain functions; ``None`` gives web search and Python.
    Limits (``None`` = none): ``max_iterations`` turns, ``max_tool_calls``, ``max_seconds`` of wall
    clock, ``max_tokens`` in total. ``allowed_tools`` denies every other tool. ``on_limit``:
    ``"generate"`` asks the model once more for an answer at a limit, ``"force"`` just stops.
    ``verbose=True`` prints a coloured trace; ``trace_path`` writes one JSON line per step.
    ``constrain_local`` (text mode): a llama.cpp model's replies are held by a grammar to the
    format, its Actions to the real tool names, and its reply at a limit to a Final Answer.
    """

    def __init__(
        self,
        llm: Any,
        tools: Sequence[BaseTool | Callable[..., Any]] | None = None,
        *,
        max_iterations: int = 5,
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
        mode: Literal["text", "tool_calling"] = "text",
        constrain_local: bool = True,
    ) -> None:
        if on_limit not in ("generate", "force"):
            raise ConfigurationError(f"on_limit must be 'generate' or 'force', not {on_limit!r}")
        try:
            self.budget = Budget(max_iterations, max_tool_calls, max_seconds, max_tokens)
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
        if tools is None:
            from explicit_react.tools import default_tools

            tools = default_tools()
        self.tools: list[BaseTool] = [as_tool(t) for t in tools]
        self.allowed_tools = frozenset(allowed_tools) if allowed_tools is not None else None
        shown = [t for t in self.tools if self.allowed_tools is None or t.name in self.allowed_tools]
        self.executor = ToolExecutor(self.tools, suggest=[t.name for t in shown])
        if self.allowed_tools is not None and (unknown := self.allowed_tools - set(self.executor.tools)):
            raise ConfigurationError(f"allowed_tools names tools that do not exist: {sorted(unknown)}")
        self.llm = llm
        self.prompt = prompt if isinstance(prompt, ReActPrompt) else ReActPrompt(prompt)
        self.limits = ScratchpadLimits(
            max_observation_chars=max_observation_chars, keep_recent=keep_recent_steps
        )
        if mode == "text":
            self.transport: Transport = TextProtocol(self.prompt, self.limits, constrain=constrain_local)
        elif mode == "tool_calling":
            self.transport = NativeToolCalling(self.limits)
        else:
            raise ConfigurationError(f"mode must be 'text' or 'tool_calling', not {mode!r}")
        self.mode = mode
        bound = self.transport.bind(llm, shown)
        self.model, self.final_model = (
            ModelAdapter(
                m,
                stop=self.transport.stop,
                timeout=llm_timeout,
                max_retries=max_retries,
                retry_backoff=retry_backoff,
            )
            for m in (bound, self.transport.bind_final(llm))
        )
        self.tool_timeout = tool_timeout
        self.on_limit = on_limit
        self.listeners: list[Any] = list(listeners)
        if verbose:
            from explicit_react.display import TracePrinter

            self.listeners.append(TracePrinter())
        if trace_path is not None:
            from explicit_react.trace import JsonlTrace

            self.listeners.append(JsonlTrace(trace_path))

    @property
    def max_iterations(self) -> int:
        """The iteration budget."""
        return self.budget.max_iterations

    @property
    def tool_specs(self) -> list[ToolSpec]:
        """The tools the model is shown: all of them, or the allowed ones."""
        return [
            spec
            for name, spec in self.executor.specs.items()
            if self.allowed_tools is None or name in self.allowed_tools
        ]

    # Think, Act, Observe --------------------------------------------------------------------
    def messages(
        self, question: str, steps: Sequence[Step] = (), context: str = "", steps_left: int | None = None
    ) -> list[Message]:
        """The prompt for the next turn, as role/content messages."""
        return self.transport.messages(question, self.tool_specs, steps, context, steps_left)

    def think(
        self,
        question: str,
        steps: Sequence[Step] = (),
        context: str = "",
        *,
        steps_left: int | None = None,
        _run: _Run | None = None,
    ) -> Turn:
        """THINK: ask the model for its next thought and action (or answer), and parse the reply."""
        completion = self._turn_model(steps).complete(
            self.messages(question, steps, context, steps_left),
            callbacks=_run.callbacks if _run else None,
            deadline=_run.guard.deadline if _run else None,
        )
        return self.transport.read(completion)

    async def athink(
        self,
        question: str,
        steps: Sequence[Step] = (),
        context: str = "",
        *,
        steps_left: int | None = None,
        _run: _Run | None = None,
    ) -> Turn:
        """Async ``think``."""
        completion = await self._turn_model(steps).acomplete(
            self.messages(question, steps, context, steps_left),
            callbacks=_run.callbacks if _run else None,
            deadline=_run.guard.deadline if _run else None,
        )
        return self.transport.read(completion)

    def _turn_model(self, steps: Sequence[Step]) -> ModelAdapter:
        llm = self.transport.turn_model(steps)
        return self.model if llm is None else self.model.with_llm(llm)

    def _permit(self, turn: Turn, run: _Run, *, in_run: bool = True) -> Acted | None:
        """The policy's answer to a turn: an ``Acted`` when the tool must not run, ``None`` to run it.
        Outside a run (``in_run=False``) there are no sources to check a call's numbers against."""
        if turn.decision is None:
            feedback = turn.feedback or "Your reply could not be read."
            return Acted(
                ToolOutcome(
                    feedback if feedback.startswith("Error") else f"Error: {feedback}", error="parse_error"
                )
            )
        action = turn.decision
        assert isinstance(action, Action)
        tool = self.executor.resolve(action.tool)
        if tool is None:
            unknown = self.executor.unknown_tool_observation(action.tool)
            verdict = run.guard.check_unknown(len(run.steps) + 1, action.tool, action.tool_input, unknown)
            return Acted(ToolOutcome(verdict.observation, error=verdict.error), action.tool, verdict.stop)
        verdict = run.guard.check(tool, action.tool_input)
        if verdict.error == "tool_denied":  # the same answer as a made-up name: a refusal reveals nothing
            verdict = replace(verdict, observation=self.executor.unknown_tool_observation(action.tool))
        if verdict.run and in_run and (self.executor.tools[tool].metadata or {}).get(SOURCED_NUMBERS):
            verdict = run.guard.check_sources(tool, action.tool_input, run.sources()) or verdict
        if verdict.run:
            return None
        if not verdict.observation:  # over the tool-call budget: nothing to observe, the run ends
            return Acted(None, tool, verdict.stop)
        return Acted(ToolOutcome(verdict.observation, error=verdict.error), tool, verdict.stop)

    def act(self, turn: Turn, _run: _Run | None = None) -> Acted:
        """ACT: run the action the model chose, if the policy allows it.

        Called on its own (no ``_run``) it has no history: repeats and unsourced numbers are checked
        only inside ``run``/``stream``, which keep the steps."""
        run = _run or self._new_run("", "", None)
        if (refused := self._permit(turn, run, in_run=_run is not None)) is not None:
            return refused
        action = turn.decision
        assert isinstance(action, Action)
        if isinstance(run.manager, CallbackManagerForChainRun):
            run.manager.on_agent_action(
                _agent_action(self.executor.resolve(action.tool) or action.tool, action, turn)
            )
        outcome = self.executor.execute(
            action.tool,
            action.tool_input,
            callbacks=run.callbacks,
            timeout=self.tool_timeout,
            deadline=run.guard.deadline,
        )
        return self._ran(action, outcome, run)

    async def aact(self, turn: Turn, _run: _Run | None = None) -> Acted:
        """Async ``act``."""
        run = _run or self._new_run("", "", None)
        if (refused := self._permit(turn, run, in_run=_run is not None)) is not None:
            return refused
        action = turn.decision
        assert isinstance(action, Action)
        if isinstance(run.manager, AsyncCallbackManagerForChainRun):
            await run.manager.on_agent_action(
                _agent_action(self.executor.resolve(action.tool) or action.tool, action, turn)
            )
        outcome = await self.executor.aexecute(
            action.tool,
            action.tool_input,
            callbacks=run.callbacks,
            timeout=self.tool_timeout,
            deadline=run.guard.deadline,
        )
        return self._ran(action, outcome, run)

    def _ran(self, action: Action, outcome: ToolOutcome, run: _Run) -> Acted:
        tool = self.executor.resolve(action.tool) or action.tool
        run.guard.record_call(len(run.steps) + 1, tool, action.tool_input, outcome.observation)
        return Acted(outcome, tool, StopReason.RETURN_DIRECT if outcome.return_direct else None)

    def observe(self, turn: Turn, acted: Acted) -> Step:
        """OBSERVE: record the turn and what it produced as a step."""
        outcome = acted.outcome or ToolOutcome("")
        action = turn.decision if isinstance(turn.decision, Action) else None
        return Step(
            thought=action.thought if action else "",
            action=(acted.tool or action.tool) if action else "",
            action_input=action.tool_input if action else "",
            observation=truncate_middle(outcome.observation, self.limits.max_observation_chars),
            log=turn.text,
            error=outcome.error,
            llm_seconds=turn.seconds,
            tool_seconds=outcome.seconds,
            usage=turn.usage,
            tool_output=outcome.output,
        )

    # The loop -----------------------------------------------------------------------------
    def _loop(self, run: _Run) -> Iterator[Step]:
        """Think → Act → Observe until a final answer or a stop; yields each step as it completes."""
        guard = run.guard
        while (stop := guard.stop_before_turn(len(run.steps))) is None:
            self._emit("on_turn_start", len(run.steps) + 1, self.max_iterations)
            try:
                turn = self.think(
                    run.question,
                    run.steps,
                    run.context,
                    steps_left=guard.steps_left(len(run.steps)),
                    _run=run,
                )
                run.count(turn.usage)
                if isinstance(turn.decision, FinalAnswer):
                    self._finish(run, turn.decision.answer, StopReason.SUCCESS, turn.text)
                    return
                acted = self.act(turn, run)
            except ModelCallError as exc:
                self._finish(run, _STOPPED[StopReason.LLM_ERROR], StopReason.LLM_ERROR, error=str(exc))
                return
            except DeadlineExceeded:
                stop = StopReason.MAX_SECONDS
                break
            if acted.outcome is not None:
                step = self.observe(turn, acted)
                run.steps.append(step)
                self._emit("on_step", step, len(run.steps), self.max_iterations)
                yield step
            if acted.stop is not None:
                stop = acted.stop
                break
        self._stop_at_limit(run, stop)

    async def _aloop(self, run: _Run) -> AsyncIterator[Step]:
        """Async twin of ``_loop``."""
        guard = run.guard
        while (stop := guard.stop_before_turn(len(run.steps))) is None:
            self._emit("on_turn_start", len(run.steps) + 1, self.max_iterations)
            try:
                turn = await self.athink(
                    run.question,
                    run.steps,
                    run.context,
                    steps_left=guard.steps_left(len(run.steps)),
                    _run=run,
                )
                run.count(turn.usage)
                if isinstance(turn.decision, FinalAnswer):
                    self._finish(run, turn.decision.answer, StopReason.SUCCESS, turn.text)
                    return
                acted = await self.aact(turn, run)
            except ModelCallError as exc:
                self._finish(run, _STOPPED[StopReason.LLM_ERROR], StopReason.LLM_ERROR, error=str(exc))
                return
            except DeadlineExceeded:
                stop = StopReason.MAX_SECONDS
                break
            if acted.outcome is not None:
                step = self.observe(turn, acted)
                run.steps.append(step)
                self._emit("on_step", step, len(run.steps), self.max_iterations)
                yield step
            if acted.stop is not None:
                stop = acted.stop
                break
        await self._astop_at_limit(run, stop)

    # Stopping -----------------------------------------------------------------------------
    def _wants_final_call(self, stop: StopReason) -> bool:
        return self.on_limit == "generate" and stop in _ANSWER_AT_LIMIT

    def _final_messages(self, run: _Run) -> list[Message]:
        return self.transport.final_messages(run.question, self.tool_specs, run.steps, run.context)

    def _stop_at_limit(self, run: _Run, stop: StopReason) -> None:
        """End a run that hit a limit: one tool-free call for an answer (``on_limit="generate"``), or none."""
        if stop is StopReason.RETURN_DIRECT or not self._wants_final_call(stop):
            self._stop_with(run, stop, None)
            return
        try:
            completion = self.final_model.complete(
                self._final_messages(run), callbacks=run.callbacks, deadline=run.guard.deadline
            )
        except (ModelCallError, DeadlineExceeded):
            completion = _NO_COMPLETION
        self._stop_with(run, stop, completion)

    async def _astop_at_limit(self, run: _Run, stop: StopReason) -> None:
        """Async ``_stop_at_limit``."""
        if stop is StopReason.RETURN_DIRECT or not self._wants_final_call(stop):
            self._stop_with(run, stop, None)
            return
        try:
            completion = await self.final_model.acomplete(
                self._final_messages(run), callbacks=run.callbacks, deadline=run.guard.deadline
            )
        except (ModelCallError, DeadlineExceeded):
            completion = _NO_COMPLETION
        self._stop_with(run, stop, completion)

    def _stop_with(self, run: _Run, stop: StopReason, completion: Completion | None) -> None:
        if stop is StopReason.RETURN_DIRECT:
            self._finish(run, run.steps[-1].observation, stop)
            return
        reason = self._limit_sentence(stop)
        answer = _STOPPED[stop]
        if completion is not None:
            if completion.text:
                run.count(completion.usage)
            answer = _answer_at_limit(self.transport.read(completion), answer)
        self._finish(run, answer, stop, error=reason)

    def _limit_sentence(self, stop: StopReason) -> str:
        b = self.budget
        return {
            StopReason.MAX_ITERATIONS: f"the run reached max_iterations={b.max_iterations} without a final answer",
            StopReason.MAX_TOOL_CALLS: f"the model asked for more than max_tool_calls={b.max_tool_calls} tool calls",
            StopReason.MAX_SECONDS: f"the run used its max_seconds={b.max_seconds} before an answer",
            StopReason.MAX_TOKENS: f"the model used more than max_tokens={b.max_tokens} tokens",
            StopReason.LOOP_DETECTED: "the model kept repeating a call it had already made",
            StopReason.TOOL_DENIED: "the model kept asking for a tool that is not allowed",
        }.get(stop, str(stop))

    def _finish(
        self, run: _Run, answer: str, stop: StopReason, log: str = "", error: str | None = None
    ) -> None:
        result = run.finish(answer.strip(), stop, error, log)
        self._emit("on_result", result)

    def _emit(self, event: str, *args: Any) -> None:
        for listener in self.listeners:
            handler = getattr(listener, event, None)
            if handler is not None:
                handler(*args)

    # Public entry points ------------------------------------------------------------------
    def _new_run(self, question: str, context: str, manager: AnyRunManager) -> _Run:
        return _Run(question, context, RunGuard(self.budget, self.allowed_tools), manager)

    def stream(  # type: ignore[override]
        self, input: AgentInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Step | AgentResult]:
        """Yield each ``Step`` as soon as its observation is in, then the ``AgentResult``."""
        question, context = read_input(input, kwargs.pop("context", None))
        config = ensure_config(config)
        manager = get_callback_manager_for_config(config).on_chain_start(
            None,
            {"input": question, "context": context},
            name=config.get("run_name") or self.get_name(),
            run_id=config.pop("run_id", None),
        )
        run = self._new_run(question, context, manager)
        try:
            yield from self._loop(run)
        except BaseException as exc:
            manager.on_chain_error(exc)
            raise
        assert run.result is not None
        manager.on_agent_finish(AgentFinish({"output": run.result.answer}, run.final_log))
        manager.on_chain_end(result_to_output(run.result))
        yield run.result

    async def astream(  # type: ignore[override]
        self, input: AgentInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Step | AgentResult]:
        """Async ``stream``."""
        question, context = read_input(input, kwargs.pop("context", None))
        config = ensure_config(config)
        manager = await get_async_callback_manager_for_config(config).on_chain_start(
            None,
            {"input": question, "context": context},
            name=config.get("run_name") or self.get_name(),
            run_id=config.pop("run_id", None),
        )
        run = self._new_run(question, context, manager)
        try:
            async for step in self._aloop(run):
                yield step
        except BaseException as exc:
            await manager.on_chain_error(exc)
            raise
        assert run.result is not None
        await manager.on_agent_finish(AgentFinish({"output": run.result.answer}, run.final_log))
        await manager.on_chain_end(result_to_output(run.result))
        yield run.result

    def run(self, question: str, context: str = "", *, config: RunnableConfig | None = None) -> AgentResult:
        """Answer ``question`` (with optional ``context``); returns the answer, every step and the stop reason."""
        *_, result = self.stream({"input": question, "context": context}, config)
        assert isinstance(result, AgentResult)
        return result

    async def arun(
        self, question: str, context: str = "", *, config: RunnableConfig | None = None
    ) -> AgentResult:
        """Async ``run``."""
        result: Any = None
        async for result in self.astream({"input": question, "context": context}, config):  # noqa: B007
            pass
        assert isinstance(result, AgentResult)
        return result

    def think_act_observe(self, question: str, context: str = "") -> tuple[str, list[dict[str, Any]]]:
        """The seed's interface: the answer and the steps as dicts."""
        result = self.run(question, context)
        return result.answer, [step.to_dict() for step in result.steps]

    def invoke(
        self, input: AgentInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        """Runnable entry point: a question or ``{"input", "context"}`` in, a dict with ``output`` out."""
        question, context = read_input(input, kwargs.get("context"))
        return result_to_output(self.run(question, context, config=config))

    async def ainvoke(
        self, input: AgentInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        """Async ``invoke``."""
        question, context = read_input(input, kwargs.get("context"))
        return result_to_output(await self.arun(question, context, config=config))

    def transform(
        self, input: Iterator[AgentInput], config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[dict[str, Any]]:
        """In a chain, the agent emits its output dict once (``stream`` is for steps)."""
        for item in input:
            yield self.invoke(item, config)

    async def atransform(
        self, input: AsyncIterator[AgentInput], config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[dict[str, Any]]:
        """Async ``transform``."""
        async for item in input:
            yield await self.ainvoke(item, config)


_ANSWER_AT_LIMIT = {
    StopReason.MAX_ITERATIONS,
    StopReason.MAX_TOOL_CALLS,
    StopReason.MAX_TOKENS,
    StopReason.LOOP_DETECTED,
    StopReason.TOOL_DENIED,
}

_STOPPED = {
    StopReason.MAX_ITERATIONS: "I could not find an answer within the allowed number of steps.",
    StopReason.MAX_TOOL_CALLS: "I could not find an answer within the allowed number of tool calls.",
    StopReason.MAX_SECONDS: "I ran out of time before I could find an answer.",
    StopReason.MAX_TOKENS: "I could not find an answer within the allowed number of tokens.",
    StopReason.LOOP_DETECTED: "I stopped because I kept repeating the same action without getting closer to an answer.",
    StopReason.TOOL_DENIED: "I stopped because the tool I needed is not allowed here.",
    StopReason.LLM_ERROR: "I could not answer because the language model failed.",
}


_NO_COMPLETION = Completion("", TokenUsage(), 0.0)


def _answer_at_limit(turn: Turn, fallback: str) -> str:
    """The answer in the tool-free call's reply: its Final Answer, or the reply itself when it is
    plain prose; a reply that still asks for a tool, or is empty, gives ``fallback``."""
    if isinstance(turn.decision, FinalAnswer) and turn.decision.answer.strip():
        return turn.decision.answer
    prose = plain_text(turn.text) if turn.decision is None else None
    return prose or fallback


def _agent_action(tool: str, action: Action, turn: Turn) -> AgentAction:
    return AgentAction(tool, action.tool_input, turn.text)  # type: ignore[arg-type]


def read_input(input: AgentInput, context: Any = None) -> tuple[str, str]:
    """The question and the context from a string or an ``{"input"|"question", "context"}`` dict."""
    if isinstance(input, str):
        return input, _context_text(context)
    if isinstance(input, Mapping):
        question = input.get("input", input.get("question"))
        if not isinstance(question, str):
            raise ConfigurationError("the input dict needs a string under 'input' (or 'question')")
        return question, _context_text(input.get("context", context))
    raise ConfigurationError(
        f"input must be a question string or a dict with 'input', not {type(input).__name__}"
    )


def _context_text(context: Any) -> str:
    if context is None:
        return ""
    if isinstance(context, str):
        return context
    from explicit_react.qa import format_context

    return format_context(context)


def result_to_output(result: AgentResult) -> dict[str, Any]:
    """The Runnable output dict for a result."""
    return {
        "input": result.question,
        "output": result.answer,
        "stop_reason": result.stop_reason.value,
        "success": result.success,
        "error": result.error,
        "steps": [step.to_dict() for step in result.steps],
    }
