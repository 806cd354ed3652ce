"""explicit_react.compat against langchain_classic: the same scripted model through both executors.

The differential tests build the classic stack (langchain_classic's create_react_agent + AgentExecutor)
and ours with two ScriptedChatModels holding the same script, and compare what apps can see. The
improvement tests first show the classic misbehaving, then ours doing the right thing.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_classic.agents import AgentExecutor as ClassicExecutor
from langchain_classic.agents import create_react_agent as classic_create_react_agent
from langchain_core.agents import AgentAction, AgentFinish, AgentStep
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.exceptions import OutputParserException
from langchain_core.prompts import PromptTemplate
from langchain_core.tools import BaseTool, ToolException, tool

from explicit_react import AgentExecutor, ReActOutputParser, StopReason, create_react_agent
from explicit_react.compat import FINAL_ANSWER_NOTE, FORCE_STOP_TEXT
from explicit_react.testing import ScriptedChatModel

HUB_REACT_PROMPT = PromptTemplate.from_template(
    """Answer the following questions as best you can. You have access to the following tools:

{tools}

Use the following format:

Question: the input question you must answer
Thought: you should always think about what to do
Action: the action to take, should be one of [{tool_names}]
Action Input: the input to the action
Observation: the result of the action
... (this Thought/Action/Action Input/Observation can repeat N times)
Thought: I now know the final answer
Final Answer: the final answer to the original input question

Begin!

Question: {input}
Thought:{agent_scratchpad}"""
)
FACTS = {"population of France": "68000000", "area of France": "551695"}


@tool
def search(query: str) -> str:
    """Look up a fact."""
    return FACTS.get(query, f"no result for {query}")


@tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@tool
def subtract(a: int, b: int) -> int:
    """Subtract b from a."""
    return a - b


@tool(return_direct=True)
def lookup_final(query: str) -> str:
    """Look up a fact and answer with it directly."""
    return f"direct: {query}"


@tool
def flaky(query: str) -> str:
    """A tool that fails with a ToolException."""
    raise ToolException(f"service unavailable for {query}")


@tool
def broken(query: str) -> str:
    """A tool with a bug."""
    raise RuntimeError("division by zero somewhere")


@tool
def slow(query: str) -> str:
    """A tool that hangs."""
    time.sleep(1.0)
    return "late"


TOOLS: list[BaseTool] = [search, echo, subtract, lookup_final]


def act(tool_name: str, tool_input: str, thought: str = "I need a tool.") -> str:
    return f"Thought: {thought}\nAction: {tool_name}\nAction Input: {tool_input}"


def answer(text: str) -> str:
    return f"Thought: I now know the final answer\nFinal Answer: {text}"


class EventNames(BaseCallbackHandler):
    """Records the name of every callback event, in order."""

    run_inline = True

    def __init__(self) -> None:
        self.names: list[str] = []
        self.tool_names: list[str] = []


def _recording(event: str) -> Callable[..., None]:
    def record(self: EventNames, *args: Any, **kwargs: Any) -> None:
        self.names.append(event)
        if event == "on_tool_start":
            self.tool_names.append(args[0].get("name", ""))

    return record


_EVENTS = ["on_chain_start", "on_chain_end", "on_chain_error", "on_chat_model_start", "on_llm_start"]
_EVENTS += ["on_llm_new_token", "on_llm_end", "on_llm_error", "on_tool_start", "on_tool_end", "on_tool_error"]
_EVENTS += ["on_agent_action", "on_agent_finish"]
for _event in _EVENTS:
    setattr(EventNames, _event, _recording(_event))


def classic(script: list[str], tools: list[BaseTool] = TOOLS, **kwargs: Any) -> tuple[Any, ScriptedChatModel]:
    llm = ScriptedChatModel(script)
    agent = classic_create_react_agent(llm, tools, HUB_REACT_PROMPT)
    return ClassicExecutor(agent=agent, tools=tools, **kwargs), llm


def ours(
    script: list[str], tools: list[BaseTool] = TOOLS, **kwargs: Any
) -> tuple[AgentExecutor, ScriptedChatModel]:
    llm = ScriptedChatModel(script)
    agent = create_react_agent(llm, tools, HUB_REACT_PROMPT)
    return AgentExecutor(agent=agent, tools=tools, **kwargs), llm


def trajectory(result: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    return [(a.tool, a.tool_input, observation) for a, observation in result["intermediate_steps"]]


def chunk_shape(chunk: dict[str, Any]) -> list[tuple[str, str]]:
    """Each key of a stream chunk with the type of its value's items."""
    shape = []
    for key, value in chunk.items():
        kinds = sorted({type(item).__name__ for item in value}) if isinstance(value, list) else []
        shape.append((key, ",".join(kinds) or type(value).__name__))
    return shape


