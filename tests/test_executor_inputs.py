"""Tool inputs a tool answers itself (``handle_validation_error``) and tool outputs no encoder takes
(lone surrogates): what the observation, the callbacks and the next prompt get."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_classic.agents import AgentExecutor as ClassicExecutor
from langchain_classic.agents import create_react_agent as classic_create_react_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tools import StructuredTool, tool
from pydantic import ValidationError

from explicit_react import AgentExecutor, ExplicitReActAgent, create_react_agent
from explicit_react.executor import ToolExecutor
from explicit_react.testing import ScriptedChatModel
from explicit_react.tools import file_tools
from tests.helpers import action, final
from tests.test_compat import HUB_REACT_PROMPT

# --- a tool's own answer to arguments it cannot take ----------------------------------------------


def _add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def handled(flag: Any) -> StructuredTool:
    return StructuredTool.from_function(_add, name="add", handle_validation_error=flag)


def _explain(error: ValidationError) -> str:
    return f"{error.error_count()} problems: send two integers"


@pytest.mark.parametrize(
    ("flag", "expected"),
    [
        ('Send JSON such as {"a": 1, "b": 2}', 'Send JSON such as {"a": 1, "b": 2}'),
        (True, "Tool input validation error"),
        (_explain, "2 problems: send two integers"),
    ],
)
@pytest.mark.parametrize("run_async", [False, True])
def test_text_a_tool_cannot_take_gets_its_validation_error_handler_text(
    flag: Any, expected: str, run_async: bool
) -> None:
    executor = ToolExecutor([handled(flag)])
    outcome = asyncio.run(executor.aexecute("add", "oops")) if run_async else executor.execute("add", "oops")
    assert outcome.observation == expected


def test_text_for_a_tool_without_a_handler_still_gets_the_schema_hint() -> None:
    observation = ToolExecutor([handled(False)]).execute("add", "oops").observation
    assert observation.startswith("Error: invalid input for tool 'add': Action Input is not a JSON object")


class ToolEvents(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def on_tool_start(self, serialized: Any, input_str: str, **kwargs: Any) -> None:
        self.events.append(("tool_start", input_str))

    def on_tool_end(self, output: Any, **kwargs: Any) -> None:
        self.events.append(("tool_end", str(output)))

    def on_text(self, text: str, **kwargs: Any) -> None:
        self.events.append(("text", text))


def test_the_compat_executor_runs_such_a_tool_like_the_classic() -> None:
    add = handled("BAD ARGS")
    seen = []
    for executor_type, create in (
        (ClassicExecutor, classic_create_react_agent),
        (AgentExecutor, create_react_agent),
    ):
        llm = ScriptedChatModel([action("add", "oops"), final("done")])
        executor = executor_type(
            agent=create(llm, [add], HUB_REACT_PROMPT), tools=[add], return_intermediate_steps=True
        )
        events = ToolEvents()
        result = executor.invoke({"input": "q"}, {"callbacks": [events]})
        seen.append((result["intermediate_steps"][0][1], events.events))
    assert seen[1] == seen[0] == ("BAD ARGS", [("tool_start", "oops"), ("tool_end", "BAD ARGS")])


# --- observations never hold a lone surrogate -----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("caf\udce9 au lait", "caf\\xe9 au lait"),  # a Latin-1 byte read with surrogateescape
        ("half \ud83d of a pair", "half \\ud83d of a pair"),
        ("plain caf\xe9 \U0001f600", "plain caf\xe9 \U0001f600"),
    ],
)
def test_encodable_escapes_lone_surrogates_only(text: str, shown: str) -> None:
    from explicit_react.executor import encodable  # new: imported here, so the other tests run on older code

    assert encodable(text) == shown
    shown.encode("utf-8")


@tool
def legacy(name: str) -> str:
    """Read a Latin-1 file as Python does with surrogateescape."""
    return b"caf\xe9 menu".decode("utf-8", "surrogateescape")


@tool
def broken(name: str) -> str:
    """Fail on a file name that is not UTF-8."""
    raise FileNotFoundError("no such file: " + b"men\xfc.txt".decode("utf-8", "surrogateescape"))


def test_an_agents_steps_trace_and_next_prompt_hold_no_lone_surrogate(tmp_path: Path) -> None:
    llm = ScriptedChatModel([action("legacy", "menu"), action("broken", "x"), final("done")])
    trace = tmp_path / "trace.jsonl"
    result = ExplicitReActAgent(llm, [legacy, broken], trace_path=trace).run("q")
    assert result.steps[0].observation == "caf\\xe9 menu"
    assert "men\\xfc.txt" in result.steps[1].observation
    json.dumps(result.to_dict(), ensure_ascii=False).encode()  # raised UnicodeEncodeError before
    assert "caf\\xe9 menu" in llm.calls[1].prompt
    llm.calls[2].prompt.encode("utf-8")
    trace.read_text(encoding="utf-8")


def test_the_compat_executors_steps_and_next_prompt_hold_no_lone_surrogate() -> None:
    llm = ScriptedChatModel([action("legacy", "menu"), final("done")])
    executor = AgentExecutor(
        agent=create_react_agent(llm, [legacy], HUB_REACT_PROMPT),
        tools=[legacy],
        return_intermediate_steps=True,
    )
    result = executor.invoke({"input": "q"})
    assert result["intermediate_steps"][0][1] == "caf\\xe9 menu"
    llm.calls[1].prompt.encode("utf-8")


def test_read_file_of_a_latin1_file_is_an_observation_with_byte_escapes(tmp_path: Path) -> None:
    (tmp_path / "menu.txt").write_bytes(b"caf\xe9 menu\n")
    llm = ScriptedChatModel([action("read_file", '{"path": "menu.txt"}'), final("done")])
    result = ExplicitReActAgent(llm, file_tools(tmp_path, read_only=True)).run("q")
    assert result.steps[0].observation.endswith("caf\\xe9 menu")
    assert result.steps[0].tool_output.endswith("caf\udce9 menu")  # the tool's own value, as it gave it
    json.dumps(result.to_dict(), ensure_ascii=False).encode()
