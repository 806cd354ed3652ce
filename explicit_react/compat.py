"""create_react_agent / AgentExecutor / ReActOutputParser: drop-in replacements for LangChain's classic ones.

An app switches with one import::

    from langchain_classic.agents import AgentExecutor, create_react_agent   # before
    from explicit_react import AgentExecutor, create_react_agent             # after

Same inputs, outputs, stream chunks and callback events as ``langchain_classic``; where the classic
executor is known to misbehave (see docs/migration.md) this one does the right thing. The agent
runnable is driven as the classic drives it; the tools run through our ``ToolExecutor``, and the
run is watched by our ``RunGuard`` (loop detection) and ``Deadline`` (a hard time limit).

This module imports only ``langchain_core``: ``langchain_classic`` is needed by the tests alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from string import Template
from typing import Any, Literal, Union

from langchain_core.agents import AgentAction, AgentFinish, AgentStep
from langchain_core.callbacks import (
    AsyncCallbackManager,
    AsyncCallbackManagerForChainRun,
    AsyncCallbackManagerForToolRun,
    CallbackManager,
    CallbackManagerForChainRun,
    CallbackManagerForToolRun,
    Callbacks,
)
from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseLanguageModel
from langchain_core.output_parsers import BaseOutputParser
from langchain_core.outputs import RunInfo
from langchain_core.prompts import BasePromptTemplate, ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableConfig, RunnablePassthrough, ensure_config
from langchain_core.runnables.utils import AddableDict
from langchain_core.tools import BaseTool
from langchain_core.tools.render import ToolsRenderer, render_text_description

from explicit_react.classic_chain import (
    RUN_KEY,
    ClassicChainAPI,
    chain_callbacks,
    chain_verbose,
    check_allowed_tools,
    classic_invalid_tool_text,
)
from explicit_react.classic_iterator import AgentExecutorIterator
from explicit_react.deadline import DeadlineExceeded, acall_with_timeout, call_with_timeout
from explicit_react.errors import ParseError
from explicit_react.executor import ToolExecutor, ToolOutcome, as_tool, tool_spec
from explicit_react.parser import parse
from explicit_react.policy import ALLOW, Budget, RunGuard, Verdict
from explicit_react.prompt import load_template
from explicit_react.types import FinalAnswer, StopReason, ToolInput

FORCE_STOP_TEXT = "Agent stopped due to iteration limit or time limit."
"""The classic answer when ``early_stopping_method="force"`` ends a run at a limit."""
FINAL_ANSWER_NOTE = "I now need to return a final answer based on the previous steps:"
"""The classic note for ``early_stopping_method="generate"``'s last call."""

AgentDecision = Union[AgentAction, AgentFinish]  # noqa: UP007 (a runtime generic argument)
Steps = list[tuple[AgentAction, Any]]


# -- The parser -------------------------------------------------------------------------------------
class ReActOutputParser(BaseOutputParser[AgentDecision]):
    """Our ``parse`` as a LangChain agent output parser: a drop-in for ``ReActSingleInputOutputParser``.

    It returns ``AgentAction`` (a dict ``tool_input`` when the model wrote a JSON object) or
    ``AgentFinish``; a reply it cannot read raises ``OutputParserException`` whose ``observation``
    is our feedback for the model (``send_to_llm=True``).
    """

    def parse(self, text: str) -> AgentAction | AgentFinish:
        """Read one model reply."""
        try:
            decision = parse(text)
        except ParseError as exc:
            raise OutputParserException(
                f"Could not parse LLM output: `{text}`",
                observation=exc.feedback,
                llm_output=text,
                send_to_llm=True,
            ) from None
        log = text if text.rstrip() == decision.log else decision.log  # the text, unless we cut it
        if isinstance(decision, FinalAnswer):
            return AgentFinish({"output": decision.answer}, log)
        return AgentAction(decision.tool, _agent_tool_input(decision.tool_input), log)

    def get_format_instructions(self) -> str:
        """The reply format the parser reads."""
        return Template(load_template("format")).safe_substitute(tool_names="...").strip()

    @property
    def _type(self) -> str:
        return "explicit-react"


