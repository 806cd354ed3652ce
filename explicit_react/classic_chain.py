"""The classic ``Chain`` surface of our AgentExecutor: langchain_classic's calls, keys and arguments, same errors.

``langchain_classic``'s AgentExecutor is a ``Chain``, and apps (and tutorials) still call it the
Chain way: ``executor({"input": ...})``, ``acall``, ``run("a question")``, ``arun``, ``apply``,
``lookup_tool``, ``input_keys`` / ``output_keys``, ``prep_inputs`` / ``prep_outputs``. ``ClassicChainAPI``
gives our executor those members, each a thin layer over ``invoke`` / ``ainvoke``. The helpers
below it read the classic constructor arguments (``ClassicSettings`` converts them as the classic's
pydantic model does; ``callback_manager`` and ``verbose=None`` for ``initialize_agent``'s sake) and
check a classic agent's allowed tools.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.callbacks import Callbacks
from langchain_core.exceptions import OutputParserException
from langchain_core.globals import get_verbose
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool
from pydantic import BaseModel, ConfigDict, RootModel

DEFAULT_INPUT_KEY = "input"
"""The input key a single (non-dict) input goes to when the agent does not tell us its keys."""
DEFAULT_OUTPUT_KEYS = ("output",)
"""The output keys of a runnable agent (what our prompt's and LangChain's runnable agents return)."""
INTERMEDIATE_STEPS = "intermediate_steps"
RUN_KEY = "__run"
"""The output key of ``RunInfo`` when ``include_run_info=True`` (as in ``langchain_classic``)."""


def classic_invalid_tool_text(requested: str, available: Sequence[str]) -> str:
    """langchain_classic's observation for an unknown tool name (its ``InvalidTool``), word for word."""
    return f"{requested} is not a valid tool, try one of [{', '.join(available)}]."


class ClassicSettings(BaseModel):
    """The executor's typed constructor arguments, converted as the classic's pydantic model converts
    them (lax mode): ``"2"`` is 2, ``"false"`` is False, ``30`` is 30.0 (settings read from environment
    variables or config files arrive as strings). A value that does not convert raises pydantic's
    ``ValidationError`` at construction, titled ``AgentExecutor`` as the classic's. Our own switches
    (the last three) are converted the same way."""

    model_config = ConfigDict(title="AgentExecutor", arbitrary_types_allowed=True)

    return_intermediate_steps: bool = False
    max_iterations: int | None = 15
    max_execution_time: float | None = None
    early_stopping_method: str = "force"
    handle_parsing_errors: bool | str | Callable[[OutputParserException], str] = False
    trim_intermediate_steps: int | Callable[[list[tuple[Any, Any]]], list[tuple[Any, Any]]] = -1
    verbose: bool | None = None
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    name: str | None = None
    stream_runnable: bool = True
    detect_loops: bool = True
    return_stop_reason: bool = False
    classic_unknown_tool: bool = False


def chain_callbacks(callbacks: Callbacks, callback_manager: Any) -> Callbacks:
    """The callbacks, taking the deprecated ``callback_manager`` argument the way ``Chain`` does."""
    if callback_manager is None:
        return callbacks
    if callbacks is not None:
        raise ValueError(
            "Cannot specify both callback_manager and callbacks. "
            "callback_manager is deprecated, callbacks is the preferred parameter to pass in."
        )
    warnings.warn(
        "callback_manager is deprecated. Please use callbacks instead.", DeprecationWarning, stacklevel=4
    )
    return callback_manager


def chain_verbose(verbose: bool | None) -> bool:
    """``verbose=None`` means LangChain's global setting (``langchain_core.globals.set_verbose``), as in ``Chain``."""
    return get_verbose() if verbose is None else verbose


def check_allowed_tools(agent: Any, tools: Sequence[BaseTool]) -> None:
    """A classic agent that names its tools (``get_allowed_tools()``) must be given exactly those."""
    get_allowed = None if isinstance(agent, Runnable) else getattr(agent, "get_allowed_tools", None)
    allowed = get_allowed() if get_allowed is not None else None
    if allowed is not None and set(allowed) != {t.name for t in tools}:
        raise ValueError(
            f"Allowed tools ({allowed}) different than provided tools ({[t.name for t in tools]})"
        )


