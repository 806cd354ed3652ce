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

import contextlib
import logging
import re
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from string import Template
from typing import Any, Literal

from langchain_core.agents import AgentAction, AgentFinish
from langchain_core.callbacks import Callbacks
from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseLanguageModel
from langchain_core.output_parsers import BaseOutputParser
from langchain_core.prompts import BasePromptTemplate, ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableConfig, RunnablePassthrough
from langchain_core.runnables.utils import AddableDict
from langchain_core.tools import BaseTool
from langchain_core.tools.render import ToolsRenderer, render_text_description

from explicit_react import drivers
from explicit_react.classic import (
    FINAL_ANSWER_NOTE,
    FORCE_STOP_TEXT,
    AgentDecision,
    ClassicLoop,
    Steps,
)
from explicit_react.classic_chain import (
    RUN_KEY,
    ClassicChainAPI,
    ClassicSettings,
    chain_callbacks,
    chain_verbose,
    check_allowed_tools,
)
from explicit_react.classic_iterator import AgentExecutorIterator
from explicit_react.errors import ParseError
from explicit_react.executor import ToolExecutor, as_tool, tool_spec
from explicit_react.parser import parse
from explicit_react.prompt import load_template
from explicit_react.tool_input import agent_tool_input, too_deep_text
from explicit_react.transport import checked
from explicit_react.types import FinalAnswer, StopReason

__all__ = [
    "FINAL_ANSWER_NOTE",
    "FORCE_STOP_TEXT",
    "RUN_KEY",
    "AgentDecision",
    "AgentExecutor",
    "ReActOutputParser",
    "Steps",
    "create_react_agent",
    "default_prompt",
    "format_log_to_str",
]


logger = logging.getLogger(__name__)


# -- The parser -------------------------------------------------------------------------------------
class ReActOutputParser(BaseOutputParser[AgentDecision]):
    """Our ``parse`` as a LangChain agent output parser: a drop-in for ``ReActSingleInputOutputParser``.

    It returns ``AgentAction`` (a dict ``tool_input`` when the model wrote a JSON object) or
    ``AgentFinish``; a reply it cannot read raises ``OutputParserException`` whose ``observation``
    is our feedback for the model (``send_to_llm=True``).
    """

    def parse(self, text: str) -> AgentAction | AgentFinish:
        """Read one model reply."""
        text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")  # no lone surrogates
        try:
            decision = parse(text)
            problem = checked(decision)  # an empty Final Answer, an input nested too deeply
        except ParseError as exc:
            problem = exc.feedback
        except RecursionError:
            problem = "Error: your Action Input is nested too deeply. Send plain text or a flat JSON object."
        if problem is not None:
            raise OutputParserException(
                f"Could not parse LLM output: `{text}`",
                observation=problem,
                llm_output=text,
                send_to_llm=True,
            )
        log = text if text.rstrip() == decision.log else decision.log  # the text, unless we cut it
        if isinstance(decision, FinalAnswer):
            return AgentFinish({"output": decision.answer}, log)
        return AgentAction(decision.tool, agent_tool_input(decision.tool_input), log)

    def get_format_instructions(self) -> str:
        """The reply format the parser reads."""
        return Template(load_template("format")).safe_substitute(tool_names="...").strip()

    @property
    def _type(self) -> str:
        return "explicit-react"


# -- The agent runnable -----------------------------------------------------------------------------
def format_log_to_str(steps: Sequence[tuple[AgentAction, Any]]) -> str:
    """The classic ReAct scratchpad: each action's log, then its observation, then ``Thought:``."""
    return "".join(
        f"{action.log}\nObservation: {_str(observation)}\nThought: " for action, observation in steps
    )


def _str(observation: Any) -> str:
    """``str(observation)``, as classic does, but a value too deeply nested for ``str`` says so."""
    try:
        return str(observation)
    except RecursionError:
        return too_deep_text(observation)


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
CLASSIC_STEP_METHODS = frozenset(
    {
        "_take_next_step",
        "_atake_next_step",
        "_iter_next_step",
        "_aiter_next_step",
        "_perform_agent_action",
        "_aperform_agent_action",
        "_should_continue",
        "_return",
        "_areturn",
        "_get_tool_return",
        "_prepare_intermediate_steps",
        "_consume_next_step",
    }
)
"""The classic executor's private steps, which a classic subclass overrides and this executor never calls."""