TWO_STEPS = [
    act("search", "population of France"),
    act("search", "area of France", "Now the area."),
    answer("68 million people on 551695 km2"),
]


# -- Same contract -------------------------------------------------------------------------------
def test_invoke_matches_classic() -> None:
    (theirs, their_llm), (mine, my_llm) = (
        classic(TWO_STEPS, return_intermediate_steps=True),
        ours(TWO_STEPS, return_intermediate_steps=True),
    )
    expected, got = theirs.invoke({"input": "France?"}), mine.invoke({"input": "France?"})
    assert got["output"] == expected["output"] == "68 million people on 551695 km2"
    assert got.keys() == expected.keys() == {"input", "output", "intermediate_steps"}
    assert trajectory(got) == trajectory(expected)
    assert [type(a) for a, _ in got["intermediate_steps"]] == [AgentAction, AgentAction]
    assert [a.log for a, _ in got["intermediate_steps"]] == [a.log for a, _ in expected["intermediate_steps"]]
    assert [c.prompt for c in my_llm.calls] == [c.prompt for c in their_llm.calls]
    assert [c.stop for c in my_llm.calls] == [c.stop for c in their_llm.calls]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_stream_chunks_match_classic(mode: str) -> None:
    (theirs, _), (mine, _) = classic(TWO_STEPS), ours(TWO_STEPS)

    def collect(executor: Any) -> list[Any]:
        if mode == "sync":
            return list(executor.stream({"input": "France?"}))

        async def gather() -> list[Any]:
            return [chunk async for chunk in executor.astream({"input": "France?"})]

        return asyncio.run(gather())

    expected, got = collect(theirs), collect(mine)
    assert [chunk_shape(c) for c in got] == [chunk_shape(c) for c in expected]
    assert [type(c).__name__ for c in got] == ["AddableDict"] * 5
    assert got[-1] == expected[-1]
    assert got[1]["steps"] == expected[1]["steps"]
    assert isinstance(got[1]["steps"][0], AgentStep)


def invoke_each(executors: Any, recorders: Any, inputs: dict[str, Any], mode: str) -> Any:
    """Run each executor once, ``invoke`` or ``ainvoke``, with its recorder as the callback handler."""
    for executor, recorder in zip(executors, recorders, strict=True):
        config = {"callbacks": [recorder]}
        if mode == "sync":
            executor.invoke(inputs, config)
        else:
            asyncio.run(executor.ainvoke(inputs, config))
    return recorders


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_callback_events_match_classic(mode: str) -> None:
    script = [act("search", "population of France"), act("nosuchtool", "x"), answer("68 million")]
    (theirs, _), (mine, _) = classic(script), ours(script)
    expected, got = invoke_each((theirs, mine), (EventNames(), EventNames()), {"input": "France?"}, mode)
    assert got.names == expected.names
    assert got.names.count("on_agent_action") == 2
    assert got.tool_names == expected.tool_names == ["search", "invalid_tool"]


class ToolPayloads(BaseCallbackHandler):
    """Records what each tool run's callbacks are given."""

    def __init__(self) -> None:
        self.starts: list[tuple[str, str, Any]] = []
        self.ends: list[Any] = []

    def on_tool_start(self, serialized: dict[str, Any], input_str: str, **kwargs: Any) -> None:
        self.starts.append((serialized.get("name", ""), input_str, kwargs.get("inputs")))

    def on_tool_end(self, output: Any, **kwargs: Any) -> None:
        self.ends.append(output)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_unknown_tools_callback_payloads_match_classic(mode: str) -> None:
    script = [act("nosuchtool", "x"), answer("done")]
    (theirs, _), (mine, _) = classic(script), ours(script, classic_unknown_tool=True)
    expected, got = invoke_each((theirs, mine), (ToolPayloads(), ToolPayloads()), {"input": "q"}, mode)
    assert got.starts == expected.starts
    assert got.starts[0][2]["requested_tool_name"] == "nosuchtool"
    assert got.ends == expected.ends and "nosuchtool is not a valid tool" in got.ends[0]