def _agent_tool_input(tool_input: ToolInput) -> str | dict[str, Any]:
    return json.dumps(tool_input, ensure_ascii=False) if isinstance(tool_input, list) else tool_input


# -- The agent runnable -----------------------------------------------------------------------------
def format_log_to_str(steps: Sequence[tuple[AgentAction, Any]]) -> str:
    """The classic ReAct scratchpad: each action's log, then its observation, then ``Thought:``."""
    return "".join(f"{action.log}\nObservation: {observation}\nThought: " for action, observation in steps)


def default_prompt() -> ChatPromptTemplate:
    """Our prompt (explicit_react/prompts/) with the classic variables: tools, tool_names, input, agent_scratchpad."""
    system = Template(_escape_braces(load_template("system"))).safe_substitute(
        tools="{tools}", tool_names="{tool_names}", format=_escape_braces(load_template("format").strip())
    )
    user = Template(_escape_braces(load_template("question"))).safe_substitute(
        context="",
        question="{input}",
        scratchpad="{agent_scratchpad}",
        steps_left="Continue with your Thought.",
    )
    if (
        "{tool_names}" not in system
    ):  # keep the classic variables even when our template lists tools only once
        system = system.replace("{tools}", "{tools}\nTool names: {tool_names}", 1)
    return ChatPromptTemplate.from_messages([("system", system), ("human", user.strip())])


def _escape_braces(text: str) -> str:
    """Double the braces for a LangChain f-string template, leaving our ``${name}`` placeholders alone."""
    return _BRACE_OR_PLACEHOLDER.sub(lambda m: m[0] if len(m[0]) > 1 else m[0] * 2, text)


_BRACE_OR_PLACEHOLDER = re.compile(r"\$\{\w+\}|[{}]")


def _describe_tools(tools: list[BaseTool]) -> str:
    return "\n".join(tool_spec(t).describe() for t in tools)


def create_react_agent(
    llm: BaseLanguageModel | Runnable[Any, Any],
    tools: Sequence[BaseTool | Callable[..., Any]],
    prompt: BasePromptTemplate | None = None,
    output_parser: BaseOutputParser[Any] | None = None,
    tools_renderer: ToolsRenderer = render_text_description,
    *,
    stop_sequence: bool | list[str] = True,
) -> Runnable[dict[str, Any], Any]:
    """The classic ReAct agent runnable: prompt variables plus ``intermediate_steps`` in, an
    ``AgentAction`` or ``AgentFinish`` out. ``prompt=None`` uses our prompt (its tool list shows the
    JSON arguments of multi-argument tools unless you pass a ``tools_renderer``); the default
    parser is ``ReActOutputParser``.
    """
    tool_list = [as_tool(t) for t in tools]
    if prompt is None:
        prompt = default_prompt()
        if tools_renderer is render_text_description:
            tools_renderer = _describe_tools
    missing_vars = {"tools", "tool_names", "agent_scratchpad"}.difference(
        prompt.input_variables + list(prompt.partial_variables)
    )
    if missing_vars:
        raise ValueError(f"Prompt missing required variables: {missing_vars}")
    prompt = prompt.partial(tools=tools_renderer(tool_list), tool_names=", ".join(t.name for t in tool_list))
    model: Runnable[Any, Any] = llm
    if stop_sequence:
        model = llm.bind(stop=["\nObservation"] if stop_sequence is True else stop_sequence)
    return (
        RunnablePassthrough.assign(agent_scratchpad=lambda x: format_log_to_str(x["intermediate_steps"]))
        | prompt
        | model
        | (output_parser or ReActOutputParser())
    )


# -- The executor -----------------------------------------------------------------------------------
class _EchoTool(BaseTool):
    """Returns its input: how the classic shows parse errors (``_Exception``) and unknown tools to callbacks."""

    description: str = "Returns its input."

    def _run(self, query: str, run_manager: CallbackManagerForToolRun | None = None) -> str:
        return query

    async def _arun(self, query: str, run_manager: AsyncCallbackManagerForToolRun | None = None) -> str:
        return query


