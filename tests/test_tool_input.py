"""What a tool receives for what the model wrote: a tool of no arguments, a tool whose arguments are
all optional, and the classic recipe of a one-text-argument tool that calls ``json.loads``. Each
case runs through the real agent (``ExplicitReActAgent``) and, where the classic ``AgentExecutor``
runs it, is compared with it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_classic.agents import AgentExecutor as ClassicExecutor
from langchain_classic.agents import create_react_agent as classic_create_react_agent
from langchain_core.tools import BaseTool, StructuredTool, Tool, tool
from pydantic import BaseModel

from explicit_react import AgentExecutor, ExplicitReActAgent, create_react_agent
from explicit_react.executor import ToolExecutor
from explicit_react.testing import ScriptedChatModel
from explicit_react.types import Step
from tests.helpers import action, final
from tests.test_compat import HUB_REACT_PROMPT


def first_step(t: BaseTool, tool_input: str) -> Step:
    """The step of one call of ``t`` with ``Action Input: tool_input``, through the agent."""
    model = ScriptedChatModel([action(t.name, tool_input), final("done")])
    result = ExplicitReActAgent(model, [t]).run("q")
    return result.steps[0]


def observations(tools: list[BaseTool], script: list[str]) -> tuple[list[Any], list[Any]]:
    """The observations of the classic ``AgentExecutor`` and of ours on the same script."""
    seen = []
    for executor_class, create in (
        (ClassicExecutor, classic_create_react_agent),
        (AgentExecutor, create_react_agent),
    ):
        agent = create(ScriptedChatModel(list(script)), tools, HUB_REACT_PROMPT)
        executor = executor_class(agent=agent, tools=tools, return_intermediate_steps=True)
        steps = executor.invoke({"input": "q"})["intermediate_steps"]
        seen.append([observation for _, observation in steps])
    return seen[0], seen[1]


# --- a tool of no arguments ---------------------------------------------------------------------


@tool
def get_time() -> str:
    """The current time."""
    return "12:00"


@pytest.mark.parametrize(
    "tool_input", ["", "None", "N/A", "now", "''", "{}", '{"timezone": "UTC"}', "[1, 2]", "6, 7"]
)
def test_a_tool_of_no_arguments_runs_whatever_the_action_input_says(tool_input: str) -> None:
    step = first_step(get_time, tool_input)
    assert (step.observation, step.error) == ("12:00", None)


@pytest.mark.parametrize("tool_input", ["", "None", "N/A", "now"])
def test_a_tool_of_no_arguments_runs_as_in_the_classic(tool_input: str) -> None:
    theirs, mine = observations([get_time], [action("get_time", tool_input), final("12:00")])
    assert theirs == mine == ["12:00"]


def test_a_model_that_repeats_its_input_for_a_tool_of_no_arguments_is_not_stuck() -> None:
    model = ScriptedChatModel([action("get_time", "None"), final("It is 12:00.")])
    result = ExplicitReActAgent(model, [get_time]).run("What time is it?")
    assert result.success and result.answer == "It is 12:00."
    assert [s.observation for s in result.steps] == ["12:00"]


def test_a_structured_tool_of_no_arguments_with_a_pydantic_schema_runs_too() -> None:
    class NoArgs(BaseModel):
        pass

    ping = StructuredTool.from_function(lambda: "pong", name="ping", description="Ping.", args_schema=NoArgs)
    step = first_step(ping, "please")
    assert (step.observation, step.error) == ("pong", None)


# --- a tool whose arguments are all optional ----------------------------------------------------


@tool
def lookup(query: str = "", limit: int = 3) -> str:
    """Search the catalogue."""
    return f"{limit} hits for {query}"


@pytest.mark.parametrize(
    ("tool_input", "observation"),
    [
        ("red shoes", "3 hits for red shoes"),
        ("red shoes, size 5", "3 hits for red shoes, size 5"),  # the first argument takes it whole
        ('{"query": "hats", "limit": 2}', "2 hits for hats"),
        ("", "3 hits for "),
    ],
)
def test_text_for_a_tool_whose_arguments_are_all_optional_fills_the_first(
    tool_input: str, observation: str
) -> None:
    step = first_step(lookup, tool_input)
    assert (step.observation, step.error) == (observation, None)


@pytest.mark.parametrize("tool_input", ["red shoes", "red shoes, size 5", "None"])
def test_text_for_a_tool_whose_arguments_are_all_optional_as_in_the_classic(tool_input: str) -> None:
    theirs, mine = observations([lookup], [action("lookup", tool_input), final("done")])
    assert theirs == mine == [f"3 hits for {tool_input}"]


@tool
def top(n: int = 3, category: str = "all") -> str:
    """The best sellers."""
    return f"top {n!r} in {category}"


@pytest.mark.parametrize(
    ("tool_input", "observation"),
    [
        ("5", "top 5 in all"),  # langchain_core puts the text into the first argument: "5" is a number
        ("2, hats", "top 2 in hats"),  # it does not take text whole, so values fill the arguments in order
        ("", "top 3 in all"),  # nothing written: the defaults
    ],
)
def test_text_for_all_optional_arguments_whose_first_takes_no_text(tool_input: str, observation: str) -> None:
    step = first_step(top, tool_input)
    assert (step.observation, step.error) == (observation, None)


def test_words_for_a_first_argument_that_is_a_number_are_refused_naming_it() -> None:
    step = first_step(top, "shoes")
    assert step.error == "invalid_input"
    assert step.observation.startswith("Error: invalid input for tool 'top': argument 'n': ")
    assert step.observation.endswith(
        'Expected Action Input: {"n": integer (optional), "category": string (optional)}'
    )


# --- a one-key JSON object for a tool of one text argument (the json.loads recipe) --------------


@tool
def get_order(payload: str) -> str:
    """Look up an order. Input: a JSON object such as {"order_id": 42}."""
    return f"order {json.loads(payload)['order_id']}: shipped"


def test_a_one_key_object_with_a_number_reaches_a_json_loads_tool_as_json() -> None:
    step = first_step(get_order, '{"order_id": 42}')
    assert (step.observation, step.error) == ("order 42: shipped", None)


def test_a_one_key_object_with_a_number_as_in_the_classic() -> None:
    theirs, mine = observations([get_order], [action("get_order", '{"order_id": 42}'), final("shipped")])
    assert theirs == mine == ["order 42: shipped"]


received: list[Any] = []


@tool
def run_code(command: str) -> str:
    """Run the code."""
    received.append(command)
    return "ran"


plain_code = Tool(name="plain_code", func=lambda text: received.append(text) or "ran", description="Run.")


@pytest.mark.parametrize("t", [run_code, plain_code], ids=["schema-tool", "text-tool"])
@pytest.mark.parametrize(
    ("tool_input", "sent"),
    [
        ('{"order_id": 42}', {"order_id": 42}),
        ('{"a": [1, 2]}', {"a": [1, 2]}),
        ('{"a": {"b": 1}}', {"a": {"b": 1}}),
        ("{'flag': True}", {"flag": True}),  # repaired: the tool gets valid JSON
        ('{"n": null}', {"n": None}),
    ],
)
def test_a_one_key_object_whose_value_is_not_text_reaches_a_text_argument_as_json(
    t: BaseTool, tool_input: str, sent: dict[str, Any]
) -> None:
    received.clear()
    step = first_step(t, tool_input)
    assert (step.observation, step.error) == ("ran", None)
    assert len(received) == 1 and json.loads(received[0]) == sent


@pytest.mark.parametrize("t", [run_code, plain_code], ids=["schema-tool", "text-tool"])
@pytest.mark.parametrize("tool_input", ['{"code": "print(1)"}', '{"command": "print(1)"}'])
def test_a_one_key_object_whose_value_is_text_still_gives_the_value(t: BaseTool, tool_input: str) -> None:
    received.clear()
    assert first_step(t, tool_input).observation == "ran"
    assert received == ["print(1)"]


# --- the hint after a refused input never contradicts itself ------------------------------------


@tool
def square(n: int) -> int:
    """Square a number."""
    return n * n


@tool
def send(to: str, body: str) -> str:
    """Send a message."""
    return "sent"


@pytest.mark.parametrize(
    ("t", "tool_input", "expected"),
    [
        (square, "four", '{"n": integer}'),  # not "plain text": the argument is a number
        (send, "bob", '{"to": string, "body": string}'),
        (top, "shoes", '{"n": integer (optional), "category": string (optional)}'),
        (get_order, '{"payload": 42}', "plain text"),  # the argument named, with a number: text wanted
    ],
)
def test_the_hint_says_what_input_the_tool_takes(t: BaseTool, tool_input: str, expected: str) -> None:
    step = first_step(t, tool_input)
    assert step.error == "invalid_input"
    assert step.observation.endswith(f"Expected Action Input: {expected}")


def test_the_hint_for_a_tool_of_no_arguments_says_it_takes_none() -> None:
    hint = ToolExecutor([get_time])._schema_hint("get_time", "a problem")
    assert hint.endswith("Expected Action Input: nothing (the tool takes no input)")


def test_a_plain_tool_is_shown_as_taking_text_not_the_arguments_of_tool_run() -> None:
    model = ScriptedChatModel([final("done")])
    ExplicitReActAgent(model, [plain_code]).run("q")
    assert "- plain_code: Run.\n" in model.calls[0].prompt
    assert '"config"' not in model.calls[0].prompt and '"kwargs"' not in model.calls[0].prompt