def test_force_text_at_the_iteration_limit_matches_classic() -> None:
    script = [act("search", "population of France"), act("search", "area of France")]
    (theirs, _), (mine, _) = (
        classic(script, max_iterations=2, return_intermediate_steps=True),
        ours(script, max_iterations=2, return_intermediate_steps=True),
    )
    expected, got = theirs.invoke({"input": "France?"}), mine.invoke({"input": "France?"})
    assert got["output"] == expected["output"] == "Agent stopped due to iteration limit or time limit."
    assert trajectory(got) == trajectory(expected)
    assert mine.last_stop_reason is StopReason.MAX_ITERATIONS


def test_return_direct_matches_classic() -> None:
    script = [act("lookup_final", "capital of France")]
    (theirs, _), (mine, _) = (
        classic(script, return_intermediate_steps=True),
        ours(script, return_intermediate_steps=True),
    )
    expected, got = theirs.invoke({"input": "capital?"}), mine.invoke({"input": "capital?"})
    assert got["output"] == expected["output"] == "direct: capital of France"
    assert trajectory(got) == trajectory(expected)
    assert mine.last_stop_reason is StopReason.RETURN_DIRECT
    (theirs, _), (mine, _) = classic(script), ours(script)
    expected, got = list(theirs.stream({"input": "c"})), list(mine.stream({"input": "c"}))
    assert [chunk_shape(c) for c in got] == [chunk_shape(c) for c in expected]
    assert got[-1] == expected[-1]


@tool(response_format="content_and_artifact")
def retrieve(query: str) -> tuple[str, list[dict[str, Any]]]:
    """Search the documents."""
    return "Paris is the capital.", [{"id": 7, "text": "Paris is the capital."}]


@tool(response_format="content_and_artifact", return_direct=True)
def retrieve_direct(query: str) -> tuple[str, list[dict[str, Any]]]:
    """Search the documents and answer with the passage."""
    return "Paris is the capital.", [{"id": 7}]


def test_a_content_and_artifact_tools_observation_is_its_content_like_classic() -> None:
    """The classic calls a tool with no call id, so ``run`` gives the content: the model, the steps
    and a ``return_direct`` output never see the artifact."""
    script, tools = [act("retrieve", "capital"), answer("Paris")], [retrieve]
    (theirs, their_llm), (mine, my_llm) = (
        classic(script, tools, return_intermediate_steps=True),
        ours(script, tools, return_intermediate_steps=True),
    )
    expected, got = theirs.invoke({"input": "capital?"}), mine.invoke({"input": "capital?"})
    assert got["intermediate_steps"][0][1] == expected["intermediate_steps"][0][1] == "Paris is the capital."
    assert my_llm.calls[1].prompt == their_llm.calls[1].prompt
    script, tools = [act("retrieve_direct", "capital")], [retrieve_direct]
    (theirs, _), (mine, _) = classic(script, tools), ours(script, tools)
    assert (
        mine.invoke({"input": "c"})["output"]
        == theirs.invoke({"input": "c"})["output"]
        == "Paris is the capital."
    )


def test_a_tool_appended_after_construction_runs_like_classic() -> None:
    script = [act("lookup_final", "capital of France")]
    (theirs, _), (mine, _) = classic(script, [search]), ours(script, [search])
    theirs.tools.append(lookup_final)
    mine.tools.append(lookup_final)
    assert mine.invoke({"input": "c"})["output"] == theirs.invoke({"input": "c"})["output"]
    assert mine.last_stop_reason is StopReason.RETURN_DIRECT


@pytest.mark.parametrize("handler", [True, "The service is down, try later."])
def test_handle_tool_error_matches_classic(handler: bool | str) -> None:
    flaky_tool = flaky.model_copy(update={"handle_tool_error": handler})
    script = [act("flaky", "weather"), answer("unknown")]
    (theirs, _), (mine, _) = (
        classic(script, tools=[flaky_tool], return_intermediate_steps=True),
        ours(script, tools=[flaky_tool], return_intermediate_steps=True),
    )
    expected, got = theirs.invoke({"input": "weather?"}), mine.invoke({"input": "weather?"})
    assert trajectory(got) == trajectory(expected)
    assert got["intermediate_steps"][0][1] == (
        "service unavailable for weather" if handler is True else "The service is down, try later."
    )