class AgentExecutor(ClassicLoop, ClassicChainAPI, Runnable[dict[str, Any], dict[str, Any]]):
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

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass may not override the classic executor's private steps: this executor never
        calls them, and an override the run ignored could let through what it means to stop (a
        ``_perform_agent_action`` that asks a human to approve each call)."""
        super().__init_subclass__(**kwargs)
        ignored = sorted(name for name in CLASSIC_STEP_METHODS if hasattr(cls, name))  # a mixin's too
        if ignored:
            raise TypeError(
                f"{cls.__name__} overrides {', '.join(ignored)}, which explicit_react's AgentExecutor never "
                "calls: the override would be ignored. To approve or refuse tool calls, wrap the tools "
                "(or give the agent only the tools it may call); to stop early, use max_iterations, "
                "max_execution_time or a callback handler that raises"
            )

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
        settings = ClassicSettings(
            return_intermediate_steps=return_intermediate_steps,
            max_iterations=max_iterations,
            max_execution_time=max_execution_time,
            early_stopping_method=early_stopping_method,
            handle_parsing_errors=handle_parsing_errors,
            trim_intermediate_steps=trim_intermediate_steps,
            verbose=verbose,
            tags=tags,
            metadata=metadata,
            name=name,
            stream_runnable=stream_runnable,
            detect_loops=detect_loops,
            return_stop_reason=return_stop_reason,
            classic_unknown_tool=classic_unknown_tool,
        )
        if settings.early_stopping_method not in ("force", "generate"):
            raise ValueError(
                "early_stopping_method should be one of `force` or `generate`, "
                f"got {settings.early_stopping_method}"
            )
        if settings.max_iterations is not None and settings.max_iterations < 0:
            raise ValueError("max_iterations must not be negative")
        if settings.max_execution_time is not None and settings.max_execution_time < 0:
            raise ValueError("max_execution_time must not be negative")
        self.agent = agent
        self.tools = tools
        check_allowed_tools(agent, self.tools)
        for field, value in settings:
            setattr(self, field, value)
        self.memory = memory
        self.callbacks = chain_callbacks(callbacks, callback_manager)
        self.verbose = chain_verbose(settings.verbose)
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
        self._executed: tuple[tuple[int, ...], ToolExecutor] | None = None

    @property
    def _executor(self) -> ToolExecutor:  # type: ignore[override]
        """The executor of the tools as the list holds them now: a tool appended to ``tools`` after
        construction, which the classic allows, runs from the next action on."""
        key = tuple(map(id, self._tools))
        if self._executed is None or self._executed[0] != key:
            self._executed = (key, ToolExecutor(_last_of_each_name([as_tool(t) for t in self._tools])))
        return self._executed[1]

    # Entry points: each hands the run (classic.ClassicLoop._session) to a driver ---------------
    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> dict[str, Any]:
        """Run to the end; returns ``{**inputs, "output": ...}`` (plus ``intermediate_steps`` if asked)."""
        return drivers.run(self._session(input, config, "invoke", **_invoke_options(kwargs)))

    async def ainvoke(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        """Async ``invoke``."""
        return await drivers.arun(self._session(input, config, "invoke", **_invoke_options(kwargs)))

    def stream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[AddableDict]:
        """Yield ``actions`` and ``steps`` chunks as they happen, then the ``output`` chunk (all with
        ``messages``); ``include_run_info=True`` adds ``__run`` to it, as in the classic."""
        yield from drivers.drive(self._session(input, config, "stream", **_stream_options(**kwargs)))

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[AddableDict]:
        """Async ``stream``."""
        run = self._session(input, config, "stream", **_stream_options(**kwargs))
        # Closed with this stream: its chain run ends before ``aclose()`` returns, not when collected.
        async with contextlib.aclosing(drivers.adrive(run)) as chunks:
            async for chunk in chunks:
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


def _last_of_each_name(tools: list[BaseTool]) -> list[BaseTool]:
    """One tool per name, the last given under it (the classic's ``name_to_tool_map``), in the order
    the names first appear. A name given twice is logged, not warned: a warning would stop apps that
    run with warnings as errors, which the classic runs."""
    by_name = {t.name: t for t in tools}
    if len(by_name) != len(tools):
        names = [t.name for t in tools]
        for name in sorted({n for n in names if names.count(n) > 1}):
            logger.warning(
                "tool name %r is given more than once; the last tool with it is used (as in langchain_classic)",
                name,
            )
    return list(by_name.values())


def _stream_options(*, include_run_info: bool = False) -> dict[str, bool]:
    """``stream``'s keyword arguments: those the classic's stream passes to its iterator (any other
    raises ``TypeError`` there, as in the classic)."""
    return {"include_run_info": bool(include_run_info)}


def _invoke_options(kwargs: dict[str, Any]) -> dict[str, bool]:
    return {
        "only_outputs": bool(kwargs.get("return_only_outputs", False)),
        "include_run_info": bool(kwargs.get("include_run_info", False)),
    }