def _config(
    callbacks: Callbacks, tags: list[str] | None, metadata: dict[str, Any] | None, run_name: str | None
) -> RunnableConfig:
    config: RunnableConfig = {}
    if callbacks is not None:
        config["callbacks"] = callbacks
    if tags is not None:
        config["tags"] = tags
    if metadata is not None:
        config["metadata"] = metadata
    if run_name is not None:
        config["run_name"] = run_name
    return config


def _run_input(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``run``'s inputs: one positional argument, or keyword arguments; the classic errors otherwise."""
    if args and not kwargs:
        if len(args) != 1:
            raise ValueError("`run` supports only one positional argument.")
        return args[0]
    if kwargs and not args:
        return kwargs
    if not args:
        raise ValueError(
            "`run` supported with either positional arguments or keyword arguments, but none were provided."
        )
    raise ValueError(
        "`run` supported with either positional arguments or keyword arguments"
        f" but not both. Got args: {args} and kwargs: {kwargs}."
    )


class ClassicChainAPI:
    """The ``Chain`` members of langchain_classic's AgentExecutor, over ``invoke`` / ``ainvoke``.

    For a classic agent (``ZeroShotAgent`` and the others with ``plan``) the input and output keys
    are the agent's, as in the classic. For a runnable agent the classic has none (so its ``run``
    always refuses and a string input raises ``StopIteration``); here they are the runnable's input
    variables and ``["output"]``, so ``run("a question")`` works.
    """

    agent: Any
    tools: list[BaseTool]
    memory: Any
    return_intermediate_steps: bool

    if TYPE_CHECKING:  # provided by the executor

        def invoke(
            self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
        ) -> dict[str, Any]: ...

        async def ainvoke(
            self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
        ) -> dict[str, Any]: ...

    # Keys ------------------------------------------------------------------------------------
    @property
    def input_keys(self) -> list[str]:
        """The input variables the agent needs (without ``intermediate_steps``)."""
        if not isinstance(self.agent, Runnable):
            return list(self.agent.input_keys)
        schema = self.agent.get_input_schema()
        fields = (
            {} if issubclass(schema, RootModel) else getattr(schema, "model_fields", {})
        )  # RootModel: no names
        return [name for name in fields if name not in (INTERMEDIATE_STEPS, "agent_scratchpad")]

    @property
    def output_keys(self) -> list[str]:
        """The keys of the result: the agent's return values, then ``intermediate_steps`` if asked."""
        keys = list(DEFAULT_OUTPUT_KEYS if isinstance(self.agent, Runnable) else self.agent.return_values)
        return [*keys, INTERMEDIATE_STEPS] if self.return_intermediate_steps else keys

    @property
    def _run_output_key(self) -> str:
        keys = self.output_keys
        if len(keys) != 1:
            raise ValueError(f"`run` not supported when there is not exactly one output key. Got {keys}.")
        return keys[0]

    @property
    def _action_agent(self) -> Any:
        """The agent (classic code reads ``executor._action_agent``; the classic wraps runnables, we do not)."""
        return self.agent

    def lookup_tool(self, name: str) -> BaseTool:
        """The tool with exactly this name (``KeyError`` if there is none, as in the classic)."""
        return {tool.name: tool for tool in self.tools}[name]

    # Inputs and outputs ----------------------------------------------------------------------
    def _input_dict(self, inputs: Any) -> dict[str, Any]:
        if isinstance(inputs, dict):
            return dict(inputs)
        keys = set(self.input_keys)
        if self.memory is not None:
            keys -= set(self.memory.memory_variables)
        if len(keys) == 1:
            return {keys.pop(): inputs}
        if not keys or DEFAULT_INPUT_KEY in keys:
            return {DEFAULT_INPUT_KEY: inputs}
        raise ValueError(
            f"A single string input was passed in, but this chain expects multiple inputs ({keys}). "
            "When a chain expects multiple inputs, please call it by passing in a dictionary, "
            "eg `chain({'foo': 1, 'bar': 2})`"
        )

    def _validate_inputs(self, inputs: dict[str, Any]) -> None:
        if isinstance(self.agent, Runnable):  # a runnable's prompt names a missing variable itself
            return
        missing = set(self.input_keys).difference(inputs)
        if missing:
            raise ValueError(f"Missing some input keys: {missing}")

    def prep_inputs(self, inputs: Any) -> dict[str, Any]:
        """A dict of inputs (a single value goes to the one input key) plus the memory's variables."""
        prepared = self._input_dict(inputs)
        if self.memory is not None:
            prepared.update(self.memory.load_memory_variables(prepared))
        self._validate_inputs(prepared)
        return prepared

    async def aprep_inputs(self, inputs: Any) -> dict[str, Any]:
        """Async ``prep_inputs``."""
        prepared = self._input_dict(inputs)
        if self.memory is not None:
            prepared.update(await self.memory.aload_memory_variables(prepared))
        self._validate_inputs(prepared)
        return prepared

    def _validate_outputs(self, outputs: dict[str, Any]) -> None:
        if isinstance(self.agent, Runnable):  # a runnable may finish with other keys than "output"
            return
        missing = set(self.output_keys).difference(outputs)
        if missing:
            raise ValueError(f"Missing some output keys: {missing}")

    def prep_outputs(
        self, inputs: dict[str, Any], outputs: dict[str, Any], return_only_outputs: bool = False
    ) -> dict[str, Any]:
        """Save the run to memory; the outputs, or the inputs and the outputs."""
        self._validate_outputs(outputs)
        if self.memory is not None:
            self.memory.save_context(inputs, outputs)
        return dict(outputs) if return_only_outputs else {**inputs, **outputs}

    async def aprep_outputs(
        self, inputs: dict[str, Any], outputs: dict[str, Any], return_only_outputs: bool = False
    ) -> dict[str, Any]:
        """Async ``prep_outputs``."""
        self._validate_outputs(outputs)
        if self.memory is not None:
            await self.memory.asave_context(inputs, outputs)
        return dict(outputs) if return_only_outputs else {**inputs, **outputs}

    # The Chain calls -------------------------------------------------------------------------
    def __call__(
        self,
        inputs: Any,
        return_only_outputs: bool = False,
        callbacks: Callbacks = None,
        *,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        run_name: str | None = None,
        include_run_info: bool = False,
    ) -> dict[str, Any]:
        """``Chain.__call__``: ``invoke`` with the config given as arguments."""
        return self.invoke(
            inputs,
            _config(callbacks, tags, metadata, run_name),
            return_only_outputs=return_only_outputs,
            include_run_info=include_run_info,
        )

    async def acall(
        self,
        inputs: Any,
        return_only_outputs: bool = False,
        callbacks: Callbacks = None,
        *,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        run_name: str | None = None,
        include_run_info: bool = False,
    ) -> dict[str, Any]:
        """``Chain.acall``: ``ainvoke`` with the config given as arguments."""
        return await self.ainvoke(
            inputs,
            _config(callbacks, tags, metadata, run_name),
            return_only_outputs=return_only_outputs,
            include_run_info=include_run_info,
        )

    def run(
        self,
        *args: Any,
        callbacks: Callbacks = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        """The answer alone: ``run("a question")`` or ``run(input=..., other=...)``; refused unless there is one output key."""
        key = self._run_output_key
        return self(_run_input(args, kwargs), callbacks=callbacks, tags=tags, metadata=metadata)[key]

    async def arun(
        self,
        *args: Any,
        callbacks: Callbacks = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        """Async ``run``."""
        key = self._run_output_key
        result = await self.acall(_run_input(args, kwargs), callbacks=callbacks, tags=tags, metadata=metadata)
        return result[key]

    def apply(self, input_list: list[dict[str, Any]], callbacks: Callbacks = None) -> list[dict[str, Any]]:
        """``__call__`` on each input, one after another (``batch`` runs them concurrently)."""
        return [self(inputs, callbacks=callbacks) for inputs in input_list]

    def save(self, file_path: Path | str) -> None:
        """Refused, as in the classic: save the agent (``save_agent``), not the executor."""
        raise ValueError(
            "Saving not supported for agent executors. "
            "If you are trying to save the agent, please use the `.save_agent(...)`"
        )

    def save_agent(self, file_path: Path | str) -> None:
        """Save a classic agent (one with ``save``); a runnable agent cannot be saved."""
        save = getattr(self.agent, "save", None)
        if save is None:
            raise NotImplementedError(f"{type(self.agent).__name__} cannot be saved")
        save(file_path)
