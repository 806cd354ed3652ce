"""Differences from langchain_classic a review found, each run through both executors on one script.

Constructor arguments converted the pydantic way, duplicate tool names, a classic agent's own
``return_stopped_response``, a return_direct tool with an agent whose output key is not ``output``,
and ``stream``'s keyword arguments. Each test builds the classic executor and ours over
ScriptedChatModels holding the same script and compares what an app sees.
"""

from __future__ import annotations

import asyncio
import logging
import time
import warnings
from collections.abc import Callable
from typing import Any

import pydantic
import pytest
from langchain_classic.agents import AgentExecutor as ClassicExecutor
from langchain_classic.agents import BaseSingleActionAgent, ZeroShotAgent
from langchain_classic.agents import create_react_agent as classic_create_react_agent
from langchain_core.agents import AgentAction, AgentFinish
from langchain_core.outputs import RunInfo
from langchain_core.prompts import PromptTemplate
from langchain_core.tools import BaseTool, tool

from explicit_react import AgentExecutor, create_react_agent
from explicit_react.compat import FORCE_STOP_TEXT
from explicit_react.testing import ScriptedChatModel
from tests.helpers import action, final

PROMPT = PromptTemplate.from_template(
    "Tools:\n{tools}\nUse one of [{tool_names}].\nQuestion: {input}\nThought:{agent_scratchpad}"
)


@tool
def search(query: str) -> str:
    """Look up a fact."""
    return f"result for {query}"


@tool(return_direct=True)
def direct(query: str) -> str:
    """Answer directly."""
    return f"direct: {query}"


TOOLS: list[BaseTool] = [search, direct]
EXECUTORS = (ClassicExecutor, AgentExecutor)


def pair(script: list[str], tools: list[BaseTool] = TOOLS, **kwargs: Any) -> tuple[Any, AgentExecutor]:
    """The classic executor and ours, each over its own ScriptedChatModel with ``script``."""
    theirs = ClassicExecutor(
        agent=classic_create_react_agent(ScriptedChatModel(script), tools, PROMPT), tools=tools, **kwargs
    )
    mine = AgentExecutor(
        agent=create_react_agent(ScriptedChatModel(script), tools, PROMPT), tools=tools, **kwargs
    )
    return theirs, mine


def outcome(run: Callable[[], Any]) -> tuple[str, Any]:
    """What ``run`` returned, or the type and message of what it raised."""
    try:
        return "ok", run()
    except Exception as exc:
        return "raised", (type(exc).__name__, str(exc).split("\nFor troubleshooting")[0])


def invoked(executor: Any, inputs: dict[str, Any], mode: str) -> Any:
    return executor.invoke(inputs) if mode == "sync" else asyncio.run(executor.ainvoke(inputs))


# -- Constructor arguments are converted as the classic's pydantic model converts them -------------
THREE_SEARCHES = [action("search", "a"), action("search", "b"), action("search", "c"), final("d")]


@pytest.mark.parametrize(
    "setting",
    [
        {"max_iterations": "2"},
        {"max_iterations": 2.0},
        {"max_execution_time": "30"},
        {"max_execution_time": 30},
        {"return_intermediate_steps": "false"},
        {"return_intermediate_steps": "yes"},
        {"verbose": "false"},
        {"verbose": 0},
        {"stream_runnable": "off"},
        {"trim_intermediate_steps": "1"},
        {"tags": ("a", "b")},
    ],
)
def test_settings_given_as_strings_are_converted_like_classic(setting: dict[str, Any]) -> None:
    """Settings read from environment variables or config files arrive as strings."""
    results = []
    for executor in pair(THREE_SEARCHES, **setting):
        name = next(iter(setting))
        result = executor.invoke({"input": "q"})
        owner = executor.agent if (name, type(executor)) == ("stream_runnable", ClassicExecutor) else executor
        attribute = getattr(owner, name)  # the classic hands stream_runnable to its RunnableAgent
        results.append((result["output"], sorted(result), attribute, type(attribute)))
    assert results[1] == results[0]


@pytest.mark.parametrize(
    "setting",
    [
        {"max_iterations": "two"},
        {"max_iterations": 2.5},
        {"max_execution_time": "soon"},
        {"return_intermediate_steps": "maybe"},
        {"verbose": "loud"},
        {"tags": "not-a-list"},
        {"metadata": ["not", "a", "dict"]},
    ],
)
def test_settings_that_do_not_convert_are_refused_at_construction_like_classic(
    setting: dict[str, Any],
) -> None:
    errors = []
    for create, executor in (
        (classic_create_react_agent, ClassicExecutor),
        (create_react_agent, AgentExecutor),
    ):
        agent = create(ScriptedChatModel([final("x")]), TOOLS, PROMPT)
        with pytest.raises(pydantic.ValidationError) as error:
            executor(agent=agent, tools=TOOLS, **setting)
        errors.append((error.value.title, [(e["loc"], e["type"]) for e in error.value.errors()]))
    assert errors[1] == errors[0]


