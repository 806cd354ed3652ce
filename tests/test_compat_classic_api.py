"""The classic Chain surface of explicit_react's AgentExecutor, against langchain_classic's on the same script.

Covers ClassicChainAPI (explicit_react/classic_chain.py: ``__call__``, ``acall``, ``run``, ``arun``,
``apply``, the keys, ``lookup_tool``, ``save``), the Chain constructor arguments, the
``classic_unknown_tool`` option and AgentExecutorIterator (explicit_react/classic_iterator.py),
including their failure paths. bench/peer_suite.py runs langchain_classic's own tests of the same.
"""

from __future__ import annotations

import asyncio
import inspect
import uuid
import warnings
from types import SimpleNamespace
from typing import Any

import pydantic
import pytest
from langchain_classic.agents import AgentExecutor as ClassicExecutor
from langchain_classic.agents import AgentExecutorIterator as ClassicIterator
from langchain_classic.agents import AgentType, initialize_agent
from langchain_classic.agents import create_react_agent as classic_create_react_agent
from langchain_classic.agents import initialize as classic_initialize
from langchain_core.callbacks import BaseCallbackHandler, CallbackManager
from langchain_core.globals import get_verbose, set_verbose
from langchain_core.prompts import PromptTemplate
from langchain_core.tools import BaseTool, tool

from explicit_react import AgentExecutor, create_react_agent
from explicit_react.classic_chain import classic_invalid_tool_text
from explicit_react.classic_iterator import AgentExecutorIterator
from explicit_react.testing import ScriptedChatModel
from tests.helpers import action, final

PROMPT = PromptTemplate.from_template(
    "Tools:\n{tools}\nUse one of [{tool_names}].\nQuestion: {input}\nThought:{agent_scratchpad}"
)


@tool
def search(query: str) -> str:
    """Look up a fact."""
    return f"result for {query}"


TOOLS: list[BaseTool] = [search]
TWO_STEPS = [action("search", "a"), action("search", "b"), final("done")]


def pair(script: list[str], **kwargs: Any) -> tuple[Any, AgentExecutor]:
    """The classic executor and ours, each over its own ScriptedChatModel with ``script``."""
    theirs = ClassicExecutor(
        agent=classic_create_react_agent(ScriptedChatModel(script), TOOLS, PROMPT), tools=TOOLS, **kwargs
    )
    mine = AgentExecutor(
        agent=create_react_agent(ScriptedChatModel(script), TOOLS, PROMPT), tools=TOOLS, **kwargs
    )
    return theirs, mine


def ours(script: list[str], **kwargs: Any) -> AgentExecutor:
    return pair(script, **kwargs)[1]


def ours_via_initialize_agent(
    script: list[str], monkeypatch: pytest.MonkeyPatch, **kwargs: Any
) -> AgentExecutor:
    """Classic ``initialize_agent`` (a ZeroShotAgent) pointed at our executor, as an app can do."""
    monkeypatch.setattr(classic_initialize, "AgentExecutor", AgentExecutor)
    executor = initialize_agent(
        TOOLS, ScriptedChatModel(script), agent=AgentType.ZERO_SHOT_REACT_DESCRIPTION, **kwargs
    )
    assert isinstance(executor, AgentExecutor)
    return executor


class ChainStarts(BaseCallbackHandler):
    """Records the name, tags and metadata of each top-level chain run."""

    def __init__(self) -> None:
        self.starts: list[tuple[str | None, list[str], dict[str, Any]]] = []

    def on_chain_start(self, serialized: Any, inputs: Any, *, parent_run_id: Any = None, **kw: Any) -> None:
        if parent_run_id is None:
            self.starts.append((kw.get("name"), sorted(kw.get("tags") or []), kw.get("metadata") or {}))


