"""The stand-in tools the classic executor runs so callbacks see a tool run where no real tool ran:
the echo tool of a parse error (``_Exception``) and ``invalid_tool`` for a made-up tool name."""

from __future__ import annotations

from functools import partial
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForToolRun, CallbackManagerForToolRun
from langchain_core.tools import BaseTool
from pydantic import BaseModel

from explicit_react.drivers import Call


class _EchoTool(BaseTool):
    """Returns its input: how the classic shows parse errors (``_Exception``) and unknown tools to callbacks."""

    description: str = "Returns its input."

    def _run(self, query: str, run_manager: CallbackManagerForToolRun | None = None) -> str:
        return query

    async def _arun(self, query: str, run_manager: AsyncCallbackManagerForToolRun | None = None) -> str:
        return query


class _UnknownToolInput(BaseModel):
    requested_tool_name: str
    available_tool_names: list[str]


class _UnknownTool(BaseTool):
    """The classic's ``invalid_tool`` run for a made-up tool name: callbacks see the requested and the
    available names as its input, as the classic's ``InvalidTool`` takes them, and ``observation``
    (the classic text, or ours) as its output."""

    name: str = "invalid_tool"
    description: str = "Called when the tool name is not a valid tool."
    args_schema: type[BaseModel] = _UnknownToolInput
    observation: str = ""

    def _run(self, *args: Any, run_manager: CallbackManagerForToolRun | None = None, **kwargs: Any) -> str:
        return self.observation

    async def _arun(
        self, *args: Any, run_manager: AsyncCallbackManagerForToolRun | None = None, **kwargs: Any
    ) -> str:
        return self.observation


def unknown_tool_call(
    requested: str, available: list[str], observation: str, callbacks: Any, shown: dict[str, Any]
) -> Call:
    """A request to run ``_UnknownTool`` for ``requested`` (see ``echo_call``)."""
    tool = _UnknownTool(observation=observation)
    names = {"requested_tool_name": requested, "available_tool_names": available}
    return Call(
        partial(tool.run, names, callbacks=callbacks, **shown),
        partial(tool.arun, names, callbacks=callbacks, **shown),
    )


def echo_call(name: str, text: str, callbacks: Any, shown: dict[str, Any]) -> Call:
    """A request to run the echo tool ``name`` on ``text`` (so callbacks see a tool run); ``shown``
    are the display arguments (``verbose``, ``color``, prefixes) the classic passes its run."""
    tool = _EchoTool(name=name)
    return Call(
        partial(tool.run, text, callbacks=callbacks, **shown),
        partial(tool.arun, text, callbacks=callbacks, **shown),
    )
