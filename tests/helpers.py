"""Small shared pieces for the tests: real LangChain tools and a callback recorder."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tools import tool

POPULATIONS = {"population of France": "68000000", "population of Paris": "2100000"}


@tool
def search(query: str) -> str:
    """Look up a fact."""
    return POPULATIONS.get(query.strip(), f"No results for {query!r}")


@tool
def subtract(a: int, b: int) -> int:
    """Subtract b from a."""
    return a - b


def action(tool_name: str, tool_input: str, thought: str = "I need a tool.") -> str:
    """A well-formed action reply."""
    return f"Thought: {thought}\nAction: {tool_name}\nAction Input: {tool_input}"


def final(answer: str, thought: str = "I now know the final answer.") -> str:
    """A well-formed final-answer reply."""
    return f"Thought: {thought}\nFinal Answer: {answer}"


class DiskFull:
    """A run listener that fails on the second step, like a trace writer whose disk filled up."""

    def on_step(self, step: Any, turn: int, max_turns: int) -> None:
        if turn == 2:
            raise OSError("No space left on device")


class EventRecorder(BaseCallbackHandler):
    """Records callback events as ``(name, run_id, parent_run_id)``."""

    def __init__(self) -> None:
        self.events: list[tuple[str, UUID | None, UUID | None]] = []
        self.payloads: list[tuple[str, Any]] = []

    def _add(self, name: str, payload: Any, run_id: UUID | None, parent_run_id: UUID | None) -> None:
        self.events.append((name, run_id, parent_run_id))
        self.payloads.append((name, payload))

    @property
    def names(self) -> list[str]:
        return [name for name, _, _ in self.events]

    def on_chain_start(
        self, serialized: Any, inputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        self._add("chain_start", inputs, run_id, parent_run_id)

    def on_chain_end(
        self, outputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        self._add("chain_end", outputs, run_id, parent_run_id)

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        self._add("llm_start", messages, run_id, parent_run_id)

    def on_llm_start(
        self, serialized: Any, prompts: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        self._add("llm_start", prompts, run_id, parent_run_id)

    def on_llm_end(
        self, response: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        self._add("llm_end", response, run_id, parent_run_id)

    def on_tool_start(
        self, serialized: Any, input_str: str, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        self._add("tool_start", input_str, run_id, parent_run_id)

    def on_tool_end(self, output: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any) -> None:
        self._add("tool_end", output, run_id, parent_run_id)

    def on_agent_action(
        self, action: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        self._add("agent_action", action, run_id, parent_run_id)

    def on_agent_finish(
        self, finish: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        self._add("agent_finish", finish, run_id, parent_run_id)


class ChainEvents(BaseCallbackHandler):
    """The top-level chain run's start, end and error, in order; ``outputs=True`` records the
    end's output too (``end(2.1M)``)."""

    def __init__(self, outputs: bool = False) -> None:
        self.events: list[str] = []
        self.outputs = outputs

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        if kwargs.get("parent_run_id") is None:
            self.events.append("start")

    def on_chain_end(self, outputs: Any, **kwargs: Any) -> None:
        if kwargs.get("parent_run_id") is None:
            self.events.append(f"end({outputs['output']})" if self.outputs else "end")

    def on_chain_error(self, error: BaseException, **kwargs: Any) -> None:
        if kwargs.get("parent_run_id") is None:
            self.events.append(f"error({type(error).__name__})")