# -- __call__ and acall ---------------------------------------------------------------------------
@pytest.mark.parametrize("call", ["sync", "async"])
def test_call_takes_the_classic_arguments(call: str) -> None:
    theirs, mine = pair([final("one")])
    results = []
    for executor in (theirs, mine):
        recorder = ChainStarts()
        args = ({"input": "q"}, True, [recorder])  # inputs, return_only_outputs, callbacks: positional
        kwargs = {"tags": ["t"], "metadata": {"m": 1}, "run_name": "named", "include_run_info": True}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the classic's deprecation warnings
            if call == "sync":
                result = executor(*args, **kwargs)
            else:
                result = asyncio.run(executor.acall(*args, **kwargs))
        results.append((result, recorder.starts))
    (expected, their_starts), (got, starts) = results
    assert set(got) == set(expected) == {"output", "__run"}  # return_only_outputs: no "input"
    assert isinstance(got["__run"].run_id, uuid.UUID)
    assert got["output"] == expected["output"] == "one"
    assert starts == their_starts == [("named", ["t"], {"m": 1})]


def test_call_takes_a_single_input() -> None:
    theirs, mine = pair([final("one"), final("two")])
    assert mine("q") == {"input": "q", "output": "one"}  # the classic: StopIteration for a runnable agent
    assert asyncio.run(mine.acall("q", return_only_outputs=True)) == {"output": "two"}
    with pytest.raises(StopIteration), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs("q")