@dataclass(frozen=True)
class _IterationEnd:
    """Marks the end of one loop iteration (for ``iter()``): the steps it added."""

    steps: Steps


@dataclass(frozen=True)
class _Acted:
    """One action's step, and whether it ends the run (return_direct, or a stop from the guard)."""

    step: AgentStep
    direct: bool = False
    stop: StopReason | None = None


@dataclass
class _Run:
    """One run: its inputs, callback manager, guard, steps and, once over, how it ended."""

    inputs: dict[str, Any]
    manager: CallbackManagerForChainRun | AsyncCallbackManagerForChainRun
    guard: RunGuard
    steps: Steps = field(default_factory=list)
    iterations: int = 0
    finish: AgentFinish | None = None
    stop_reason: StopReason | None = None

    @property
    def callbacks(self) -> Any:
        return self.manager.get_child()


Event = AgentAction | AgentStep | _IterationEnd


class AgentExecutor(ClassicChainAPI, Runnable[dict[str, Any], dict[str, Any]]):
    """Runs an agent runnable with tools until it answers: a drop-in for ``langchain_classic``'s AgentExecutor.

    Takes the classic keyword arguments (same defaults). Beyond the classic: ``early_stopping_method=
    "generate"`` works with runnable agents, ``max_execution_time`` interrupts a hanging call in sync
    code too, tools run through ``ToolExecutor`` (JSON input for multi-argument tools, exceptions
    become observations), an exactly repeated call is refused once and ends the run the second time
    (``detect_loops=False`` turns this off), and why a run ended is kept: ``last_stop_reason``, and
    a ``stop_reason`` output key with ``return_stop_reason=True``. An unknown tool name gets our
    observation (the real names, the closest one); ``classic_unknown_tool=True`` gives the classic
    text instead. The classic ``Chain`` calls (``run``, ``__call__``, ...) come from ``ClassicChainAPI``.
    """

    def __init__(
        self,
        *,
        agent: Any,
        tools: Sequence[BaseTool | Callable[..., Any]],
        return_intermediate_steps: bool = False,
        max_iterations: int | None = 15,
        max_execution_time: float | None = None,
        early_stopping_method: Literal["force", "generate"] = "force",
        handle_parsing_errors: bool | str | Callable[[OutputParserException], str] = False,
        trim_intermediate_steps: int | Callable[[Steps], Steps] = -1,
        memory: Any = None,
        callbacks: Callbacks = None,
        verbose: bool | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        name: str | None = None,
        callback_manager: Any = None,
        stream_runnable: bool = True,
        detect_loops: bool = True,
        return_stop_reason: bool = False,
        classic_unknown_tool: bool = False,
    ) -> None:
        if early_stopping_method not in ("force", "generate"):
            raise ValueError(
                f"early_stopping_method should be one of `force` or `generate`, got {early_stopping_method}"
            )
        if max_iterations is not None and max_iterations < 0:
            raise ValueError("max_iterations must not be negative")
        self.agent = agent
        self.tools = tools
        check_allowed_tools(agent, self.tools)
        self.return_intermediate_steps = return_intermediate_steps
        self.max_iterations = max_iterations
        self.max_execution_time = max_execution_time
        self.early_stopping_method = early_stopping_method
        self.handle_parsing_errors = handle_parsing_errors
        self.trim_intermediate_steps = trim_intermediate_steps
        self.memory = memory
        self.callbacks = chain_callbacks(callbacks, callback_manager)
        self.verbose = chain_verbose(verbose)
        self.tags = tags
        self.metadata = metadata
        self.name = name
        self.stream_runnable = stream_runnable
        self.detect_loops = detect_loops
        self.return_stop_reason = return_stop_reason
        self.classic_unknown_tool = classic_unknown_tool
        self.last_stop_reason: StopReason | None = None
        """Why the most recent run to finish ended (with concurrent runs, use ``return_stop_reason``)."""

    @classmethod
    def from_agent_and_tools(
        cls, agent: Any, tools: Sequence[BaseTool], callbacks: Callbacks = None, **kwargs: Any
    ) -> AgentExecutor:
        """The classic alternative constructor."""
        return cls(agent=agent, tools=tools, callbacks=callbacks, **kwargs)

    @property
    def tools(self) -> list[BaseTool]:
        """The tools the agent may call."""
        return self._tools

    @tools.setter
    def tools(self, tools: Sequence[BaseTool | Callable[..., Any]]) -> None:
        self._tools = [as_tool(t) for t in tools]
        self._executor = ToolExecutor(self._tools)

    # Entry points -------------------------------------------------------------------------
    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> dict[str, Any]:
        """Run to the end; returns ``{**inputs, "output": ...}`` (plus ``intermediate_steps`` if asked)."""
        config = ensure_config(config)
        inputs = self.prep_inputs(input)
        run = self._start(inputs, config)
        manager = run.manager
        assert isinstance(manager, CallbackManagerForChainRun)
        try:
            for _ in self._loop(run):
                pass
            outputs = self._outputs(run)
            final = self.prep_outputs(inputs, outputs, kwargs.get("return_only_outputs", False))
        except BaseException as exc:
            manager.on_chain_error(exc)
            raise
        manager.on_chain_end(outputs)
        return self._decorate(final, run, kwargs.get("include_run_info", False))

    async def ainvoke(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        """Async ``invoke``."""
        config = ensure_config(config)
        inputs = await self.aprep_inputs(input)
        run = await self._astart(inputs, config)
        manager = run.manager
        assert isinstance(manager, AsyncCallbackManagerForChainRun)
        try:
            async for _ in self._aloop(run):
                pass
            outputs = await self._aoutputs(run)
            final = await self.aprep_outputs(inputs, outputs, kwargs.get("return_only_outputs", False))
        except BaseException as exc:
            await manager.on_chain_error(exc)
            raise
        await manager.on_chain_end(outputs)
        return self._decorate(final, run, kwargs.get("include_run_info", False))

    def stream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[AddableDict]:
        """Yield ``actions`` and ``steps`` chunks as they happen, then the ``output`` chunk (all with ``messages``)."""
        yield from self._chunks(input, config, yield_actions=True)

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[AddableDict]:
        """Async ``stream``."""
        async for chunk in self._achunks(input, config, yield_actions=True):
            yield chunk

    def iter(
        self,
        inputs: Any,
        callbacks: Callbacks = None,
        *,
        include_run_info: bool = False,
        async_: bool = False,
    ) -> AgentExecutorIterator:
        """Iterate over the run: one ``{"intermediate_step": [...]}`` per iteration, then the final output
        (``async_`` is ignored, as in the classic: the iterator is both sync and async)."""
        return AgentExecutorIterator(
            self, inputs, callbacks, tags=self.tags, include_run_info=include_run_info
        )

    # One run ------------------------------------------------------------------------------
    def _chunks(
        self,
        input: Any,
        config: RunnableConfig | None,
        *,
        yield_actions: bool,
        yield_iterations: bool = False,
        include_run_info: bool = False,
    ) -> Iterator[AddableDict]:
        config = ensure_config(config)
        inputs = self.prep_inputs(input)
        run = self._start(inputs, config)
        manager = run.manager
        assert isinstance(manager, CallbackManagerForChainRun)
        try:
            for event in self._loop(run):
                if (chunk := _chunk(event, yield_actions, yield_iterations)) is not None:
                    yield chunk
            outputs = self._outputs(run)
            outputs["messages"] = run.finish.messages if run.finish else []
            manager.on_chain_end(outputs)
            final = AddableDict(self.prep_outputs(inputs, outputs, True))
        except BaseException as exc:
            manager.on_chain_error(exc)
            raise
        yield self._decorate(final, run, include_run_info)

    async def _achunks(
        self,
        input: Any,
        config: RunnableConfig | None,
        *,
        yield_actions: bool,
        yield_iterations: bool = False,
        include_run_info: bool = False,
    ) -> AsyncIterator[AddableDict]:
        config = ensure_config(config)
        inputs = await self.aprep_inputs(input)
        run = await self._astart(inputs, config)
        manager = run.manager
        assert isinstance(manager, AsyncCallbackManagerForChainRun)
        try:
            async for event in self._aloop(run):
                if (chunk := _chunk(event, yield_actions, yield_iterations)) is not None:
                    yield chunk
            outputs = await self._aoutputs(run)
            outputs["messages"] = run.finish.messages if run.finish else []
            await manager.on_chain_end(outputs)
            final = AddableDict(await self.aprep_outputs(inputs, outputs, True))
        except BaseException as exc:
            await manager.on_chain_error(exc)
            raise
        yield self._decorate(final, run, include_run_info)

    def _callback_manager_args(self, config: RunnableConfig) -> tuple[Any, ...]:
        return (
            config.get("callbacks"),
            self.callbacks,
            self.verbose,
            config.get("tags"),
            self.tags,
            config.get("metadata"),
            self.metadata,
        )

    def _new_run(
        self, inputs: dict[str, Any], manager: CallbackManagerForChainRun | AsyncCallbackManagerForChainRun
    ) -> _Run:
        # Only the deadline and loop detection of the guard are used: iterations are counted here,
        # the classic way (a parse error is an iteration too, ``max_iterations=None`` is no limit).
        return _Run(inputs, manager, RunGuard(Budget(max_seconds=self.max_execution_time)))

    def _start(self, inputs: dict[str, Any], config: RunnableConfig) -> _Run:
        manager = CallbackManager.configure(*self._callback_manager_args(config)).on_chain_start(
            None, inputs, config.get("run_id"), name=config.get("run_name") or self.get_name()
        )
        return self._new_run(inputs, manager)

    async def _astart(self, inputs: dict[str, Any], config: RunnableConfig) -> _Run:
        manager = await AsyncCallbackManager.configure(*self._callback_manager_args(config)).on_chain_start(
            None, inputs, config.get("run_id"), name=config.get("run_name") or self.get_name()
        )
        return self._new_run(inputs, manager)

    # The loop: plan → act → observe, the classic way -------------------------------------
    def _loop(self, run: _Run) -> Iterator[Event]:
        """Plan, act and observe until the agent finishes or a limit stops the run."""
        while (stop := self._stop_before_turn(run)) is None:
            try:
                planned = self._plan(run, run.steps)
                if isinstance(planned, AgentFinish):
                    self._end(run, planned, StopReason.SUCCESS)
                    return
                if isinstance(planned, OutputParserException):
                    acted = [self._parse_error(planned, run)]
                    yield acted[0].step
                else:
                    yield from planned
                    acted = []
                    for action in planned:
                        acted.append(self._act(action, run))
                        yield acted[-1].step
            except DeadlineExceeded:
                stop = StopReason.MAX_SECONDS
                break
            ended = self._after_iteration(run, acted)
            if run.finish is None:
                yield _IterationEnd(run.steps[-len(acted) :])
            if ended is not None:
                stop = ended
                break
        if run.finish is None:
            self._end(run, self._stopped_response(run), stop)

    async def _aloop(self, run: _Run) -> AsyncIterator[Event]:
        """Async twin of ``_loop``."""
        while (stop := self._stop_before_turn(run)) is None:
            try:
                planned = await self._aplan(run, run.steps)
                if isinstance(planned, AgentFinish):
                    self._end(run, planned, StopReason.SUCCESS)
                    return
                if isinstance(planned, OutputParserException):
                    acted = [await self._aparse_error(planned, run)]
                    yield acted[0].step
                else:
                    for action in planned:
                        yield action
                    acted = []
                    for action in planned:
                        acted.append(await self._aact(action, run))
                        yield acted[-1].step
            except DeadlineExceeded:
                stop = StopReason.MAX_SECONDS
                break
            ended = self._after_iteration(run, acted)
            if run.finish is None:
                yield _IterationEnd(run.steps[-len(acted) :])
            if ended is not None:
                stop = ended
                break
        if run.finish is None:
            self._end(run, await self._astopped_response(run), stop)

    def _stop_before_turn(self, run: _Run) -> StopReason | None:
        if run.guard.deadline.expired():
            return StopReason.MAX_SECONDS
        if self.max_iterations is not None and run.iterations >= self.max_iterations:
            return StopReason.MAX_ITERATIONS
        return None

    def _after_iteration(self, run: _Run, acted: list[_Acted]) -> StopReason | None:
        """Record the iteration's steps; a lone return_direct step or a guard's stop ends the run."""
        run.steps.extend((a.step.action, a.step.observation) for a in acted)
        run.iterations += 1
        if len(acted) == 1 and acted[0].direct:
            self._end(run, AgentFinish({"output": acted[0].step.observation}, ""), StopReason.RETURN_DIRECT)
            return StopReason.RETURN_DIRECT
        return next((a.stop for a in acted if a.stop is not None), None)

    def _end(self, run: _Run, finish: AgentFinish, stop: StopReason) -> None:
        run.finish, run.stop_reason = finish, stop
        self.last_stop_reason = stop

    # Plan: call the agent ----------------------------------------------------------------
    def _agent_inputs(self, run: _Run, steps: Steps) -> dict[str, Any]:
        trim = self.trim_intermediate_steps
        if callable(trim):
            steps = trim(list(steps))
        elif trim > 0:
            steps = steps[-trim:]
        return {**run.inputs, "intermediate_steps": list(steps)}

    def _plan(self, run: _Run, steps: Steps) -> AgentFinish | list[AgentAction] | OutputParserException:
        """Ask the agent what to do, within the run's deadline; a parse failure is returned, not raised."""
        inputs, callbacks = self._agent_inputs(run, steps), run.callbacks
        try:
            output = call_with_timeout(
                lambda: self._call_agent(inputs, callbacks), run.guard.deadline.remaining()
            )
        except OutputParserException as exc:
            return exc
        except TimeoutError as exc:
            if run.guard.deadline.expired():
                raise DeadlineExceeded("time ran out while the agent was thinking") from exc
            raise
        return _decision(output)

    async def _aplan(
        self, run: _Run, steps: Steps
    ) -> AgentFinish | list[AgentAction] | OutputParserException:
        inputs, callbacks = self._agent_inputs(run, steps), run.callbacks
        try:
            output = await acall_with_timeout(
                self._acall_agent(inputs, callbacks), run.guard.deadline.remaining()
            )
        except OutputParserException as exc:
            return exc
        except TimeoutError as exc:
            if run.guard.deadline.expired():
                raise DeadlineExceeded("time ran out while the agent was thinking") from exc
            raise
        return _decision(output)

    def _call_agent(self, inputs: dict[str, Any], callbacks: Any) -> Any:
        agent = self.agent
        if not isinstance(agent, Runnable):  # a classic BaseSingleActionAgent / BaseMultiActionAgent
            steps = inputs.pop("intermediate_steps")
            return agent.plan(steps, callbacks=callbacks, **inputs)
        config: RunnableConfig = {"callbacks": callbacks}
        if not self.stream_runnable:
            return agent.invoke(inputs, config)
        output: Any = None
        for chunk in agent.stream(inputs, config):
            output = chunk if output is None else output + chunk
        return output

    async def _acall_agent(self, inputs: dict[str, Any], callbacks: Any) -> Any:
        agent = self.agent
        if not isinstance(agent, Runnable):
            steps = inputs.pop("intermediate_steps")
            return await agent.aplan(steps, callbacks=callbacks, **inputs)
        config: RunnableConfig = {"callbacks": callbacks}
        if not self.stream_runnable:
            return await agent.ainvoke(inputs, config)
        output: Any = None
        async for chunk in agent.astream(inputs, config):
            output = chunk if output is None else output + chunk
        return output

    # Act: run one action -----------------------------------------------------------------
    def _parse_error_action(self, exc: OutputParserException) -> AgentAction:
        """The classic ``_Exception`` action for a parse failure; its log is the model's text, never ``str(exc)``."""
        handler = self.handle_parsing_errors
        if handler is False:
            raise ValueError(
                "An output parsing error occurred. "
                "In order to pass this error back to the agent and have it try "
                "again, pass `handle_parsing_errors=True` to the AgentExecutor. "
                f"This is the error: {exc!s}"
            ) from exc
        if handler is True:
            observation = str(exc.observation) if exc.send_to_llm else "Invalid or incomplete response"
        elif isinstance(handler, str):
            observation = handler
        else:
            observation = handler(exc)
        return AgentAction("_Exception", observation, exc.llm_output or "")

    def _parse_error(self, exc: OutputParserException, run: _Run) -> _Acted:
        action = self._parse_error_action(exc)
        assert isinstance(run.manager, CallbackManagerForChainRun)
        run.manager.on_agent_action(action, color="green")
        observation = _EchoTool(name="_Exception").run(action.tool_input, callbacks=run.callbacks)
        return _Acted(AgentStep(action=action, observation=observation))

    async def _aparse_error(self, exc: OutputParserException, run: _Run) -> _Acted:
        action = self._parse_error_action(exc)
        assert isinstance(run.manager, AsyncCallbackManagerForChainRun)
        await run.manager.on_agent_action(action, color="green")
        observation = await _EchoTool(name="_Exception").arun(action.tool_input, callbacks=run.callbacks)
        return _Acted(AgentStep(action=action, observation=observation))

    def _unknown_verdict(self, action: AgentAction, run: _Run) -> Verdict:
        """A call to a made-up tool; called again with the same input, a loop (when loops are detected)."""
        unknown = (
            classic_invalid_tool_text(action.tool, [t.name for t in self.tools])
            if self.classic_unknown_tool
            else self._executor.unknown_tool_observation(action.tool)
        )
        if not self.detect_loops:
            return Verdict(run=False, observation=unknown, error="unknown_tool")
        return run.guard.check_unknown(len(run.steps) + 1, action.tool, action.tool_input, unknown)

    def _verdict(self, tool: str, action: AgentAction, run: _Run) -> Verdict:
        return run.guard.check(tool, action.tool_input) if self.detect_loops else ALLOW

    def _act(self, action: AgentAction, run: _Run) -> _Acted:
        assert isinstance(run.manager, CallbackManagerForChainRun)
        run.manager.on_agent_action(action, color="green")
        tool = self._executor.resolve(action.tool)
        if tool is None:
            unknown = self._unknown_verdict(action, run)
            if unknown.error != "unknown_tool":  # a repeat: answered from the guard, no tool event
                return _Acted(AgentStep(action=action, observation=unknown.observation), stop=unknown.stop)
            observation = _EchoTool(name="invalid_tool").run(unknown.observation, callbacks=run.callbacks)
            return _Acted(AgentStep(action=action, observation=observation))
        verdict = self._verdict(tool, action, run)
        if not verdict.run:
            return _Acted(AgentStep(action=action, observation=verdict.observation), stop=verdict.stop)
        outcome = self._executor.execute(
            tool, action.tool_input, callbacks=run.callbacks, deadline=run.guard.deadline
        )
        return self._ran(action, tool, outcome, run)

    async def _aact(self, action: AgentAction, run: _Run) -> _Acted:
        assert isinstance(run.manager, AsyncCallbackManagerForChainRun)
        await run.manager.on_agent_action(action, color="green")
        tool = self._executor.resolve(action.tool)
        if tool is None:
            unknown = self._unknown_verdict(action, run)
            if unknown.error != "unknown_tool":  # a repeat: answered from the guard, no tool event
                return _Acted(AgentStep(action=action, observation=unknown.observation), stop=unknown.stop)
            observation = await _EchoTool(name="invalid_tool").arun(
                unknown.observation, callbacks=run.callbacks
            )
            return _Acted(AgentStep(action=action, observation=observation))
        verdict = self._verdict(tool, action, run)
        if not verdict.run:
            return _Acted(AgentStep(action=action, observation=verdict.observation), stop=verdict.stop)
        outcome = await self._executor.aexecute(
            tool, action.tool_input, callbacks=run.callbacks, deadline=run.guard.deadline
        )
        return self._ran(action, tool, outcome, run)

    def _ran(self, action: AgentAction, tool: str, outcome: ToolOutcome, run: _Run) -> _Acted:
        """The step for a tool that ran: its raw return value, or our ``Error:`` text when it failed."""
        run.guard.record_call(len(run.steps) + 1, tool, action.tool_input, outcome.observation)
        failed = outcome.error is not None and outcome.output is None
        observation = outcome.observation if failed else outcome.output
        direct = self._executor.tools[tool].return_direct and not failed
        return _Acted(AgentStep(action=action, observation=observation), direct=direct)

    # Stopping ----------------------------------------------------------------------------
    def _final_call_steps(self, run: _Run) -> Steps | None:
        """The steps for ``"generate"``'s last call (the note after the last observation), or ``None`` for none."""
        if self.early_stopping_method != "generate" or run.guard.deadline.expired():
            return None
        steps = list(run.steps)
        if steps:
            action, observation = steps[-1]
            steps[-1] = (action, f"{observation}\n\n{FINAL_ANSWER_NOTE}")
        return steps

    def _stopped_response(self, run: _Run) -> AgentFinish:
        """At a limit: the force text, or (``"generate"``) the agent's answer from one more call."""
        steps = self._final_call_steps(run)
        if steps is not None:
            try:
                planned = self._plan(run, steps)
            except DeadlineExceeded:
                planned = None
            if isinstance(planned, AgentFinish):
                return planned
        return AgentFinish({"output": FORCE_STOP_TEXT}, "")

    async def _astopped_response(self, run: _Run) -> AgentFinish:
        steps = self._final_call_steps(run)
        if steps is not None:
            try:
                planned = await self._aplan(run, steps)
            except DeadlineExceeded:
                planned = None
            if isinstance(planned, AgentFinish):
                return planned
        return AgentFinish({"output": FORCE_STOP_TEXT}, "")

    # Inputs and outputs ------------------------------------------------------------------
    def _finish_values(self, run: _Run) -> tuple[AgentFinish, dict[str, Any]]:
        assert run.finish is not None
        outputs = dict(run.finish.return_values)
        if self.return_intermediate_steps:
            outputs["intermediate_steps"] = list(run.steps)
        return run.finish, outputs

    def _outputs(self, run: _Run) -> dict[str, Any]:
        finish, outputs = self._finish_values(run)
        assert isinstance(run.manager, CallbackManagerForChainRun)
        run.manager.on_agent_finish(finish, color="green", verbose=self.verbose)
        return outputs

    async def _aoutputs(self, run: _Run) -> dict[str, Any]:
        finish, outputs = self._finish_values(run)
        assert isinstance(run.manager, AsyncCallbackManagerForChainRun)
        await run.manager.on_agent_finish(finish, color="green", verbose=self.verbose)
        return outputs

    def _decorate(self, final: Any, run: _Run, include_run_info: bool) -> Any:
        """Add the keys the caller opted into: ``stop_reason`` and ``__run``."""
        if self.return_stop_reason and run.stop_reason is not None:
            final["stop_reason"] = run.stop_reason.value
        if include_run_info:
            final[RUN_KEY] = RunInfo(run_id=run.manager.run_id)
        return final


def _decision(output: Any) -> AgentFinish | list[AgentAction]:
    """What the agent returned, as a finish or a list of actions."""
    if isinstance(output, AgentFinish):
        return output
    if isinstance(output, AgentAction):
        return [output]
    if isinstance(output, list) and output and all(isinstance(a, AgentAction) for a in output):
        return output
    raise TypeError(
        f"the agent returned {type(output).__name__}; expected an AgentAction, a list of them, or an AgentFinish"
    )


def _chunk(event: Event, yield_actions: bool, yield_iterations: bool) -> AddableDict | None:
    """The classic stream chunk (``yield_actions``) or ``iter()`` item (``yield_iterations``) for one loop event."""
    if yield_actions and isinstance(event, AgentAction):
        return AddableDict(actions=[event], messages=event.messages)
    if yield_actions and isinstance(event, AgentStep):
        return AddableDict(steps=[event], messages=event.messages)
    if yield_iterations and isinstance(event, _IterationEnd):
        return AddableDict(intermediate_step=event.steps)
    return None
