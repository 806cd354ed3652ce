"""The classic executor's stream chunks for actions and steps as they happen (``stream``, ``iter``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from langchain_core.agents import AgentAction, AgentStep
from langchain_core.runnables.utils import AddableDict

from explicit_react.tool_input import too_deep_text


class FinalChunk(AddableDict):
    """The final outputs of a streamed run, told apart by their type: the keys of an agent's outputs
    are its own (an agent may finish with ``steps`` or ``actions`` among them)."""


def chunks(output: str, *events: AgentAction | AgentStep) -> Iterator[AddableDict]:
    """An ``actions`` or ``steps`` chunk for each event; none for a run whose ``output`` is ``"invoke"``."""
    if output == "invoke":
        return
    for event in events:
        key = "actions" if isinstance(event, AgentAction) else "steps"
        yield AddableDict({key: [event], "messages": _messages(event)})


def _messages(event: AgentAction | AgentStep) -> Any:
    try:
        return event.messages
    except RecursionError:  # langchain_core str()s the observation
        assert isinstance(event, AgentStep)
        return AgentStep(action=event.action, observation=too_deep_text(event.observation)).messages
