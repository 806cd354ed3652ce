"""ToolExecutor: fitting model input to each kind of tool, and turning failures into observations."""

from __future__ import annotations

import asyncio
from typing import Annotated

import pytest
from langchain_core.tools import BaseTool, InjectedToolArg, Tool, tool
from pydantic import BaseModel

from explicit_react import ExplicitReActAgent
from explicit_react.errors import ConfigurationError
from explicit_react.executor import ToolExecutor, as_tool, tool_spec
from explicit_react.parser import parse
from explicit_react.testing import ScriptedChatModel
from explicit_react.types import Action
from tests.helpers import action, final, search, subtract


class Echo(BaseTool):
    """A BaseTool subclass with no schema: it takes one string."""

    name: str = "echo"
    description: str = "Echo the text."

    def _run(self, text: str) -> str:
        return f"echo: {text}"


@tool
def square(n: int) -> int:
    """Square a number."""
    return n * n


@tool
def items(values: list[int]) -> int:
    """Sum a list."""
    return sum(values)


@tool
def settings(options: dict[str, object]) -> str:
    """Apply settings."""
    return ", ".join(sorted(options))


EXECUTOR = ToolExecutor(
    [
        search,
        subtract,
        Echo(),
        square,
        items,
        settings,
        Tool(name="plain", func=str.upper, description="Upper."),
    ]
)


@pytest.mark.parametrize(
    ("name", "tool_input", "fitted"),
    [
        ("search", "paris", {"query": "paris"}),
        ("search", '{"query": "paris"}', {"query": "paris"}),
        ("search", {"q": "paris"}, {"query": "paris"}),  # one value, wrong key: mapped to the only argument
        ("subtract", '{"a": 3, "b": 1}', {"a": 3, "b": 1}),
        ("subtract", "{'a': 3, 'b': 1,}", {"a": 3, "b": 1}),  # nearly-valid JSON is repaired
        ("echo", {"text": "hi"}, "hi"),
        ("echo", ["a", 1], '["a", 1]'),
        ("plain", "hi", "hi"),
        ("square", "4", {"n": "4"}),  # the schema converts it
        ("items", [1, 2], {"values": [1, 2]}),
        # several values for a one-argument tool: a text argument gets the JSON, as the model wrote it
        ("search", {"origin": "PAR", "dest": "NYC"}, {"query": '{"origin": "PAR", "dest": "NYC"}'}),
        ("search", '{"origin": "PAR", "dest": "NYC"}', {"query": '{"origin": "PAR", "dest": "NYC"}'}),
        ("settings", {"depth": 2, "fast": True}, {"options": {"depth": 2, "fast": True}}),
        ("square", {"a": 1, "b": 2}, {"a": 1, "b": 2}),  # not text or an object: the schema rejects it
    ],
)
def test_fit_input(name: str, tool_input: object, fitted: object) -> None:
    assert EXECUTOR.fit_input(name, tool_input) == fitted  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "tool_input", "observation"),
    [
        ("search", "population of Paris", "2100000"),
        ("square", "4", "16"),
        ("square", '{"n": 5}', "25"),
        ("items", [1, 2, 3], "6"),
        ("echo", "hi", "echo: hi"),
        ("plain", "hi", "HI"),
        ("subtract", {"a": 3, "b": 1}, "2"),
    ],
)
def test_execute_runs_each_kind_of_tool(name: str, tool_input: object, observation: str) -> None:
    outcome = EXECUTOR.execute(name, tool_input)  # type: ignore[arg-type]
    assert (outcome.observation, outcome.error) == (observation, None)


def test_wrong_types_name_the_argument() -> None:
    outcome = EXECUTOR.execute("square", "four")
    assert outcome.error == "invalid_input" and "argument 'n'" in outcome.observation


def test_text_that_is_not_json_for_a_multi_argument_tool() -> None:
    outcome = EXECUTOR.execute("subtract", "3 minus 1")
    assert outcome.error == "invalid_input"
    assert outcome.observation == (
        "Error: invalid input for tool 'subtract': Action Input is not a JSON object. "
        'Expected Action Input: {"a": integer, "b": integer}'
    )


def test_async_execution_matches_sync() -> None:
    outcome = asyncio.run(EXECUTOR.aexecute("subtract", '{"a": 10, "b": 4}'))
    assert outcome.observation == "6" and outcome.output == 6


def test_tool_specs_show_arguments() -> None:
    spec = tool_spec(subtract)
    assert spec.takes_json and spec.required == ("a", "b")
    assert not tool_spec(search).takes_json


def test_duplicate_names_and_non_tools_are_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="unique"):
        ToolExecutor([search, search])
    with pytest.raises(ConfigurationError, match="BaseTool or a function"):
        as_tool("search")  # type: ignore[arg-type]