@pytest.mark.parametrize(
    "handler", [True, "Check your output and make sure it conforms!", lambda e: "bad format"]
)
def test_parse_errors_appear_as_exception_steps(handler: Any) -> None:
    script = ["Thought: I am not sure what to do.", answer("done")]
    (theirs, _), (mine, _) = (
        classic(script, handle_parsing_errors=handler, return_intermediate_steps=True),
        ours(script, handle_parsing_errors=handler, return_intermediate_steps=True),
    )
    expected, got = theirs.invoke({"input": "q"}), mine.invoke({"input": "q"})
    assert got["output"] == expected["output"] == "done"
    [(action, observation)] = got["intermediate_steps"]
    assert (action.tool, action.tool_input) == ("_Exception", observation)
    assert action.log == "Thought: I am not sure what to do."
    if handler is True:  # our feedback: what was wrong and the format expected
        assert observation.startswith("Your reply has a Thought but no Action")
    else:
        assert trajectory(got) == trajectory(expected)


def test_parse_error_without_handling_raises_like_classic() -> None:
    script = ["Thought: I am not sure what to do."]
    (theirs, _), (mine, _) = classic(script), ours(script)
    with pytest.raises(ValueError, match="An output parsing error occurred") as classic_error:
        theirs.invoke({"input": "q"})
    with pytest.raises(ValueError, match="An output parsing error occurred") as our_error:
        mine.invoke({"input": "q"})
    assert isinstance(our_error.value.__cause__, OutputParserException)
    assert (
        str(our_error.value).split("This is the error")[0]
        == str(classic_error.value).split("This is the error")[0]
    )


VERBOSE_SCRIPT = [
    act("search", "population of France"),
    act("nosuchtool", "x"),
    act("lookup_final", "q"),
]


