"""The classic ``AgentExecutor``'s run, written once as a step machine: plan → act → observe.

``ClassicLoop`` holds the decisions: ask the agent runnable for its plan (``classic_agent``: one more kind of request
to the driver), run each action through our ``ToolExecutor``, watch the run with our ``RunGuard``
(loop detection) and ``Deadline`` (a hard time limit), and stop the classic way at a limit. The
classic run's edges (memory, the chain's callback events, the output dict or stream chunks) are
part of the same machine, so ``invoke``/``ainvoke`` and ``stream``/``astream`` only pick a driver.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, Union

from langchain_core.agents import AgentAction, AgentFinish, AgentStep
from langchain_core.callbacks import (
    AsyncCallbackManager,
    AsyncCallbackManagerForChainRun,
    CallbackManager,
    CallbackManagerForChainRun,
    Callbacks,
)
from langchain_core.exceptions import OutputParserException
from langchain_core.outputs import RunInfo
from langchain_core.runnables import Runnable, RunnableConfig, ensure_config
from langchain_core.runnables.utils import AddableDict
from langchain_core.tools import BaseTool
from langchain_core.utils.input import get_color_mapping

from explicit_react.classic_agent import decision, plan_request, return_key, stopped_request, tool_run_display
from explicit_react.classic_chain import RUN_KEY, classic_invalid_tool_text
from explicit_react.classic_chunks import FinalChunk, chunks
from explicit_react.classic_tools import echo_call, unknown_tool_call
from explicit_react.deadline import DeadlineExceeded
from explicit_react.drivers import Call, Machine, Notify, notify_closed
from explicit_react.executor import ToolExecutor, ToolOutcome, encodable, tool_content
from explicit_react.policy import ALLOW, Budget, RunGuard, Verdict
from explicit_react.types import StopReason

FORCE_STOP_TEXT = "Agent stopped due to iteration limit or time limit."
"""The classic answer when ``early_stopping_method="force"`` ends a run at a limit."""
FINAL_ANSWER_NOTE = "I now need to return a final answer based on the previous steps:"
"""The classic note for ``early_stopping_method="generate"``'s last call."""

AgentDecision = Union[AgentAction, AgentFinish]  # noqa: UP007 (a runtime generic argument)
Steps = list[tuple[AgentAction, Any]]
Output = Literal["invoke", "stream", "iter"]
"""What a run gives back: the output dict (``invoke``), or chunks as it goes (``stream``: actions and
steps, then the output; ``iter``: the same and an ``intermediate_step`` chunk after each iteration)."""


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
    colors: dict[str, str] = field(default_factory=dict)
    """A colour per tool name, for verbose output (the classic's ``get_color_mapping``)."""
    steps: Steps = field(default_factory=list)
    iterations: int = 0
    finish: AgentFinish | None = None
    stop_reason: StopReason | None = None

    @property
    def callbacks(self) -> Any:
        return self.manager.get_child()