def test_verbose_given_as_false_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    _, mine = pair([final("x")], verbose="false")
    mine.invoke({"input": "q"})
    assert capsys.readouterr().out == ""


# -- Duplicate tool names: the last one wins, as in the classic's name_to_tool_map ----------------
@tool("search")
def search_again(query: str) -> str:
    """Another search under the same name."""
    return "second"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_duplicate_tool_name_runs_the_last_tool_like_classic(mode: str) -> None:
    tools: list[BaseTool] = [search, direct, search_again]
    script = [action("search", "x"), action("nope", "y"), final("d")]
    results = []
    for executor in pair(script, tools=tools, return_intermediate_steps=True):
        if isinstance(executor, AgentExecutor):
            executor.classic_unknown_tool = True  # the classic's unknown-tool text, which lists the names
        result = invoked(executor, {"input": "q"}, mode)
        results.append([(a.tool, observation) for a, observation in result["intermediate_steps"]])
    assert results[1] == results[0]
    assert results[1][0] == ("search", "second")
    assert results[1][1] == ("nope", "nope is not a valid tool, try one of [search, direct].")


def test_a_duplicate_tool_name_is_logged_not_warned(caplog: pytest.LogCaptureFixture) -> None:
    """Apps that run with warnings as errors keep running, as with the classic; the log says it."""
    _, mine = pair([action("search", "x"), final("d")], tools=[search, search_again])
    with warnings.catch_warnings(), caplog.at_level(logging.WARNING, logger="explicit_react"):
        warnings.simplefilter("error")
        assert mine.invoke({"input": "q"})["output"] == "d"
    assert [r.getMessage() for r in caplog.records] == [
        "tool name 'search' is given more than once; the last tool with it is used (as in langchain_classic)"
    ]
    assert mine.tools == [search, search_again]  # kept as given, as the classic keeps them


# -- A classic agent's own return_stopped_response --------------------------------------------------
class LoopingAgent(BaseSingleActionAgent):
    """A custom classic agent that always searches and summarises what it found when it is stopped."""

    methods: list[str] = pydantic.Field(default_factory=list)

    @property
    def input_keys(self) -> list[str]:
        return ["input"]

    def plan(self, intermediate_steps: Any, callbacks: Any = None, **kwargs: Any) -> AgentAction:
        return AgentAction("search", f"q{len(intermediate_steps)}", "")

    async def aplan(self, intermediate_steps: Any, callbacks: Any = None, **kwargs: Any) -> AgentAction:
        return self.plan(intermediate_steps, callbacks, **kwargs)

    def return_stopped_response(
        self, early_stopping_method: str, intermediate_steps: Any, **kwargs: Any
    ) -> AgentFinish:
        self.methods.append(early_stopping_method)
        found = "; ".join(str(o) for _, o in intermediate_steps)
        return AgentFinish({"output": f"partial ({early_stopping_method}, {kwargs['input']}): {found}"}, "")


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("method", ["force", "generate"])
def test_a_classic_agents_own_stopped_response_is_used_like_classic(mode: str, method: str) -> None:
    outputs = []
    for executor in EXECUTORS:
        run = executor.from_agent_and_tools(
            agent=LoopingAgent(), tools=TOOLS, max_iterations=2, early_stopping_method=method
        )
        outputs.append(invoked(run, {"input": "x"}, mode)["output"])
    assert outputs[1] == outputs[0] == f"partial ({method}, x): result for q0; result for q1"


@tool
def slow(query: str) -> str:
    """Take a while."""
    time.sleep(0.3)
    return "late"


class SlowAgent(LoopingAgent):
    def plan(self, intermediate_steps: Any, callbacks: Any = None, **kwargs: Any) -> AgentAction:
        return AgentAction("slow", "q", "")


def test_a_classic_agent_stopped_by_the_time_limit_is_asked_for_its_force_response() -> None:
    """No extra model call once the time is up (as for a runnable agent): the agent's "force" response."""
    agent = SlowAgent(methods=[])
    mine = AgentExecutor.from_agent_and_tools(
        agent=agent, tools=[search, slow], max_execution_time=0.1, early_stopping_method="generate"
    )
    assert mine.invoke({"input": "x"})["output"] == "partial (force, x): "
    assert agent.methods == ["force"]