def test_an_unknown_tool_gets_the_closest_name_or_what_each_tool_does() -> None:
    executor = ToolExecutor([search, subtract])
    close = executor.execute("serch", "x")
    assert close.error == "unknown_tool"
    assert close.observation == (
        "Error: there is no tool named 'serch'. Did you mean 'search'? Available tools: search, subtract."
    )
    far = executor.execute("population_database", "Paris").observation
    assert far.startswith(
        "Error: there is no tool named 'population_database'. Use one of these tools instead:\n"
    )
    assert f"\n- search: {search.description.split('. ')[0].rstrip('.')}." in far
    assert "\n- subtract: " in far
    assert ToolExecutor([]).execute("x", "y").observation.endswith("There are no tools: answer without them.")


def test_an_empty_suggest_list_shows_no_tool_while_none_shows_them_all() -> None:
    hidden = ToolExecutor([search, subtract], suggest=[])
    for name in ("serch", "search", "population_database"):
        assert hidden.unknown_tool_observation(name) == (
            f"Error: there is no tool named {name!r}. There are no tools: answer without them."
        )
    assert (
        ToolExecutor([search, subtract], suggest=None)
        .execute("serch", "x")
        .observation.endswith("Available tools: search, subtract.")
    )


# --- what the other tools do, after a failed call ----------------------------------------------


def _suggesting() -> ToolExecutor:
    from explicit_react.tools import calculator

    return ToolExecutor([calculator, search], suggest=["calculator", "search"])


def test_a_refused_input_is_followed_by_what_the_other_tools_do() -> None:
    outcome = _suggesting().execute("calculator", "Lumacrab battery life")
    assert outcome.error == "tool_error"
    first, rest = outcome.observation.split("\nOther tools:\n", 1)
    assert first.startswith("Error: the calculator takes numbers, not words")
    assert rest == f"- search: {search.description.split('.')[0]}."


def test_an_exception_and_an_async_failure_are_followed_by_the_other_tools_too() -> None:
    @tool
    def broken(query: str) -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    executor = ToolExecutor([broken, search], suggest=["broken", "search"])
    for outcome in (executor.execute("broken", "x"), asyncio.run(executor.aexecute("broken", "x"))):
        assert outcome.observation.startswith("Error: tool 'broken' failed: RuntimeError: disk on fire")
        assert outcome.observation.endswith(
            "\nOther tools:\n- search: " + search.description.split(".")[0] + "."
        )


def test_no_suggestion_after_a_success_for_a_single_tool_or_by_default() -> None:
    from explicit_react.tools import calculator

    assert _suggesting().execute("calculator", "6 * 7").observation == "42"
    alone = ToolExecutor([calculator], suggest=["calculator"]).execute("calculator", "six")
    assert "Other tools" not in alone.observation
    default = ToolExecutor([calculator, search]).execute("calculator", "six")
    assert "Other tools" not in default.observation


def test_only_the_tools_the_model_may_use_are_suggested() -> None:
    from explicit_react import ExplicitReActAgent
    from explicit_react.testing import ScriptedChatModel
    from explicit_react.tools import calculator

    executor = ToolExecutor([calculator, search], suggest=["calculator"])
    assert "Other tools" not in executor.execute("calculator", "six").observation

    model = ScriptedChatModel(
        ["Thought: t\nAction: calculator\nAction Input: six", "Thought: t\nFinal Answer: 6"]
    )
    agent = ExplicitReActAgent(model, [calculator, search], allowed_tools=["calculator"])
    assert "search" not in agent.run("six?").steps[0].observation

    made_up = ScriptedChatModel(
        ["Thought: t\nAction: frobnicate\nAction Input: x", "Thought: t\nFinal Answer: 6"]
    )
    agent = ExplicitReActAgent(made_up, [calculator, search], allowed_tools=["calculator"])
    observation = agent.run("six?").steps[0].observation
    assert observation.startswith("Error: there is no tool named 'frobnicate'")
    assert "calculator" in observation
    assert "search" not in observation


@tool
def multiply(a: float, b: float) -> float:
    """Multiply a by b."""
    return a * b


@tool
def scale(values: list[float], factor: float = 1.0) -> list[float]:
    """Scale each value by factor."""
    return [v * factor for v in values]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Action: multiply(6, 7)", "42.0"),
        ("Action: multiply[6, 7]", "42.0"),
        ("Action: multiply\nAction Input: 6, 7", "42.0"),
        ("Action: multiply\nAction Input: [6, 7]", "42.0"),
        ("Action: multiply(a=6, b=7)", "42.0"),
    ],
)
def test_positional_calls_fill_the_arguments_in_order(reply: str, expected: str) -> None:
    decision = parse(reply)
    assert isinstance(decision, Action)
    outcome = ToolExecutor([multiply]).execute(decision.tool, decision.tool_input)
    assert outcome.error is None and outcome.observation == expected


def test_too_many_positional_values_are_refused_with_the_schema() -> None:
    outcome = ToolExecutor([multiply]).execute("multiply", [1, 2, 3])
    assert outcome.error == "invalid_input" and '"a": number, "b": number' in outcome.observation


def test_a_list_for_a_tool_whose_first_argument_is_a_list_is_not_spread() -> None:
    outcome = ToolExecutor([scale]).execute("scale", [1, 2])
    assert outcome.error is None and outcome.observation == "[1.0, 2.0]"