# -- run and arun ---------------------------------------------------------------------------------
@pytest.mark.parametrize("call", ["sync", "async"])
def test_run_returns_the_answer_for_a_positional_or_keyword_input(
    call: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    executor = ours_via_initialize_agent([final("one"), final("two")], monkeypatch)
    recorder = ChainStarts()
    if call == "sync":
        answers = [executor.run("q", callbacks=[recorder], tags=["t"]), executor.run(input="q")]
    else:
        answers = [
            asyncio.run(executor.arun("q", callbacks=[recorder], tags=["t"])),
            asyncio.run(executor.arun(input="q")),
        ]
    assert answers == ["one", "two"]
    assert recorder.starts == [("AgentExecutor", ["t", "zero-shot-react-description"], {})]


def test_run_on_a_runnable_agent_works_where_the_classic_refuses() -> None:
    theirs, mine = pair([final("one")])
    with pytest.raises(ValueError, match=r"not exactly one output key. Got \[\]"):
        theirs.run("q")  # the classic knows no output keys for a runnable agent
    assert mine.output_keys == ["output"]
    assert mine.run("q") == "one"


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (
            (),
            {},
            "`run` supported with either positional arguments or keyword arguments, but none were provided.",
        ),
        (("a", "b"), {}, "`run` supports only one positional argument."),
        (("a",), {"input": "b"}, "but not both. Got args: ('a',) and kwargs: {'input': 'b'}."),
    ],
)
def test_run_refuses_bad_argument_forms_like_the_classic(
    args: tuple[Any, ...], kwargs: dict[str, Any], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = ours([])  # an empty script: a call that reached the model would raise ScriptExhausted
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        classic = initialize_agent(TOOLS, ScriptedChatModel([]), agent=AgentType.ZERO_SHOT_REACT_DESCRIPTION)
        with pytest.raises(ValueError) as their_error:
            classic.run(*args, **kwargs)
    with pytest.raises(ValueError) as our_error:
        mine.run(*args, **kwargs)
    assert message in str(our_error.value)
    assert str(our_error.value) == str(their_error.value)
    with pytest.raises(ValueError, match="`run` supp"):
        asyncio.run(mine.arun(*args, **kwargs))


@pytest.mark.parametrize("call", ["sync", "async"])
def test_run_refuses_when_there_is_not_exactly_one_output_key(
    call: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    executor = ours_via_initialize_agent([], monkeypatch, return_intermediate_steps=True)
    assert executor.output_keys == ["output", "intermediate_steps"]
    expected = (
        "`run` not supported when there is not exactly one output key. Got ['output', 'intermediate_steps']."
    )
    with pytest.raises(ValueError) as error:
        executor.run("q") if call == "sync" else asyncio.run(executor.arun("q"))
    assert str(error.value) == expected


def test_apply_runs_each_input() -> None:
    mine = ours([final("one"), final("two")])
    assert mine.apply([{"input": "a"}, {"input": "b"}]) == [
        {"input": "a", "output": "one"},
        {"input": "b", "output": "two"},
    ]


# -- Keys, inputs, outputs ------------------------------------------------------------------------
def test_a_single_input_goes_to_the_prompts_only_variable() -> None:
    prompt = PromptTemplate.from_template("{tools} {tool_names}\nQ: {question}\n{agent_scratchpad}")
    llm = ScriptedChatModel([final("yes")])
    executor = AgentExecutor(agent=create_react_agent(llm, TOOLS, prompt), tools=TOOLS)
    assert executor.input_keys == ["question"]
    assert executor.invoke("is it?") == {"question": "is it?", "output": "yes"}
    assert "Q: is it?" in llm.calls[0].prompt


def test_missing_input_keys_of_a_classic_agent_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    executor = ours_via_initialize_agent([], monkeypatch)
    assert executor.input_keys == ["input"]
    with pytest.raises(ValueError, match=r"Missing some input keys: \{'input'\}"):
        executor.invoke({"question": "q"})


def test_classic_agent_output_keys_come_from_the_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    executor = ours_via_initialize_agent(TWO_STEPS, monkeypatch, return_intermediate_steps=True)
    result = executor({"input": "q"})
    assert result["output"] == "done"
    assert [(a.tool, a.tool_input, o) for a, o in result["intermediate_steps"]] == [
        ("search", "a", "result for a"),
        ("search", "b", "result for b"),
    ]
    assert executor._action_agent is executor.agent


def test_lookup_tool_finds_the_exact_name_or_raises_key_error() -> None:
    mine = ours([])
    assert mine.lookup_tool("search") is mine.tools[0]
    with pytest.raises(KeyError):
        mine.lookup_tool("Search")  # the classic lookup: exact names only


def test_save_is_refused_and_a_runnable_agent_cannot_be_saved(tmp_path: Any) -> None:
    mine = ours([])
    with pytest.raises(ValueError, match="Saving not supported for agent executors"):
        mine.save(tmp_path / "executor.json")
    with pytest.raises(NotImplementedError, match="cannot be saved"):
        mine.save_agent(tmp_path / "agent.json")


# -- Constructor arguments ------------------------------------------------------------------------
def test_name_names_the_run() -> None:
    recorder = ChainStarts()
    mine = ours([final("one")], name="my_agent")
    assert mine.get_name() == "my_agent"
    mine.invoke({"input": "q"}, {"callbacks": [recorder]})
    assert recorder.starts == [("my_agent", [], {})]


def test_callback_manager_is_taken_as_callbacks_with_a_deprecation_warning() -> None:
    recorder = ChainStarts()
    with pytest.warns(DeprecationWarning, match="callback_manager is deprecated"):
        mine = ours([final("one")], callback_manager=CallbackManager([recorder]))
    mine.invoke({"input": "q"})
    assert recorder.starts == [("AgentExecutor", [], {})]
    with pytest.raises(ValueError, match="Cannot specify both callback_manager and callbacks"):
        ours([], callback_manager=CallbackManager([]), callbacks=[recorder])


def test_verbose_none_follows_the_global_setting() -> None:
    before = get_verbose()
    try:
        set_verbose(True)
        assert ours([]).verbose is True
        assert ours([], verbose=False).verbose is False
        set_verbose(False)
        assert ours([]).verbose is False
    finally:
        set_verbose(before)


def test_initialize_agent_passes_everything_through(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = ChainStarts()
    executor = ours_via_initialize_agent(
        [final("one")],
        monkeypatch,
        callback_manager=CallbackManager([recorder]),
        tags=["mine"],
        max_iterations=3,
        handle_parsing_errors=True,
    )
    assert (executor.max_iterations, executor.handle_parsing_errors) == (3, True)
    assert executor.tags == ["mine", "zero-shot-react-description"]
    assert executor.run("q") == "one"
    assert recorder.starts == [("AgentExecutor", ["mine", "zero-shot-react-description"], {})]


def test_a_classic_agent_given_other_tools_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    classic = ours_via_initialize_agent([], monkeypatch)

    @tool
    def other(query: str) -> str:
        """Another tool."""
        return query

    with pytest.raises(
        ValueError, match=r"Allowed tools \(\['search'\]\) different than provided tools \(\['other'\]\)"
    ):
        AgentExecutor(agent=classic.agent, tools=[other])


def test_unknown_arguments_are_refused() -> None:
    with pytest.raises(TypeError, match="max_iteration"):
        ours([], max_iteration=3)  # a typo: the classic (pydantic, extra="ignore") drops it silently


# -- The unknown-tool observation -----------------------------------------------------------------
@pytest.mark.parametrize("call", ["sync", "async"])
def test_classic_unknown_tool_gives_the_classic_text(call: str) -> None:
    script = [action("Foo", "Bar"), final("done")]
    theirs, classic_text = pair(script, return_intermediate_steps=True)
    classic_text.classic_unknown_tool = True
    default = ours(script, return_intermediate_steps=True)
    results = []
    for executor in (theirs, classic_text, default):
        run = (
            executor.invoke({"input": "q"})
            if call == "sync"
            else asyncio.run(executor.ainvoke({"input": "q"}))
        )
        results.append(run["intermediate_steps"][0][1])
    expected, got, ours_text = results
    assert got == expected == "Foo is not a valid tool, try one of [search]."
    assert got == classic_invalid_tool_text("Foo", ["search"])
    assert ours_text.startswith("Error: there is no tool named 'Foo'")


# -- The iterator ---------------------------------------------------------------------------------
def test_iterator_has_the_classic_attributes() -> None:
    mine = ours([], tags=["t"])
    iterator = mine.iter("q", callbacks=None, include_run_info=True)
    assert isinstance(iterator, AgentExecutorIterator)
    assert iterator.agent_executor is mine
    assert iterator.inputs == {"input": "q"}  # a dict, whatever was given
    assert (iterator.callbacks, iterator.tags, iterator.metadata) == (None, ["t"], None)
    assert (iterator.run_name, iterator.run_id, iterator.include_run_info, iterator.yield_actions) == (
        None,
        None,
        True,
        False,
    )
    assert (iterator.iterations, iterator.time_elapsed, iterator.intermediate_steps) == (0, 0.0, [])
    assert list(iterator.name_to_tool_map) == ["search"]
    assert list(iterator.color_mapping) == ["search"]
    iterator.inputs = "another"
    assert iterator.inputs == {"input": "another"}
    other = ours([])
    iterator.agent_executor = other
    assert iterator.agent_executor is other


def test_iterator_keeps_the_books_and_reset_clears_them() -> None:
    iterator = ours(TWO_STEPS).iter({"input": "q"})
    steps = iter(iterator)
    first = next(steps)
    assert list(first) == ["intermediate_step"]
    assert iterator.iterations == 1
    assert iterator.time_elapsed > 0.0
    assert [(a.tool, o) for a, o in iterator.intermediate_steps] == [("search", "result for a")]
    iterator.reset()
    assert (iterator.iterations, iterator.time_elapsed, iterator.intermediate_steps) == (0, 0.0, [])
    rest = list(steps)
    assert rest[-1]["output"] == "done"
    assert iterator.iterations == 2  # after the reset: the second tool iteration and the final answer
    iterator.update_iterations()
    assert iterator.iterations == 3


def test_iterator_counts_iterations_like_the_classic() -> None:
    theirs, mine = pair(TWO_STEPS)
    counts = []
    for executor in (theirs, mine):
        iterator = executor.iter({"input": "q"})
        chunks = list(iterator)
        counts.append((iterator.iterations, len(iterator.intermediate_steps), [list(c) for c in chunks]))
    assert (
        counts[1]
        == counts[0]
        == (3, 2, [["intermediate_step"], ["intermediate_step"], ["output", "messages"]])
    )


def test_iterator_with_yield_actions_gives_the_stream_chunks() -> None:
    theirs, mine = pair(TWO_STEPS)
    expected = [list(c) for c in ClassicIterator(theirs, {"input": "q"}, yield_actions=True)]
    iterator = AgentExecutorIterator(mine, {"input": "q"}, yield_actions=True)
    got = list(iterator)
    assert [list(c) for c in got] == expected
    assert [list(c) for c in got] == [["actions", "messages"], ["steps", "messages"]] * 2 + [
        ["output", "messages"]
    ]
    assert iterator.iterations == 3 and len(iterator.intermediate_steps) == 2


def test_iterator_config_reaches_the_run() -> None:
    recorder = ChainStarts()
    run_id = uuid.uuid4()
    iterator = AgentExecutorIterator(
        ours([final("one")]),
        "q",
        [recorder],
        tags=["t"],
        metadata={"m": 1},
        run_name="stepped",
        run_id=run_id,
        include_run_info=True,
    )
    [last] = list(iterator)
    assert last["__run"].run_id == run_id
    assert recorder.starts == [("stepped", ["t"], {"m": 1})]


def test_iterator_return_direct_and_limit_iterations() -> None:
    @tool(return_direct=True)
    def lookup(query: str) -> str:
        """Answer directly."""
        return f"direct {query}"

    llm = ScriptedChatModel([action("lookup", "x")])
    direct = AgentExecutor(agent=create_react_agent(llm, [lookup], PROMPT), tools=[lookup]).iter("q")
    assert list(direct)[-1]["output"] == "direct x"
    assert (direct.iterations, [o for _, o in direct.intermediate_steps]) == (1, ["direct x"])
    limited = ours(TWO_STEPS, max_iterations=1).iter("q")
    assert list(limited)[-1]["output"] == "Agent stopped due to iteration limit or time limit."
    assert limited.iterations == 1  # the stop is not an iteration


def test_async_iterator_keeps_the_books() -> None:
    iterator = ours(TWO_STEPS).iter({"input": "q"}, async_=True)

    async def collect() -> list[Any]:
        return [chunk async for chunk in iterator]

    chunks = asyncio.run(collect())
    assert chunks[-1]["output"] == "done"
    assert iterator.iterations == 3
    assert [o for _, o in iterator.intermediate_steps] == ["result for a", "result for b"]


# -- Nothing of the classic surface is missing ----------------------------------------------------
NOT_PROVIDED = {
    # RunnableSerializable (LangChain serialisation, configurable fields): we are a plain Runnable
    "configurable_alternatives",
    "configurable_fields",
    "get_lc_namespace",
    "is_lc_serializable",
    "lc_attributes",
    "lc_id",
    "lc_secrets",
    "to_json",
    "to_json_not_implemented",
    # the classic's pydantic validators, run at construction (ours does the same in __init__)
    "raise_callback_manager_deprecation",
    "set_verbose",
    "validate_runnable_agent",
    "validate_tools",
}


def public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def test_every_public_member_of_the_classic_executor_is_there() -> None:
    missing = public(ClassicExecutor) - public(AgentExecutor) - public(pydantic.BaseModel)
    assert missing == NOT_PROVIDED  # a new classic member shows up here
    assert public(ClassicIterator) <= public(AgentExecutorIterator)


def test_every_classic_constructor_argument_is_accepted() -> None:
    ours_arguments = set(inspect.signature(AgentExecutor.__init__).parameters)
    assert set(ClassicExecutor.model_fields) | {"stream_runnable"} <= ours_arguments


def test_make_final_outputs_saves_to_memory_and_adds_run_info() -> None:
    saved: list[tuple[dict[str, Any], dict[str, Any]]] = []

    class Memory:
        memory_variables = ("history",)

        def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
            return {"history": ""}

        def save_context(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
            saved.append((inputs, outputs))

    agent = create_react_agent(ScriptedChatModel([]), TOOLS, PROMPT)
    iterator = AgentExecutor(agent=agent, tools=TOOLS, memory=Memory()).iter("q", include_run_info=True)
    assert iterator.inputs == {"input": "q", "history": ""}
    run_id = uuid.uuid4()
    final = iterator.make_final_outputs({"output": "done"}, SimpleNamespace(run_id=run_id))
    assert final == {"output": "done", "__run": final["__run"]}
    assert final["__run"].run_id == run_id
    assert saved == [({"input": "q", "history": ""}, {"output": "done"})]
