"""How the classic executor asks its agent for a plan: ``plan`` for a classic agent object, else the
agent runnable (streamed, or invoked), as one driver request; the agent's output read as a finish
or a list of actions; what a classic agent object answers when a limit stops it and the key of a
return_direct tool's answer; and the prefixes the agent adds to a tool run's verbose output."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from functools import partial
from typing import Any

from langchain_core.agents import AgentAction, AgentFinish
from langchain_core.runnables import Runnable, RunnableConfig, RunnableSequence

from explicit_react.drivers import Call
from explicit_react.llm import has_native_async


def plan_request(
    agent: Any, inputs: dict[str, Any], callbacks: Any, timeout: float | None, *, stream: bool = True
) -> Call:
    """One call to ``agent`` for its next move: ``plan`` for a classic agent object, else the runnable
    (streamed, unless ``stream=False``). An agent whose model has no native async form is called
    synchronously in a daemon thread by the async driver when there is a time limit."""
    if not isinstance(agent, Runnable):  # a classic BaseSingleActionAgent / BaseMultiActionAgent
        inputs = dict(inputs)
        steps = inputs.pop("intermediate_steps")
        plan = partial(agent.plan, steps, callbacks=callbacks, **inputs)
        return Call(plan, partial(agent.aplan, steps, callbacks=callbacks, **inputs), timeout)
    config: RunnableConfig = {"callbacks": callbacks}
    if stream:
        sync = partial(_gather, agent.stream, inputs, config)
        async_: Callable[[], Awaitable[Any]] = partial(_agather, agent, inputs, config)
    else:
        sync, async_ = partial(agent.invoke, inputs, config), partial(agent.ainvoke, inputs, config)
    return Call(sync, async_ if timeout is None or _native_async(agent) else None, timeout)


def stopped_request(
    agent: Any,
    method: str,
    steps: list[tuple[AgentAction, Any]],
    inputs: dict[str, Any],
    timeout: float | None,
) -> Call:
    """A classic agent object's own answer at a limit, asked the classic way:
    ``agent.return_stopped_response(method, steps, **inputs)``, with no callbacks (a ``ZeroShotAgent``'s
    ``"generate"`` makes its model call there). It has no async form: async runs call it in a thread."""
    return Call(partial(agent.return_stopped_response, method, list(steps), **inputs), None, timeout)


def return_key(agent: Any) -> str:
    """The output key of a return_direct tool's answer: a classic agent object's first
    ``return_values`` (as the classic's ``_get_tool_return``), ``output`` for a runnable agent."""
    keys = [] if isinstance(agent, Runnable) else list(agent.return_values)
    return str(keys[0]) if keys else "output"


def tool_run_display(agent: Any, direct: bool = False) -> dict[str, Any]:
    """What the classic adds to a tool run's arguments for display: a classic agent object's
    ``tool_run_logging_kwargs()`` (``observation_prefix``, ``llm_prefix``; none for a runnable agent),
    with an empty ``llm_prefix`` after a return_direct tool."""
    logging = {} if isinstance(agent, Runnable) else dict(agent.tool_run_logging_kwargs())
    if direct:
        logging["llm_prefix"] = ""
    return logging


def decision(output: Any) -> AgentFinish | list[AgentAction]:
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


def _gather(stream: Callable[..., Iterator[Any]], inputs: dict[str, Any], config: RunnableConfig) -> Any:
    output: Any = None
    for chunk in stream(inputs, config):
        output = chunk if output is None else output + chunk
    return output


async def _agather(agent: Runnable[Any, Any], inputs: dict[str, Any], config: RunnableConfig) -> Any:
    chunks: AsyncIterator[Any] = agent.astream(inputs, config)
    output: Any = None
    async for chunk in chunks:
        output = chunk if output is None else output + chunk
    return output


def _native_async(agent: Runnable[Any, Any]) -> bool:
    """False when a model in the agent runnable has only a sync implementation."""
    steps = agent.steps if isinstance(agent, RunnableSequence) else [agent]
    return all(has_native_async(step) for step in steps)
