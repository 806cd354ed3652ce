"""AgentExecutorIterator: what ``AgentExecutor.iter()`` returns, with langchain_classic's attributes and behaviour.

Iterate it (``for`` or ``async for``) to step through one run: a ``{"intermediate_step": [...]}``
chunk after each iteration that ended in observations (with ``yield_actions=True``, the ``actions``
and ``steps`` chunks of ``stream`` instead), then the final output. While it runs it keeps the
classic bookkeeping: ``iterations``, ``time_elapsed``, ``intermediate_steps``; ``reset()`` clears it.
The run itself is the executor's (same loop, limits and callbacks as ``invoke``).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any
from uuid import UUID

from langchain_core.agents import AgentAction
from langchain_core.callbacks import Callbacks
from langchain_core.outputs import RunInfo
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.utils import AddableDict
from langchain_core.tools import BaseTool
from langchain_core.utils.input import get_color_mapping

from explicit_react import drivers
from explicit_react.classic_chain import RUN_KEY
from explicit_react.classic_chunks import FinalChunk
from explicit_react.types import StopReason

if TYPE_CHECKING:
    from explicit_react.compat import AgentExecutor

_COUNTED_STOPS = (StopReason.SUCCESS, StopReason.RETURN_DIRECT)
"""Runs whose last iteration ended the run (a final answer or a return_direct tool): it counts, as in the classic."""


class AgentExecutorIterator:
    """Steps through one run of an ``AgentExecutor``: a drop-in for langchain_classic's ``AgentExecutorIterator``.

    ``inputs`` is always a dict (a single value goes to the executor's input key, and memory
    variables are added, when set). ``callbacks``, ``tags``, ``metadata``, ``run_name`` and
    ``run_id`` configure the run, as ``invoke``'s config does; ``include_run_info`` adds ``__run``
    to the final output.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """``make_final_outputs`` is the classic's name, kept for its callers; the run makes its final
        outputs itself (saving to memory once), so an override would be ignored: refused instead."""
        super().__init_subclass__(**kwargs)
        if cls.make_final_outputs is not AgentExecutorIterator.make_final_outputs:  # a mixin's too
            raise TypeError(
                f"{cls.__name__} overrides make_final_outputs, which explicit_react's iterator never calls "
                "(the executor makes the final outputs): change the outputs after the last chunk instead"
            )

    def __init__(
        self,
        agent_executor: AgentExecutor,
        inputs: Any,
        callbacks: Callbacks = None,
        *,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        run_name: str | None = None,
        run_id: UUID | None = None,
        include_run_info: bool = False,
        yield_actions: bool = False,
    ) -> None:
        self._agent_executor = agent_executor
        self.inputs = inputs
        self.callbacks = callbacks
        self.tags = tags
        self.metadata = metadata
        self.run_name = run_name
        self.run_id = run_id
        self.include_run_info = include_run_info
        self.yield_actions = yield_actions
        self.reset()

    @property
    def inputs(self) -> dict[str, Any]:
        """The run's inputs, as a dict."""
        return self._inputs

    @inputs.setter
    def inputs(self, inputs: Any) -> None:
        self._inputs = self.agent_executor.prep_inputs(inputs)

    @property
    def agent_executor(self) -> AgentExecutor:
        """The executor to step through (setting it prepares the inputs again, for its input keys)."""
        return self._agent_executor

    @agent_executor.setter
    def agent_executor(self, agent_executor: AgentExecutor) -> None:
        self._agent_executor = agent_executor
        self.inputs = self.inputs

    @property
    def name_to_tool_map(self) -> dict[str, BaseTool]:
        """The executor's tools by name."""
        return {tool.name: tool for tool in self.agent_executor.tools}

    @property
    def color_mapping(self) -> dict[str, str]:
        """A colour per tool name (for verbose output), as in the classic."""
        return get_color_mapping(
            [t.name for t in self.agent_executor.tools], excluded_colors=["green", "red"]
        )

    def reset(self) -> None:
        """Back to the start: no steps, no iterations, the clock restarted."""
        self.intermediate_steps: list[tuple[AgentAction, Any]] = []
        self.iterations = 0
        self.time_elapsed = 0.0
        self.start_time = time.time()
        self._pending: list[tuple[AgentAction, Any]] = []

    def update_iterations(self) -> None:
        """Count one more iteration and update ``time_elapsed``."""
        self.iterations += 1
        self.time_elapsed = time.time() - self.start_time

    def make_final_outputs(self, outputs: dict[str, Any], run_manager: Any) -> AddableDict:
        """The final chunk for ``outputs`` (saved to memory; ``__run`` added when asked), as in the classic."""
        final = AddableDict(self.agent_executor.prep_outputs(self.inputs, outputs, return_only_outputs=True))
        if self.include_run_info:
            final[RUN_KEY] = RunInfo(run_id=run_manager.run_id)
        return final

    def _config(self) -> RunnableConfig:
        config: RunnableConfig = {
            "callbacks": self.callbacks,
            "tags": self.tags or [],
            "metadata": self.metadata or {},
        }
        if self.run_name is not None:
            config["run_name"] = self.run_name
        if self.run_id is not None:
            config["run_id"] = self.run_id
        return config

    def __iter__(self) -> Iterator[AddableDict]:
        """Run, yielding as described in the class docstring."""
        self.reset()
        # every chunk (actions, steps, iteration ends): ``_take`` keeps the books and picks
        run = self.agent_executor._session(
            self.inputs, self._config(), "iter", include_run_info=self.include_run_info, prepared=True
        )
        for chunk in drivers.drive(run):
            if (shown := self._take(chunk)) is not None:
                yield shown

    async def __aiter__(self) -> AsyncIterator[AddableDict]:
        """Async ``__iter__``."""
        self.reset()
        run = self.agent_executor._session(
            self.inputs, self._config(), "iter", include_run_info=self.include_run_info, prepared=True
        )
        async for chunk in drivers.adrive(run):
            if (shown := self._take(chunk)) is not None:
                yield shown

    def _take(self, chunk: AddableDict) -> AddableDict | None:
        """Keep the books for one chunk of the run; the chunk if this iterator shows it."""
        if isinstance(chunk, FinalChunk):
            if self.agent_executor.last_stop_reason in _COUNTED_STOPS:
                self.intermediate_steps.extend(self._pending)
                self.update_iterations()
            return AddableDict(chunk)
        if "intermediate_step" in chunk:
            self.intermediate_steps.extend(chunk["intermediate_step"])
            self._pending.clear()
            self.update_iterations()
            return None if self.yield_actions else chunk
        if "steps" in chunk:
            self._pending.extend((step.action, step.observation) for step in chunk["steps"])
        return chunk if self.yield_actions else None  # an actions or steps chunk