def printed(run: Callable[[], Any], capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    run()
    return capsys.readouterr().out


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_verbose_prints_what_classic_prints(mode: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Actions in green, each observation in its tool's colour (none for an unknown tool), the finish.

    Compared with the classic's sync run: its async run colours a fourth tool red and skips the
    action of a parse error, which ours does not copy (docs/migration.md)."""
    options: dict[str, Any] = {"verbose": True}
    (theirs, _), (mine, _) = (
        classic(VERBOSE_SCRIPT, **options),
        ours(VERBOSE_SCRIPT, classic_unknown_tool=True, **options),
    )
    expected = printed(lambda: theirs.invoke({"input": "France?"}), capsys)
    if mode == "sync":
        got = printed(lambda: mine.invoke({"input": "France?"}), capsys)
    else:
        got = printed(lambda: asyncio.run(mine.ainvoke({"input": "France?"})), capsys)
    assert got == expected
    assert "\x1b[36;1m\x1b[1;3m68000000\x1b[0m" in got  # search's colour
    assert "try one of [search, echo, subtract, lookup_final].\x1b[32;1m" in got  # uncoloured, then an action


def test_verbose_prints_a_classic_agents_prefixes_like_classic(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A classic agent object (``initialize_agent``'s ZeroShotAgent) adds its observation and LLM prefixes."""
    from langchain_classic.agents import AgentType, initialize_agent
    from langchain_classic.agents import initialize as classic_initialize

    tools = [search, echo, lookup_final]
    script = [act("search", "population of France"), act("lookup_final", "q")]

    def run() -> None:
        executor = initialize_agent(
            tools, ScriptedChatModel(script), agent=AgentType.ZERO_SHOT_REACT_DESCRIPTION, verbose=True
        )
        executor.invoke({"input": "France?"})

    expected = printed(run, capsys)
    monkeypatch.setattr(classic_initialize, "AgentExecutor", AgentExecutor)
    got = printed(run, capsys)
    assert got == expected
    assert "\nObservation: \x1b[36;1m\x1b[1;3m68000000\x1b[0m\nThought:" in got
    assert (
        "\nObservation: \x1b[38;5;200m\x1b[1;3mdirect: q\x1b[0m\n\x1b[32;1m" in got
    )  # return_direct: no "Thought:"


def test_verbose_prints_observations_no_tool_run_reported(capsys: pytest.CaptureFixture[str]) -> None:
    """A tool that raised and a repeated call refused by loop detection: the classic has neither
    (it raises; it runs the repeat), ours shows their observations the same way, in the tool's colour.
    A parse error's observation is printed after its text, uncoloured, as in the classic."""
    script = [act("broken", "x"), act("search", "area of France"), act("search", "area of France")]
    script += ["Thought: not sure.", answer("ok")]
    mine, _ = ours(script, tools=[broken, search], verbose=True, handle_parsing_errors="Bad format.")
    out = printed(lambda: mine.invoke({"input": "France?"}), capsys)
    assert "Thought: not sure.\x1b[0mBad format.\x1b[32;1m" in out
    assert "\x1b[1;3mError: tool 'broken' failed: RuntimeError: division by zero somewhere\x1b[0m" in out
    assert "\x1b[1;3m551695\x1b[0m" in out
    assert "\x1b[1;3mError: you already called search" in out
    quiet, _ = ours(script, tools=[broken, search], handle_parsing_errors="Bad format.")
    assert printed(lambda: quiet.invoke({"input": "France?"}), capsys) == ""


def test_iter_matches_classic() -> None:
    (theirs, _), (mine, _) = classic(TWO_STEPS), ours(TWO_STEPS)
    expected, got = list(theirs.iter({"input": "France?"})), list(mine.iter({"input": "France?"}))
    assert [list(c) for c in got] == [list(c) for c in expected]
    assert [list(c) for c in got] == [["intermediate_step"], ["intermediate_step"], ["output", "messages"]]
    assert got[0]["intermediate_step"] == expected[0]["intermediate_step"]
    assert got[-1]["output"] == expected[-1]["output"]


def test_async_iter_and_batch() -> None:
    mine, _ = ours(TWO_STEPS)

    async def collect() -> list[Any]:
        return [chunk async for chunk in mine.iter({"input": "France?"})]

    assert [list(c) for c in asyncio.run(collect())][-1] == ["output", "messages"]
    llm = ScriptedChatModel([answer("one"), answer("two"), answer("three")])
    executor = AgentExecutor(agent=create_react_agent(llm, TOOLS, HUB_REACT_PROMPT), tools=TOOLS)
    outputs = executor.batch([{"input": "a"}, {"input": "b"}], {"max_concurrency": 1})
    assert [o["output"] for o in outputs] == ["one", "two"]
    assert [o["input"] for o in outputs] == ["a", "b"]
    assert executor.invoke("c") == {"input": "c", "output": "three"}  # the classic cannot take a string here


def test_drives_an_agent_built_by_langchain_classic() -> None:
    script = [act("search", "population of France"), "Thought: hmm", answer("68 million")]
    recorders = EventNames(), EventNames()
    results = []
    for executor_class, recorder in zip((ClassicExecutor, AgentExecutor), recorders, strict=True):
        agent = classic_create_react_agent(ScriptedChatModel(script), TOOLS, HUB_REACT_PROMPT)
        executor = executor_class(
            agent=agent, tools=TOOLS, handle_parsing_errors=True, return_intermediate_steps=True
        )
        results.append(executor.invoke({"input": "France?"}, {"callbacks": [recorder]}))
    expected, got = results
    assert got["output"] == expected["output"] == "68 million"
    assert trajectory(got) == trajectory(expected)
    missing_action = "Invalid Format: Missing 'Action:' after 'Thought:'"
    assert trajectory(got)[1] == ("_Exception", missing_action, missing_action)
    assert recorders[1].names == recorders[0].names


def test_trim_intermediate_steps_matches_classic() -> None:
    (theirs, their_llm), (mine, my_llm) = (
        classic(TWO_STEPS, trim_intermediate_steps=1),
        ours(TWO_STEPS, trim_intermediate_steps=1),
    )
    theirs.invoke({"input": "France?"})
    mine.invoke({"input": "France?"})
    assert [c.prompt for c in my_llm.calls] == [c.prompt for c in their_llm.calls]
    assert "population of France" not in my_llm.calls[2].prompt.split("Question: France?")[-1]


def test_memory_matches_classic() -> None:
    from langchain_classic.memory import ConversationBufferMemory

    memories = (
        ConversationBufferMemory(memory_key="chat_history"),
        ConversationBufferMemory(memory_key="chat_history"),
    )
    (theirs, _), (mine, _) = (
        classic([answer("hello Bob")], memory=memories[0]),
        ours([answer("hello Bob")], memory=memories[1]),
    )
    expected, got = theirs.invoke({"input": "I am Bob"}), mine.invoke({"input": "I am Bob"})
    assert got == expected == {"input": "I am Bob", "chat_history": "", "output": "hello Bob"}
    assert memories[1].buffer == memories[0].buffer == "Human: I am Bob\nAI: hello Bob"


def test_create_react_agent_rejects_a_prompt_missing_variables_like_classic() -> None:
    bad = PromptTemplate.from_template("Question: {input}\n{agent_scratchpad}")
    with pytest.raises(ValueError) as classic_error:
        classic_create_react_agent(ScriptedChatModel([]), TOOLS, bad)
    with pytest.raises(ValueError) as our_error:
        create_react_agent(ScriptedChatModel([]), TOOLS, bad)
    assert "Prompt missing required variables" in str(our_error.value)
    assert sorted(str(our_error.value)) == sorted(str(classic_error.value))


def test_default_prompt_shows_json_arguments_and_runs() -> None:
    llm = ScriptedChatModel([act("subtract", '{"a": 10, "b": 4}'), answer("6")])
    executor = AgentExecutor(
        agent=create_react_agent(llm, TOOLS), tools=TOOLS, return_intermediate_steps=True
    )
    result = executor.invoke({"input": "10 - 4?"})
    assert result["output"] == "6"
    assert result["intermediate_steps"][0][1] == 6
    first_prompt = llm.calls[0].prompt
    assert '"a": integer, "b": integer' in first_prompt
    assert "Question: 10 - 4?" in first_prompt
    assert "{" not in first_prompt.replace('{"a"', "")  # no unfilled template variable


def test_our_parser_is_a_drop_in_for_the_classic_stack() -> None:
    script = [act("search", "population of France"), "no format at all", answer("68 million")]
    llm = ScriptedChatModel(script)
    agent = classic_create_react_agent(llm, TOOLS, HUB_REACT_PROMPT, output_parser=ReActOutputParser())
    executor = ClassicExecutor(
        agent=agent, tools=TOOLS, handle_parsing_errors=True, return_intermediate_steps=True
    )
    result = executor.invoke({"input": "France?"})
    assert result["output"] == "68 million"
    assert result["intermediate_steps"][1][0].log == "no format at all"
    with pytest.raises(OutputParserException) as error:
        ReActOutputParser().parse("no format at all")
    assert error.value.send_to_llm and error.value.llm_output == "no format at all"
    assert error.value.observation.startswith("Your reply has no Action and no Final Answer")
    assert ReActOutputParser().parse(answer("yes")) == AgentFinish({"output": "yes"}, answer("yes"))


# -- Where we are better: the classic misbehaves, ours does the right thing ----------------------
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_generate_gives_a_final_answer_at_the_limit(mode: str) -> None:
    script = [act("search", "population of France"), answer("about 68 million")]
    theirs, _ = classic(script, max_iterations=1, early_stopping_method="generate")
    with pytest.raises(ValueError, match="unsupported early_stopping_method"):
        theirs.invoke({"input": "France?"})
    mine, llm = ours(script, max_iterations=1, early_stopping_method="generate")
    run = mine.invoke if mode == "sync" else lambda x: asyncio.run(mine.ainvoke(x))
    assert run({"input": "France?"})["output"] == "about 68 million"
    assert llm.calls[-1].prompt.rstrip().endswith(f"68000000\n\n{FINAL_ANSWER_NOTE}\nThought:")
    assert mine.last_stop_reason is StopReason.MAX_ITERATIONS
    llm.assert_all_used()


def test_generate_falls_back_to_the_force_text_without_a_final_answer() -> None:
    script = [act("search", "population of France"), act("search", "area of France")]
    mine, _ = ours(script, max_iterations=1, early_stopping_method="generate")
    assert mine.invoke({"input": "France?"})["output"] == FORCE_STOP_TEXT


def test_max_execution_time_interrupts_a_hanging_tool() -> None:
    script = [act("slow", "x"), answer("never")]
    theirs, _ = classic(script, tools=[slow], max_execution_time=0.2)
    started = time.monotonic()
    assert theirs.invoke({"input": "q"})["output"] == FORCE_STOP_TEXT
    assert time.monotonic() - started >= 1.0  # the classic waited for the tool
    mine, _ = ours(script, tools=[slow], max_execution_time=0.2)
    started = time.monotonic()
    assert mine.invoke({"input": "q"})["output"] == FORCE_STOP_TEXT
    assert time.monotonic() - started < 0.8
    assert mine.last_stop_reason is StopReason.MAX_SECONDS


def test_max_execution_time_interrupts_a_hanging_model() -> None:
    llm = ScriptedChatModel([answer("late")], delay=1.0)
    mine = AgentExecutor(
        agent=create_react_agent(llm, TOOLS, HUB_REACT_PROMPT), tools=TOOLS, max_execution_time=0.2
    )
    started = time.monotonic()
    assert mine.invoke({"input": "q"})["output"] == FORCE_STOP_TEXT
    assert time.monotonic() - started < 0.8


def test_multi_argument_tool_receives_its_json_arguments() -> None:
    script = [act("subtract", '{"a": 10, "b": 4}'), answer("6")]
    theirs, _ = classic(script)
    with pytest.raises(Exception, match="validation error"):
        theirs.invoke({"input": "10 - 4?"})
    mine, _ = ours(script, return_intermediate_steps=True)
    result = mine.invoke({"input": "10 - 4?"})
    assert trajectory(result) == [("subtract", {"a": 10, "b": 4}, 6)]


@tool
def book_flight(payload: str) -> str:
    """Book a flight; payload is JSON with origin and dest (the classic recipe for several values)."""
    trip = json.loads(payload)
    return f"booked {trip['origin']}->{trip['dest']}"


def test_a_one_text_argument_tool_gets_json_input_as_text_like_classic() -> None:
    script = [act("book_flight", '{"origin": "PAR", "dest": "NYC"}'), answer("booked")]
    theirs, _ = classic(script, [book_flight], return_intermediate_steps=True)
    mine, _ = ours(script, [book_flight], return_intermediate_steps=True)
    observations = [
        [observation for _, observation in executor.invoke({"input": "Fly me."})["intermediate_steps"]]
        for executor in (theirs, mine)
    ]
    assert observations[0] == observations[1] == ["booked PAR->NYC"]


def test_an_ordinary_tool_exception_becomes_an_observation() -> None:
    script = [act("broken", "x"), answer("the tool is broken")]
    theirs, _ = classic(script, tools=[broken])
    with pytest.raises(RuntimeError, match="division by zero"):
        theirs.invoke({"input": "q"})
    mine, _ = ours(script, tools=[broken], return_intermediate_steps=True)
    result = mine.invoke({"input": "q"})
    assert result["output"] == "the tool is broken"
    assert (
        result["intermediate_steps"][0][1]
        == "Error: tool 'broken' failed: RuntimeError: division by zero somewhere"
    )


def test_quotes_in_tool_input_are_left_intact() -> None:
    script = [act("echo", 'a pizza of 12"'), answer("ok")]
    (theirs, _), (mine, _) = (
        classic(script, return_intermediate_steps=True),
        ours(script, return_intermediate_steps=True),
    )
    assert theirs.invoke({"input": "q"})["intermediate_steps"][0][1] == "a pizza of 12"  # quote stripped
    assert mine.invoke({"input": "q"})["intermediate_steps"][0][1] == 'a pizza of 12"'


def test_a_hallucinated_observation_never_reaches_the_tool() -> None:
    script = [act("echo", "hello") + "\nObservation: made up by the model", answer("ok")]
    theirs = ClassicExecutor(
        agent=classic_create_react_agent(
            ScriptedChatModel(script, ignore_stop=True), TOOLS, HUB_REACT_PROMPT
        ),
        tools=TOOLS,
        return_intermediate_steps=True,
    )
    assert "made up" in theirs.invoke({"input": "q"})["intermediate_steps"][0][1]
    mine = AgentExecutor(
        agent=create_react_agent(ScriptedChatModel(script, ignore_stop=True), TOOLS, HUB_REACT_PROMPT),
        tools=TOOLS,
        return_intermediate_steps=True,
    )
    action, observation = mine.invoke({"input": "q"})["intermediate_steps"][0]
    assert observation == "hello"
    assert "made up" not in action.log


@pytest.mark.parametrize(
    ("handler", "reply"),
    [
        (True, act("search", "x") + "\nFinal Answer: 42"),  # both: the classic's error has no send_to_llm
        ("Check your output and make sure it conforms!", "Thought: I am not sure."),
    ],
)
def test_parse_error_feedback_keeps_exception_text_out_of_the_scratchpad(handler: Any, reply: str) -> None:
    script = [reply, answer("done")]
    (theirs, their_llm), (mine, my_llm) = (
        classic(script, handle_parsing_errors=handler),
        ours(script, handle_parsing_errors=handler),
    )
    theirs.invoke({"input": "q"})
    mine.invoke({"input": "q"})
    assert "For troubleshooting, visit: https://" in their_llm.calls[1].prompt
    for leaked in ("troubleshooting", "https://", "Could not parse LLM output", "Parsing LLM output"):
        assert leaked not in my_llm.calls[1].prompt
    assert reply.splitlines()[0] in my_llm.calls[1].prompt  # the model still sees what it wrote


# -- Stop reasons and loop detection -------------------------------------------------------------
@pytest.mark.parametrize(
    ("script", "kwargs", "reason"),
    [
        ([answer("yes")], {}, StopReason.SUCCESS),
        ([act("lookup_final", "x")], {}, StopReason.RETURN_DIRECT),
        ([act("search", "a"), act("search", "b")], {"max_iterations": 2}, StopReason.MAX_ITERATIONS),
        ([act("search", "a")] * 3, {}, StopReason.LOOP_DETECTED),
        ([answer("late")], {"max_execution_time": 0.0}, StopReason.MAX_SECONDS),
    ],
)
def test_stop_reasons_are_distinct_and_opt_in_in_the_output(
    script: list[str], kwargs: dict[str, Any], reason: StopReason
) -> None:
    plain, _ = ours(script, **kwargs)
    result = plain.invoke({"input": "q"})
    assert "stop_reason" not in result
    assert plain.last_stop_reason is reason
    opted, _ = ours(script, return_stop_reason=True, **kwargs)
    assert opted.invoke({"input": "q"})["stop_reason"] == reason.value
    streamed, _ = ours(script, return_stop_reason=True, **kwargs)
    assert list(streamed.stream({"input": "q"}))[-1]["stop_reason"] == reason.value


def test_loop_detection_refuses_a_repeated_call_and_can_be_turned_off() -> None:
    calls: list[str] = []

    @tool
    def counted(query: str) -> str:
        """Count calls."""
        calls.append(query)
        return "same answer"

    script = [act("counted", "x")] * 3 + [answer("done")]
    mine, _ = ours(script[:3], tools=[counted], return_intermediate_steps=True)
    result = mine.invoke({"input": "q"})
    assert calls == ["x"]
    assert result["output"] == FORCE_STOP_TEXT
    assert result["intermediate_steps"][1][1].startswith("Error: you already called counted")
    calls.clear()
    unguarded, _ = ours(script, tools=[counted], detect_loops=False)
    assert unguarded.invoke({"input": "q"})["output"] == "done"
    assert calls == ["x", "x", "x"]


def test_loop_detection_covers_a_made_up_tool_called_again() -> None:
    script = [act("lookup", "x")] * 3 + [answer("done")]
    mine, _ = ours(script[:3], return_intermediate_steps=True)
    result = mine.invoke({"input": "q"})
    observations = [observation for _, observation in result["intermediate_steps"]]
    assert "there is no tool named 'lookup'" in observations[0]
    assert observations[1].startswith("Error: you already called lookup with this input in step 1")
    assert result["output"] == FORCE_STOP_TEXT and mine.last_stop_reason is StopReason.LOOP_DETECTED
    async_run, _ = ours(script[:3])
    assert asyncio.run(async_run.ainvoke({"input": "q"}))["output"] == FORCE_STOP_TEXT
    assert async_run.last_stop_reason is StopReason.LOOP_DETECTED
    unguarded, _ = ours(script, detect_loops=False)
    assert unguarded.invoke({"input": "q"})["output"] == "done"


# -- Packaging -----------------------------------------------------------------------------------
def test_importing_explicit_react_does_not_import_langchain_classic() -> None:
    code = "import sys, explicit_react; print('langchain_classic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_swap_example_runs_offline() -> None:
    example = Path(__file__).parent.parent / "examples" / "langchain_swap.py"
    assert len(example.read_text().splitlines()) < 60
    out = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, check=True, timeout=60
    )
    assert "Paris" in out.stdout


def test_classic_agent_gets_json_arguments_loose_names_and_run_info() -> None:
    agent = classic_create_react_agent(
        ScriptedChatModel([act("Subtract", '{"a": 10, "b": 4}'), answer("6")]), TOOLS, HUB_REACT_PROMPT
    )
    executor = AgentExecutor(agent=agent, tools=TOOLS, return_intermediate_steps=True)
    result = executor.invoke({"input": "10 - 4?"}, include_run_info=True)
    assert trajectory(result) == [("Subtract", '{"a": 10, "b": 4}', 6)]
    assert result["__run"].run_id is not None
    only, _ = ours([answer("x")])
    assert only.invoke({"input": "q"}, return_only_outputs=True) == {"output": "x"}