def test_a_text_tool_keeps_commas_in_its_input() -> None:
    outcome = ToolExecutor([search]).execute("search", "Paris, France")
    assert outcome.observation == "No results for 'Paris, France'"


def test_a_duplicate_tool_name_is_named() -> None:
    with pytest.raises(ConfigurationError, match="'search' is given more than once"):
        ToolExecutor([search, subtract, search])


class Weather(BaseModel):
    """A tool result as a pydantic model."""

    city: str
    celsius: float


@tool
def weather(city: str) -> Weather:
    """The weather in a city."""
    return Weather(city=city, celsius=21.5)


@tool
def nothing(task: str) -> None:
    """Does the task and returns nothing."""


@pytest.mark.parametrize(
    ("t", "observation"),
    [
        (weather, '{"city": "Lyon", "celsius": 21.5}'),  # JSON of its fields, not a quoted str()
        (nothing, "(the tool returned no output)"),  # never "null"
    ],
)
def test_tool_return_values_become_readable_observations(t: BaseTool, observation: str) -> None:
    outcome = ToolExecutor([t]).execute(t.name, "Lyon")
    assert outcome.error is None and outcome.observation == observation


@tool
def lookup(query: str, limit: int = 3) -> str:
    """Look something up; at most limit results."""
    return f"{query}|{limit}"


def test_text_for_a_tool_with_one_required_argument_is_never_split_on_commas() -> None:
    executor = ToolExecutor([lookup])
    assert executor.execute("lookup", "Paris, France").observation == "Paris, France|3"
    assert executor.execute("lookup", "a,\nb").observation == "a,\nb|3"
    assert executor.execute("lookup", ["Paris", 5]).observation == "Paris|5"  # lookup("Paris", 5)


@tool(response_format="content_and_artifact")
def chart(city: str) -> tuple[str, dict[str, list[int]]]:
    """A chart of a city's population; the text says what it shows, the artifact holds the data."""
    return f"A chart of {city}'s population.", {"years": [2020, 2021], "people": [2_100_000, 2_090_000]}


@pytest.mark.parametrize("run_async", [False, True])
def test_a_content_and_artifact_tool_keeps_its_artifact(run_async: bool) -> None:
    executor = ToolExecutor([chart])
    outcome = (
        asyncio.run(executor.aexecute("chart", "Paris")) if run_async else executor.execute("chart", "Paris")
    )
    assert outcome.error is None and outcome.observation == "A chart of Paris's population."
    assert outcome.output == (
        "A chart of Paris's population.",
        {"years": [2020, 2021], "people": [2_100_000, 2_090_000]},
    )


def test_broken_json_with_many_brackets_is_not_repaired(monkeypatch: pytest.MonkeyPatch) -> None:
    import json_repair

    repaired: list[str] = []
    real_loads = json_repair.loads
    monkeypatch.setattr(json_repair, "loads", lambda text, *a, **k: repaired.append(text) or real_loads(text))
    executor = ToolExecutor([subtract])
    # Few brackets: repaired (a missing closing brace), the tool runs.
    assert executor.execute("subtract", '{"a": 10, "b": 4').observation == "6"
    # Many: json_repair's time grows with their square (19 KB of '{"' took 9 s, before any timeout).
    outcome = executor.execute("subtract", '{"' * 9_500)
    assert outcome.error == "invalid_input" and outcome.observation.startswith("Error:")
    assert len(repaired) == 1


def test_a_tool_that_calls_sys_exit_fails_as_a_tool_and_the_run_goes_on() -> None:
    @tool
    def careless(x: str) -> str:
        """A tool whose library calls sys.exit."""
        raise SystemExit(3)

    # (An async tool's SystemExit is asyncio's to handle: it stops the event loop, by design.)
    for sync in (True, False):
        agent = ExplicitReActAgent(ScriptedChatModel([action("careless", "x"), final("gave up")]), [careless])
        result = agent.run("q") if sync else asyncio.run(agent.arun("q"))
        assert result.answer == "gave up"
        assert result.steps[0].observation == "Error: tool 'careless' failed: SystemExit: 3"


def test_an_argument_the_application_injects_is_never_taken_from_the_model() -> None:
    @tool
    def get_order(order_id: str, user_id: Annotated[str, InjectedToolArg]) -> str:
        """Look up one of the current user's orders."""
        return f"order {order_id} of user {user_id}"

    executor = ToolExecutor([get_order])
    assert "user_id" not in executor.specs["get_order"].args
    outcome = executor.execute("get_order", {"order_id": "7", "user_id": "admin"})
    assert "admin" not in outcome.observation and outcome.error == "invalid_input"
    assert "user_id" not in outcome.observation  # the hidden argument's name stays hidden
    assert "a value the application gives is missing" in outcome.observation

    @tool
    def orders(order_id: str, user_id: Annotated[str, InjectedToolArg] = "current") -> str:
        """The same, with the application's default."""
        return f"order {order_id} of user {user_id}"

    assert ToolExecutor([orders]).execute("orders", {"order_id": "7", "user_id": "admin"}).observation == (
        "order 7 of user current"
    )