class ClassicLoop:
    """The classic executor's decisions; ``AgentExecutor`` supplies the options below."""

    agent: Any
    tools: Sequence[BaseTool]
    _executor: ToolExecutor
    max_iterations: int | None
    max_execution_time: float | None
    early_stopping_method: Literal["force", "generate"]
    handle_parsing_errors: bool | str | Callable[[OutputParserException], str]
    trim_intermediate_steps: int | Callable[[Steps], Steps]
    memory: Any
    classic_unknown_tool: bool
    callbacks: Callbacks
    verbose: bool
    tags: list[str] | None
    metadata: dict[str, Any] | None
    stream_runnable: bool
    detect_loops: bool
    return_intermediate_steps: bool
    return_stop_reason: bool
    last_stop_reason: StopReason | None

    if TYPE_CHECKING:  # provided by ClassicChainAPI and Runnable

        def prep_inputs(self, inputs: Any) -> dict[str, Any]: ...

        async def aprep_inputs(self, inputs: Any) -> dict[str, Any]: ...

        def prep_outputs(
            self, inputs: dict[str, Any], outputs: dict[str, Any], return_only_outputs: bool = False
        ) -> dict[str, Any]: ...

        async def aprep_outputs(
            self, inputs: dict[str, Any], outputs: dict[str, Any], return_only_outputs: bool = False
        ) -> dict[str, Any]: ...

        def get_name(self, suffix: str | None = None, *, name: str | None = None) -> str: ...

    # One run, from the inputs to the output -----------------------------------------------
    def _session(
        self,
        input: Any,
        config: RunnableConfig | None,
        output: Output,
        *,
        only_outputs: bool = False,
        include_run_info: bool = False,
        prepared: bool = False,
    ) -> Machine[Any]:
        """The whole run: memory, the chain's callback events, the loop, the output (returned for
        ``invoke``, yielded as the last chunk otherwise). ``prepared``: ``input`` is the inputs as
        ``prep_inputs`` made them (the iterator's, memory loaded once), to use as they are."""
        config = ensure_config(config)
        inputs = (
            input
            if prepared
            else (yield Call(partial(self.prep_inputs, input), partial(self.aprep_inputs, input)))
        )
        args = (config.get("callbacks"), self.callbacks, self.verbose, config.get("tags"), self.tags,
                config.get("metadata"), self.metadata)  # fmt: skip
        start = (None, inputs, config.get("run_id"))
        name = config.get("run_name") or self.get_name()
        manager = yield Call(
            partial(CallbackManager.configure(*args).on_chain_start, *start, name=name),
            partial(AsyncCallbackManager.configure(*args).on_chain_start, *start, name=name),
        )
        # Only the deadline and loop detection of the guard are used: iterations are counted here,
        # the classic way (a parse error is an iteration too, ``max_iterations=None`` is no limit).
        run = _Run(inputs, manager, RunGuard(Budget(max_seconds=self.max_execution_time)))
        run.colors = get_color_mapping([t.name for t in self.tools], excluded_colors=["green", "red"])
        try:
            yield from self._loop(run, output)
            assert run.finish is not None
            outputs = dict(run.finish.return_values)
            if self.return_intermediate_steps:
                outputs["intermediate_steps"] = list(run.steps)
            finished = {"color": "green", "verbose": self.verbose}
            yield Notify((manager,), "on_agent_finish", (run.finish,), finished)
            if output != "invoke":
                outputs["messages"] = run.finish.messages
                yield Notify((manager,), "on_chain_end", (outputs,))
            only = only_outputs or output != "invoke"
            final = yield Call(
                partial(self.prep_outputs, inputs, outputs, only),
                partial(self.aprep_outputs, inputs, outputs, only),
            )
            if output == "invoke":
                yield Notify((manager,), "on_chain_end", (outputs,))
        except GeneratorExit as exc:  # the caller stopped reading the stream: the chain run ends here
            notify_closed(Notify((manager,), "on_chain_error", (exc,)))
            raise
        except BaseException as exc:
            yield Notify((manager,), "on_chain_error", (exc,))
            raise
        if self.return_stop_reason and run.stop_reason is not None:
            final["stop_reason"] = run.stop_reason.value
        if include_run_info:
            final[RUN_KEY] = RunInfo(run_id=manager.run_id)
        if output == "invoke":
            return final
        yield FinalChunk(final) if output == "iter" else AddableDict(final)  # stream: the classic's type
        return None

    # The loop: plan → act → observe, the classic way -------------------------------------
    def _loop(self, run: _Run, output: Output) -> Machine[None]:
        """Plan, act and observe until the agent finishes or a limit stops the run."""
        while (stop := self._stop_before_turn(run)) is None:
            acted: list[_Acted] = []
            try:
                planned = yield from self._plan(run, run.steps)
                if isinstance(planned, AgentFinish):
                    self._end(run, planned, StopReason.SUCCESS)
                    return
                if isinstance(planned, OutputParserException):
                    acted.append((yield from self._parse_error(planned, run)))
                    yield from chunks(output, acted[0].step)
                else:
                    yield from chunks(output, *planned)
                    for action in planned:
                        acted.append((yield from self._act(action, run)))
                        yield from chunks(output, acted[-1].step)
            except DeadlineExceeded:
                # The actions that finished before the time ran out are steps (stream has shown them).
                run.steps.extend((a.step.action, a.step.observation) for a in acted)
                if acted and output == "iter":
                    yield AddableDict(intermediate_step=run.steps[-len(acted) :])
                stop = StopReason.MAX_SECONDS
                break
            ended = self._after_iteration(run, acted)
            if run.finish is None and output == "iter":
                yield AddableDict(intermediate_step=run.steps[-len(acted) :])
            if ended is not None:
                stop = ended
                break
        if run.finish is None:
            self._end(run, (yield from self._stopped_response(run)), stop)

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
            direct = AgentFinish({return_key(self.agent): acted[0].step.observation}, "")
            self._end(run, direct, StopReason.RETURN_DIRECT)
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

    def _plan(
        self, run: _Run, steps: Steps
    ) -> Machine[AgentFinish | list[AgentAction] | OutputParserException]:
        """Ask the agent what to do, within the run's deadline; a parse failure is returned, not raised."""
        timeout = run.guard.deadline.remaining()
        try:
            inputs = self._agent_inputs(run, steps)
            output = yield plan_request(
                self.agent, inputs, run.callbacks, timeout, stream=self.stream_runnable
            )
        except OutputParserException as exc:
            return exc
        except TimeoutError as exc:
            if run.guard.deadline.expired():
                raise DeadlineExceeded("time ran out while the agent was thinking") from exc
            raise
        return decision(output)

    # Act: run one action -----------------------------------------------------------------
    def _parse_error_action(self, exc: OutputParserException) -> AgentAction:
        """The classic ``_Exception`` action for a parse failure; its log is the model's text when the
        exception carries it (``llm_output``, an empty reply's ``""`` too: the scratchpad shows the
        reply as it was, not LangChain's troubleshooting text), else ``str(exc)`` as in the classic."""
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
        log = exc.llm_output if exc.llm_output is not None else str(exc)
        return AgentAction("_Exception", observation, log)

    def _parse_error(self, exc: OutputParserException, run: _Run) -> Machine[_Acted]:
        action = self._parse_error_action(exc)
        yield Notify((run.manager,), "on_agent_action", (action,), {"color": "green"})
        shown = self._shown(None)
        observation = yield echo_call("_Exception", action.tool_input, run.callbacks, shown)  # type: ignore[arg-type]
        return _Acted(AgentStep(action=action, observation=observation))

    def _unknown_verdict(self, action: AgentAction, run: _Run) -> Verdict:
        """A call to a made-up tool; called again with the same input, a loop (when loops are detected)."""
        unknown = (
            classic_invalid_tool_text(action.tool, [t.name for t in self._executor.tools.values()])
            if self.classic_unknown_tool
            else self._executor.unknown_tool_observation(action.tool)
        )
        if not self.detect_loops:
            return Verdict(run=False, observation=unknown, error="unknown_tool")
        return run.guard.check_unknown(len(run.steps) + 1, action.tool, action.tool_input, unknown)

    def _act(self, action: AgentAction, run: _Run) -> Machine[_Acted]:
        yield Notify((run.manager,), "on_agent_action", (action,), {"color": "green"})
        tool = self._executor.resolve(action.tool)
        if tool is None:
            unknown = self._unknown_verdict(action, run)
            if unknown.error != "unknown_tool":  # a repeat: answered from the guard, no tool event
                yield from self._show(run, unknown.observation, self._shown(None))
                return _Acted(AgentStep(action=action, observation=unknown.observation), stop=unknown.stop)
            names = [t.name for t in self._executor.tools.values()]
            observation = yield unknown_tool_call(
                action.tool, names, unknown.observation, run.callbacks, self._shown(None)
            )
            return _Acted(AgentStep(action=action, observation=observation))
        shown = self._shown(run.colors.get(tool), direct=self._executor.tools[tool].return_direct)
        verdict = run.guard.check(tool, action.tool_input) if self.detect_loops else ALLOW
        if not verdict.run:
            yield from self._show(run, verdict.observation, shown)
            return _Acted(AgentStep(action=action, observation=verdict.observation), stop=verdict.stop)
        outcome = yield from self._executor.calls(
            tool,
            action.tool_input,
            callbacks=run.callbacks,
            deadline=run.guard.deadline,
            run_kwargs=shown,
            artifact=False,  # the classic's call: no call id, so callbacks and verbose see the content
        )
        acted = self._ran(action, tool, outcome, run)
        if outcome.output is None and outcome.error is not None:  # no on_tool_end showed it
            yield from self._show(run, acted.step.observation, shown)
        return acted

    def _shown(self, color: str | None, direct: bool = False) -> dict[str, Any]:
        return {"verbose": self.verbose, "color": color, **tool_run_display(self.agent, direct)}

    @staticmethod
    def _show(run: _Run, observation: Any, shown: dict[str, Any]) -> Machine[None]:
        """An observation no tool run reported (a refused repeat, a tool that failed or was refused):
        sent as ``on_text`` so verbose output shows it the way ``on_tool_end`` shows the others."""
        prefix, suffix = shown.get("observation_prefix"), shown.get("llm_prefix")
        text = (
            ("" if prefix is None else f"\n{prefix}")
            + str(observation)
            + ("" if suffix is None else f"\n{suffix}")
        )
        yield Notify(
            (run.manager,), "on_text", (text,), {"color": shown["color"], "verbose": shown["verbose"]}
        )

    def _ran(self, action: AgentAction, tool: str, outcome: ToolOutcome, run: _Run) -> _Acted:
        """The step for a tool that ran: its raw return value, or our ``Error:`` text when it failed."""
        run.guard.record_call(
            len(run.steps) + 1, tool, action.tool_input, outcome.observation, outcome.ran, outcome.retryable
        )
        failed = outcome.error is not None and outcome.output is None
        observation = (
            outcome.observation if failed else tool_content(self._executor.tools[tool], outcome.output)
        )
        if isinstance(observation, str):  # the next prompt must be encodable (a Latin-1 file's text)
            observation = encodable(observation)
        direct = self._executor.tools[tool].return_direct and not failed
        return _Acted(AgentStep(action=action, observation=observation), direct=direct)

    # Stopping ----------------------------------------------------------------------------
    def _stopped_response(self, run: _Run) -> Machine[AgentFinish]:
        """At a limit: a classic agent object's own answer; for an agent runnable the force text, or
        (``"generate"``) the agent's answer from one more call (with the classic note after the last
        observation)."""
        if not isinstance(self.agent, Runnable):
            return (yield from self._agents_stopped_response(run))
        if self.early_stopping_method == "generate" and not run.guard.deadline.expired():
            steps = list(run.steps)
            if steps:
                action, observation = steps[-1]
                steps[-1] = (action, f"{observation}\n\n{FINAL_ANSWER_NOTE}")
            try:
                planned = yield from self._plan(run, steps)
            except DeadlineExceeded:
                planned = None
            if isinstance(planned, AgentFinish):
                return planned
        return AgentFinish({"output": FORCE_STOP_TEXT}, "")

    def _agents_stopped_response(self, run: _Run) -> Machine[AgentFinish]:
        """A classic agent object's ``return_stopped_response``, as the classic calls it. Once the time
        is up no model call is made (as for a runnable): the agent is asked for its ``"force"`` answer
        instead of ``"generate"``, also when a ``"generate"`` call runs out of the time left."""
        deadline = run.guard.deadline
        if self.early_stopping_method != "force" and not deadline.expired():
            method, timeout = self.early_stopping_method, deadline.remaining()
            try:
                finish: AgentFinish = yield stopped_request(
                    self.agent, method, run.steps, run.inputs, timeout
                )
                return finish
            except TimeoutError:
                if not deadline.expired():
                    raise
        forced: AgentFinish = yield stopped_request(self.agent, "force", run.steps, run.inputs, None)
        return forced