ZERO_SHOT_ENDINGS = {
    "a final answer": [action("search", "a"), final("from generate")],
    "an action": [action("search", "a"), action("search", "b", "More.")],
    "plain text": [action("search", "a"), "Paris is the capital of France."],
}


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("ending", list(ZERO_SHOT_ENDINGS))
def test_zero_shot_agent_generates_at_the_limit_like_classic(mode: str, ending: str) -> None:
    results = []
    for executor in EXECUTORS:
        llm = ScriptedChatModel(ZERO_SHOT_ENDINGS[ending])
        agent = ZeroShotAgent.from_llm_and_tools(llm, TOOLS)
        run = executor.from_agent_and_tools(
            agent=agent, tools=TOOLS, max_iterations=1, early_stopping_method="generate"
        )
        results.append((outcome(lambda run=run: invoked(run, {"input": "q"}, mode)), llm.calls[-1].prompt))
    assert results[1] == results[0]
    assert results[1][1].endswith(
        "Thought:\n\nI now need to return a final answer based on the previous steps:"
    )


def test_a_classic_agent_without_generate_refuses_it_like_classic() -> None:
    class Plain(LoopingAgent):
        def return_stopped_response(self, *args: Any, **kwargs: Any) -> AgentFinish:
            return BaseSingleActionAgent.return_stopped_response(self, *args, **kwargs)

    results = []
    for executor in EXECUTORS:
        run = executor.from_agent_and_tools(
            agent=Plain(), tools=TOOLS, max_iterations=1, early_stopping_method="generate"
        )
        results.append(outcome(lambda run=run: run.invoke({"input": "q"})))
    assert results[1] == results[0]
    assert results[1][0] == "raised"


# -- A return_direct tool answers under the agent's first output key -------------------------------
class AnswerAgent(BaseSingleActionAgent):
    """A custom classic agent whose output key is ``answer``, calling a return_direct tool."""

    @property
    def input_keys(self) -> list[str]:
        return ["input"]

    @property
    def return_values(self) -> list[str]:
        return ["answer"]

    def plan(
        self, intermediate_steps: Any, callbacks: Any = None, **kwargs: Any
    ) -> AgentAction | AgentFinish:
        if intermediate_steps:
            return AgentFinish({"answer": "done"}, "")
        return AgentAction("direct", "x", "")

    async def aplan(
        self, intermediate_steps: Any, callbacks: Any = None, **kwargs: Any
    ) -> AgentAction | AgentFinish:
        return self.plan(intermediate_steps, callbacks, **kwargs)


@pytest.mark.parametrize("mode", ["sync", "async", "stream"])
def test_a_return_direct_answer_goes_to_the_agents_output_key_like_classic(mode: str) -> None:
    results = []
    for executor in EXECUTORS:
        run = executor.from_agent_and_tools(agent=AnswerAgent(), tools=TOOLS)
        if mode == "stream":
            final_chunk = list(run.stream({"input": "x"}))[-1]
            results.append({k: v for k, v in final_chunk.items() if k != "messages"})
        else:
            results.append(invoked(run, {"input": "x"}, mode))
    assert results[1] == results[0]
    assert results[1]["answer"] == "direct: x"


def test_a_runnable_agents_return_direct_answer_is_still_output() -> None:
    results = [executor.invoke({"input": "q"}) for executor in pair([action("direct", "y")])]
    assert results[1] == results[0] == {"input": "q", "output": "direct: y"}


def test_the_force_text_at_the_limit_is_unchanged_for_a_runnable_agent() -> None:
    results = [e.invoke({"input": "q"})["output"] for e in pair(THREE_SEARCHES, max_iterations=1)]
    assert results[1] == results[0] == FORCE_STOP_TEXT


# -- stream / astream pass their keyword arguments on, as the classic does -------------------------
@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_stream_include_run_info_adds_the_run_like_classic(mode: str) -> None:
    finals = []
    for executor in pair([action("search", "a"), final("d")]):
        if mode == "stream":
            chunks = list(executor.stream({"input": "q"}, include_run_info=True))
        else:

            async def collect(executor: Any = executor) -> list[Any]:
                return [c async for c in executor.astream({"input": "q"}, include_run_info=True)]

            chunks = asyncio.run(collect())
        finals.append(chunks[-1])
    assert sorted(finals[1]) == sorted(finals[0]) == ["__run", "messages", "output"]
    assert isinstance(finals[1]["__run"], RunInfo)


@pytest.mark.parametrize("kwargs", [{"include_run_infos": True}, {"yield_actions": False}])
def test_stream_refuses_an_unknown_keyword_like_classic(kwargs: dict[str, Any]) -> None:
    for executor in pair([final("d")]):
        with pytest.raises(TypeError):
            list(executor.stream({"input": "q"}, **kwargs))
