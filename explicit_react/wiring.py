"""The agent's parts built from its constructor options: the tools and their executor, the transport
of a mode, the two model adapters, the run listeners.

``ExplicitReActAgent.__init__`` checks its other options (``options``) and sets these parts on the loop;
the tools, ``allowed_tools`` and the listeners are checked here, as their parts are built.
A part that needs more than the core (the default tools, ``two_phase``, ``display``, ``trace``) is
imported only when an option asks for it, so importing the package imports none of them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any, Literal

from langchain_core.tools import BaseTool

from explicit_react import options
from explicit_react.errors import ConfigurationError
from explicit_react.executor import ToolExecutor, as_tool
from explicit_react.llm import ModelAdapter
from explicit_react.prompt import ReActPrompt
from explicit_react.scratchpad import ScratchpadLimits
from explicit_react.transport import NativeToolCalling, TextProtocol, Transport


def tool_executor(
    tools: Sequence[BaseTool | Callable[..., Any]] | None, allowed_tools: Collection[str] | None
) -> tuple[list[BaseTool], frozenset[str] | None, ToolExecutor]:
    """The agent's tools (``None``: web search and Python), the names it may call (``None``: every
    tool), and the executor that runs them; an allowed name that no tool has is a ``ConfigurationError``."""
    if tools is None:
        from explicit_react.tools import default_tools

        tools = default_tools()
    agent_tools = [as_tool(t) for t in options.tool_list(tools)]
    allowed = options.tool_names("allowed_tools", allowed_tools)
    executor = ToolExecutor(agent_tools, suggest=[t.name for t in shown(agent_tools, allowed)])
    if allowed is not None and (unknown := allowed - set(executor.tools)):
        raise ConfigurationError(f"allowed_tools names tools that do not exist: {sorted(unknown)}")
    return agent_tools, allowed, executor


def shown(tools: Sequence[BaseTool], allowed: frozenset[str] | None) -> list[BaseTool]:
    """The tools the model is shown: all of them, or the allowed ones."""
    return [t for t in tools if allowed is None or t.name in allowed]


def transport_for(
    mode: Literal["text", "tool_calling", "two_phase"],
    prompt: ReActPrompt,
    limits: ScratchpadLimits,
    *,
    constrain_local: bool,
) -> Transport:
    """How each turn is put to the model in ``mode``: the prompt and the parser (``"text"``), the
    model's native tool calls (``"tool_calling"``), or a thought and then a tool call (``"two_phase"``).
    A system prompt of one's own is the text mode's: in another mode it would be dropped unseen."""
    if prompt.custom_system and mode != "text":
        raise ConfigurationError(
            "prompt= is the system prompt of mode='text' (its ${format} is the text reply format); "
            f"mode={mode!r} asks with the model's own tool calls and its own prompt "
            "(prompts/tool_calling.txt): use mode='text' for a prompt of your own"
        )
    if mode == "text":
        return TextProtocol(prompt, limits, constrain=constrain_local)
    if mode == "tool_calling":
        return NativeToolCalling(limits)
    from explicit_react.two_phase import TwoPhase

    return TwoPhase(limits)


def model_adapters(
    llm: Any,
    transport: Transport,
    tools: Sequence[BaseTool],
    *,
    timeout: float | None,
    max_retries: int,
    retry_backoff: float,
) -> tuple[ModelAdapter, ModelAdapter]:
    """The model of each turn (bound to the ``tools`` it is shown, as ``transport`` binds them) and
    the model of the tool-free call at a limit, each with the transport's stop sequences, the
    timeout and the retries."""
    bound = transport.bind(llm, tools)
    model, final_model = (
        ModelAdapter(
            m,
            stop=transport.stop,
            timeout=timeout,
            max_retries=max_retries,
            retry_backoff=retry_backoff,
        )
        for m in (bound, transport.bind_final(llm))
    )
    return model, final_model


def listeners(given: Any, *, verbose: bool, trace_path: str | Path | None) -> list[Any]:
    """The run listeners: those ``given`` (``options.listeners`` checks them), then a ``TracePrinter``
    for ``verbose=True`` and a ``JsonlTrace`` writing to ``trace_path``."""
    chosen: list[Any] = options.listeners("listeners", given)
    options.instance("trace_path", trace_path, (str, os.PathLike), "a file path (a string or a Path)")
    if verbose:
        from explicit_react.display import TracePrinter

        chosen.append(TracePrinter())
    if trace_path is not None:
        from explicit_react.trace import JsonlTrace

        chosen.append(JsonlTrace(trace_path))
    return chosen
