"""ExplicitReActAgent: the loop, its entry points, and every way a turn can go wrong."""

from __future__ import annotations

import asyncio
import io
import json

import pytest
from langchain_core.language_models import FakeListLLM
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import StructuredTool, ToolException, tool
from rich.console import Console

from explicit_react import AgentResult, ConfigurationError, ExplicitReActAgent, Step, StopReason, drivers
from explicit_react.display import TracePrinter
from explicit_react.errors import ModelCallError
from explicit_react.testing import ScriptedChatModel, ScriptExhausted
from tests.helpers import EventRecorder, action, final, search, subtract

FRANCE_SCRIPT = [
    action("search", "population of France", "First the population of France."),
    action("search", "population of Paris", "Now Paris."),
    action("subtract", '{"a": 68000000, "b": 2100000}', "Subtract."),
    final("About 65,900,000 more people live in France than in Paris."),
]
QUESTION = "How many more people live in France than in Paris?"


def france_agent(**kwargs: object) -> tuple[ExplicitReActAgent, ScriptedChatModel]:
    model = ScriptedChatModel(FRANCE_SCRIPT)
    return ExplicitReActAgent(model, [search, subtract], **kwargs), model  # type: ignore[arg-type]


def test_multi_step_run_records_every_step() -> None:
    agent, model = france_agent()
    result = agent.run(QUESTION)
    assert result.stop_reason is StopReason.SUCCESS and result.success and result.error is None
    assert result.answer == "About 65,900,000 more people live in France than in Paris."
    assert [(s.action, s.action_input, s.observation) for s in result.steps] == [
        ("search", "population of France", "68000000"),
        ("search", "population of Paris", "2100000"),
        ("subtract", {"a": 68000000, "b": 2100000}, "65900000"),
    ]
    assert result.steps[0].thought == "First the population of France."
    assert result.steps[0].log.startswith("Thought: First")
    assert result.steps[2].tool_output == 65900000
    assert result.llm_calls == 4
    assert result.usage.total_tokens == sum(s.usage.total_tokens for s in result.steps) + _last_call_tokens(
        model
    )
    model.assert_all_used()
    json.dumps(result.to_dict())  # serialisable
    assert result.to_dict()["stop_reason"] == "success"


def _last_call_tokens(model: ScriptedChatModel) -> int:
    last = model.calls[-1]
    return sum(len(str(m.content).split()) for m in last.messages) + len(FRANCE_SCRIPT[-1].split())


def test_observations_reach_the_next_prompt_and_stop_sequence_is_bound() -> None:
    agent, model = france_agent()
    agent.run(QUESTION)
    assert model.calls[0].stop == ["\nObservation:"]
    second = model.calls[1].prompt
    assert "Action: search\nAction Input: population of France\nObservation: 68000000" in second
    assert "You have 4 steps left" in second
    assert "- subtract: Subtract b from a." in model.calls[0].prompt
    assert '"a": integer' in model.calls[0].prompt


def test_think_act_observe_returns_answer_and_step_dicts() -> None:
    agent, _ = france_agent()
    answer, steps = agent.think_act_observe(QUESTION)
    assert answer.startswith("About 65,900,000")
    assert len(steps) == 3
    assert {"thought", "action", "action_input", "observation"} <= set(steps[0])


def test_phases_are_public_and_usable_alone() -> None:
    model = ScriptedChatModel([action("search", "population of Paris")])
    agent = ExplicitReActAgent(model, [search])
    turn = agent.think("How many people live in Paris?")
    acted = agent.act(turn)
    step = agent.observe(turn, acted)
    assert isinstance(step, Step)
    assert (step.action, step.observation) == ("search", "2100000")


def test_parse_error_becomes_an_observation_and_the_model_recovers() -> None:
    model = ScriptedChatModel(["I think the answer is probably 42.", final("42")])
    result = ExplicitReActAgent(model, [search]).run("What is it?")
    assert result.stop_reason is StopReason.SUCCESS and result.answer == "42"
    (step,) = result.steps
    assert step.error == "parse_error" and step.action == ""
    assert step.observation.startswith("Error:")
    assert "Final Answer" in step.observation  # the feedback shows the format
    assert "I think the answer is probably 42." in model.calls[1].prompt  # the model sees what it wrote


def test_unknown_tool_lists_tools_and_suggests_the_closest() -> None:
    model = ScriptedChatModel(
        [action("serch", "population of Paris"), action("search", "population of Paris"), final("2.1M")]
    )
    result = ExplicitReActAgent(model, [search, subtract]).run("Paris?")
    first = result.steps[0]
    assert first.error == "unknown_tool" and first.action == "serch"
    assert "Did you mean 'search'?" in first.observation and "subtract" in first.observation
    assert result.steps[1].observation == "2100000" and result.success


def test_tool_name_matching_ignores_case_and_separators() -> None:
    model = ScriptedChatModel([action("Search", "population of Paris"), final("ok")])
    result = ExplicitReActAgent(model, [search]).run("Paris?")
    assert result.steps[0].action == "search" and result.steps[0].observation == "2100000"


def test_bad_input_for_a_multi_argument_tool_names_the_argument() -> None:
    model = ScriptedChatModel(
        [action("subtract", '{"a": 5, "c": 1}'), action("subtract", "five minus one"), final("4")]
    )
    result = ExplicitReActAgent(model, [subtract]).run("5-1?")
    missing, unparsed = result.steps[0], result.steps[1]
    assert missing.error == "invalid_input" and "'b'" in missing.observation
    assert missing.observation.startswith("Error: invalid input for tool 'subtract'")
    assert unparsed.error == "invalid_input" and '"a": integer' in unparsed.observation


def test_tool_exception_becomes_an_observation() -> None:
    @tool
    def flaky(query: str) -> str:
        """Always fails."""
        raise ValueError("backend exploded")

    model = ScriptedChatModel([action("flaky", "x"), final("gave up")])
    result = ExplicitReActAgent(model, [flaky]).run("q")
    assert result.steps[0].error == "tool_error"
    assert result.steps[0].observation == "Error: tool 'flaky' failed: ValueError: backend exploded"
    assert result.success


def test_tool_exception_with_handle_tool_error_uses_the_tools_message() -> None:
    def fail(query: str) -> str:
        raise ToolException("the index is rebuilding, try later")

    handled = StructuredTool.from_function(
        fail, name="lookup", description="Look up.", handle_tool_error=True
    )
    model = ScriptedChatModel([action("lookup", "x"), final("later")])
    result = ExplicitReActAgent(model, [handled]).run("q")
    assert result.steps[0].observation == "the index is rebuilding, try later"


def test_model_error_after_two_steps_keeps_the_steps() -> None:
    model = ScriptedChatModel(
        [
            action("search", "population of France"),
            action("search", "population of Paris"),
            ValueError("quota gone"),
        ]
    )
    result = ExplicitReActAgent(model, [search], max_retries=0).run("q")
    assert result.stop_reason is StopReason.LLM_ERROR and not result.success
    assert len(result.steps) == 2
    assert result.error is not None and "quota gone" in result.error
    assert result.answer  # a sentence, never empty


def test_script_exhaustion_is_not_silent() -> None:
    model = ScriptedChatModel([action("search", "population of France")])
    result = ExplicitReActAgent(model, [search], max_retries=0).run("q")
    assert result.stop_reason is StopReason.LLM_ERROR
    assert result.error is not None and "ScriptExhausted" in result.error
    with pytest.raises(ScriptExhausted):
        model.invoke("again")


def test_iteration_limit_asks_once_more_for_an_answer_without_tools() -> None:
    model = ScriptedChatModel([action("search", "population of France"), final("About 68 million.")])
    result = ExplicitReActAgent(model, [search], max_iterations=1).run("France?")
    assert result.stop_reason is StopReason.MAX_ITERATIONS and not result.success
    assert result.answer == "About 68 million."
    assert len(result.steps) == 1  # the forced call is not a step
    last_prompt = model.calls[-1].prompt
    assert "No more tools can be used" in last_prompt
    assert "search: population of France\n68000000" in last_prompt  # what the tool returned
    assert "Action:" not in last_prompt and "Thought: " not in last_prompt.split("Reply in this format")[0]
    assert result.error is not None and "max_iterations=1" in result.error


def test_the_answer_at_a_limit_is_told_which_calls_failed() -> None:
    """A failed look-up stays in view next to a successful one, so the answer can say what is missing."""

    def broken(query: str) -> str:
        raise ConnectionError("the index is down")

    index = StructuredTool.from_function(broken, name="paris_index", description="Paris facts.")
    script = [
        action("search", "population of France"),
        action("paris_index", "population of Paris"),
        action("search", "population of France"),  # refused: a repeat
        action("search", "population of France"),  # loop detected
        final("France has 68 million people; the Paris figure could not be found."),
    ]
    model = ScriptedChatModel(script)
    result = ExplicitReActAgent(model, [search, index]).run("Population of Paris?")
    assert result.stop_reason is StopReason.LOOP_DETECTED
    assert [step.error for step in result.steps] == [None, "tool_error", "repeated_call", "repeated_call"]
    last_prompt = model.calls[-1].prompt
    assert "search: population of France\n68000000" in last_prompt
    assert (
        "These calls failed:\n- paris_index: population of Paris -> Error: tool 'paris_index' failed"
        in last_prompt
    )
    assert "already called" not in last_prompt  # the refused repeats are left out
    assert result.answer.endswith("could not be found.")


def test_the_answer_at_a_limit_is_asked_the_same_way_in_async_runs() -> None:
    script = [action("search", "population of France"), final("About 68 million.")]
    sync_model, async_model = ScriptedChatModel(script), ScriptedChatModel(script)
    ExplicitReActAgent(sync_model, [search], max_iterations=1).run("France?")
    asyncio.run(ExplicitReActAgent(async_model, [search], max_iterations=1).arun("France?"))
    assert async_model.calls[-1].prompt == sync_model.calls[-1].prompt
    assert "search: population of France\n68000000" in async_model.calls[-1].prompt


def test_iteration_limit_with_no_usable_final_reply_says_so() -> None:
    model = ScriptedChatModel(
        [action("search", "population of France"), action("search", "population of Paris")]
    )
    result = ExplicitReActAgent(model, [search], max_iterations=1).run("France?")
    assert result.stop_reason is StopReason.MAX_ITERATIONS
    assert result.answer == "I could not find an answer within the allowed number of steps."


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ("About 68 million people.", "About 68 million people."),  # plain prose is the answer
        ("Thought: I should search again.", "I could not find an answer within the allowed number of steps."),
        (
            "Thought 1: I should search again.",
            "I could not find an answer within the allowed number of steps.",
        ),
        (
            "I will search again. Action: search",
            "I could not find an answer within the allowed number of steps.",
        ),
        ("About 68 million.<|im_end|>", "About 68 million."),
        ("", "I could not find an answer within the allowed number of steps."),
    ],
)
def test_the_reply_at_the_limit_without_a_final_answer_label(reply: str, answer: str) -> None:
    model = ScriptedChatModel([action("search", "population of France"), reply])
    result = ExplicitReActAgent(model, [search], max_iterations=1).run("France?")
    assert result.stop_reason is StopReason.MAX_ITERATIONS
    assert result.answer == answer


def test_on_limit_force_makes_no_extra_call() -> None:
    model = ScriptedChatModel([action("search", "population of France")])
    result = ExplicitReActAgent(model, [search], max_iterations=1, on_limit="force").run("France?")
    assert result.stop_reason is StopReason.MAX_ITERATIONS
    assert len(model.calls) == 1


def test_invented_observation_is_cut_when_the_model_ignores_stop() -> None:
    reply = (
        action("search", "population of Paris") + "\nObservation: 9 people\nThought: done\nFinal Answer: 9"
    )
    model = ScriptedChatModel([reply, final("2100000")], ignore_stop=True)
    result = ExplicitReActAgent(model, [search]).run("Paris?")
    assert result.steps[0].action_input == "population of Paris"
    assert result.steps[0].observation == "2100000"
    assert "9 people" not in result.steps[0].log
    assert result.answer == "2100000"


def test_message_content_as_a_list_of_parts() -> None:
    reply = AIMessage(
        content=[{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": final("Paris")}]
    )
    result = ExplicitReActAgent(ScriptedChatModel([reply]), [search]).run("Capital of France?")
    assert result.answer == "Paris"


def test_plain_callable_model_receives_role_content_dicts() -> None:
    seen: list[list[dict[str, str]]] = []

    def complete(messages: list[dict[str, str]]) -> str:
        seen.append(messages)
        return final("Paris") if len(seen) > 1 else action("search", "population of Paris")

    result = ExplicitReActAgent(complete, [search]).run("q")
    assert result.answer == "Paris"
    assert [m["role"] for m in seen[0]] == ["system", "user"]
    assert "Observation: 2100000" in seen[1][1]["content"]


def test_langchain_llm_and_plain_runnable_models() -> None:
    llm = FakeListLLM(responses=[final("from an LLM")])
    assert ExplicitReActAgent(llm, [search]).run("q").answer == "from an LLM"
    runnable = RunnableLambda(lambda messages: AIMessage(content=final(f"{len(messages)} messages")))
    assert ExplicitReActAgent(runnable, [search]).run("q").answer == "2 messages"


def test_plain_functions_become_tools() -> None:
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    model = ScriptedChatModel([action("shout", "hi"), final("HI")])
    agent = ExplicitReActAgent(model, [shout])
    assert [t.name for t in agent.tools] == ["shout"]
    assert agent.run("q").steps[0].observation == "HI"


def test_configuration_errors_are_raised_at_construction() -> None:
    def undocumented(x: str) -> str:
        return x

    with pytest.raises(ConfigurationError, match="docstring"):
        ExplicitReActAgent(ScriptedChatModel([]), [undocumented])
    with pytest.raises(ConfigurationError, match="max_iterations"):
        ExplicitReActAgent(ScriptedChatModel([]), [search], max_iterations=0)
    with pytest.raises(ConfigurationError, match="on_limit"):
        ExplicitReActAgent(ScriptedChatModel([]), [search], on_limit="maybe")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="nope"):
        ExplicitReActAgent(ScriptedChatModel([]), [search], allowed_tools={"nope"})
    with pytest.raises(ConfigurationError):
        ExplicitReActAgent(42, [search])


def test_return_direct_tool_ends_the_run_with_its_output() -> None:
    @tool(return_direct=True)
    def lookup_order(order_id: str) -> str:
        """Find an order."""
        return f"Order {order_id}: shipped"

    model = ScriptedChatModel([action("lookup_order", "A17")])
    result = ExplicitReActAgent(model, [lookup_order]).run("Where is A17?")
    assert result.stop_reason is StopReason.RETURN_DIRECT and result.success
    assert result.answer == "Order A17: shipped" and len(model.calls) == 1


def test_async_only_tool_runs_in_sync_and_async_runs() -> None:
    async def fetch(query: str) -> str:
        await asyncio.sleep(0)
        return f"fetched {query}"

    fetch_tool = StructuredTool.from_function(coroutine=fetch, name="fetch", description="Fetch a page.")
    script = [action("fetch", "x"), final("done")]
    sync = ExplicitReActAgent(ScriptedChatModel(script), [fetch_tool]).run("q")
    assert sync.steps[0].observation == "fetched x"
    result = asyncio.run(ExplicitReActAgent(ScriptedChatModel(script), [fetch_tool]).arun("q"))
    assert result.steps[0].observation == "fetched x"


def test_stream_yields_each_step_before_the_next_model_call() -> None:
    agent, model = france_agent()
    seen_calls = []
    items = []
    for item in agent.stream(QUESTION):
        seen_calls.append(len(model.calls))
        items.append(item)
    assert [type(i) for i in items] == [Step, Step, Step, AgentResult]
    assert seen_calls[:3] == [1, 2, 3]


def test_async_entry_points_match_sync() -> None:
    agent, _ = france_agent()
    result = asyncio.run(agent.arun(QUESTION))
    assert result.success and len(result.steps) == 3

    async def collect() -> list[object]:
        agent2, _ = france_agent()
        return [item async for item in agent2.astream(QUESTION)]

    items = asyncio.run(collect())
    assert [type(i).__name__ for i in items] == ["Step", "Step", "Step", "AgentResult"]
    output = asyncio.run(france_agent()[0].ainvoke({"input": QUESTION}))
    assert output["output"].startswith("About") and output["stop_reason"] == "success"


def test_runnable_invoke_batch_and_chain() -> None:
    agent, _ = france_agent()
    output = agent.invoke({"input": QUESTION, "context": "Use official figures."})
    assert set(output) >= {"input", "output", "stop_reason", "steps"}
    assert output["input"] == QUESTION and len(output["steps"]) == 3
    model = ScriptedChatModel([final("a"), final("b")])
    outputs = ExplicitReActAgent(model, [search]).batch(["q1", "q2"], config={"max_concurrency": 1})
    assert [o["output"] for o in outputs] == ["a", "b"]
    chain = ExplicitReActAgent(ScriptedChatModel([final("chained")]), [search]) | RunnableLambda(
        lambda d: d["output"].upper()
    )
    assert chain.invoke("q") == "CHAINED"
    outputs = asyncio.run(
        ExplicitReActAgent(ScriptedChatModel([final("x"), final("x")]), [search]).abatch(["a", "b"])
    )
    assert [o["output"] for o in outputs] == ["x", "x"]


def test_context_reaches_the_prompt() -> None:
    model = ScriptedChatModel([final("blue")])
    ExplicitReActAgent(model, [search]).run("Which colour?", context="The door is blue.")
    assert "Context:\nThe door is blue." in model.calls[0].prompt


def test_bad_input_to_invoke_is_a_clear_error() -> None:
    agent = ExplicitReActAgent(ScriptedChatModel([]), [search])
    with pytest.raises(ConfigurationError, match="'input'"):
        agent.invoke({"query": "q"})


def test_callbacks_see_chain_agent_llm_and_tool_events_nested() -> None:
    agent, _ = france_agent()
    recorder = EventRecorder()
    agent.invoke(QUESTION, config={"callbacks": [recorder]})
    names = recorder.names
    assert names[0] == "chain_start" and names[-1] == "chain_end"
    assert (
        names.count("agent_action") == 3 and names.count("tool_start") == 3 and names.count("tool_end") == 3
    )
    assert names.count("llm_start") == 4 and names[-2] == "agent_finish"
    assert names.index("agent_action") < names.index("tool_start")
    root = recorder.events[0][1]
    assert all(parent == root for name, _, parent in recorder.events if name in ("llm_start", "tool_start"))


def test_async_runs_report_each_call_once_under_its_own_run() -> None:
    """The run's child callback manager is built once and shared by its calls: each model and tool
    call still gets a run of its own, under the agent's, and concurrent runs do not mix."""
    recorders = [EventRecorder(), EventRecorder()]

    async def both() -> None:
        runs = (france_agent()[0].ainvoke(QUESTION, config={"callbacks": [r]}) for r in recorders)
        await asyncio.gather(*runs)

    asyncio.run(both())
    for recorder in recorders:
        root = recorder.events[0][1]
        calls = [
            (run, parent) for name, run, parent in recorder.events if name in ("llm_start", "tool_start")
        ]
        assert len(calls) == 7
        assert all(parent == root for _, parent in calls)
        assert len({run for run, _ in calls}) == 7  # a run id per call


def test_an_async_run_with_a_handler_sends_it_every_agent_event() -> None:
    """Events go only where a handler hears them (``drivers.heard``); with one, async runs send all."""
    recorder = EventRecorder()
    asyncio.run(france_agent()[0].ainvoke(QUESTION, config={"callbacks": [recorder]}))
    names = recorder.names
    assert names[0] == "chain_start" and names[-2:] == ["agent_finish", "chain_end"]
    assert names.count("agent_action") == 3


@pytest.mark.parametrize("handlers", [[], [EventRecorder()]])
def test_a_run_manager_is_heard_only_with_a_handler(handlers: list[EventRecorder]) -> None:
    from langchain_core.callbacks import AsyncCallbackManager, CallbackManager

    sync = CallbackManager.configure(handlers).on_chain_start(None, {"input": "q"})
    assert drivers.heard(sync) is bool(handlers)
    manager = asyncio.run(AsyncCallbackManager.configure(handlers).on_chain_start(None, {"input": "q"}))
    assert drivers.heard(manager) is bool(handlers)
    assert drivers.heard(None) is False


def test_verbose_trace_prints_turn_counters() -> None:
    buffer = io.StringIO()
    printer = TracePrinter(Console(file=buffer, width=120, color_system=None))
    agent, _ = france_agent(listeners=[printer])
    agent.run(QUESTION)
    text = buffer.getvalue()
    assert "Thought (turn 2/5): Now Paris." in text
    assert "Observation: 2100000" in text and "Final Answer: About 65,900,000" in text


def test_default_toolset_is_web_search_and_python() -> None:
    agent = ExplicitReActAgent(ScriptedChatModel([]))
    assert sorted(t.name for t in agent.tools) == ["python_repl", "web_search"]


def test_the_public_names_are_listed_once_for_lazy_loading() -> None:
    import explicit_react

    assert sorted(explicit_react._HOMES) == explicit_react.__all__
    assert all(getattr(explicit_react, name) is not None for name in explicit_react.__all__)


@pytest.mark.parametrize("name", ["finish", "none", "null", "nothing", "n/a", "answer"])
def test_a_real_tool_named_like_a_keyword_is_called(name: str) -> None:
    called: list[str] = []

    def run(text: str) -> str:
        called.append(text)
        return "filed"

    keyword_tool = StructuredTool.from_function(run, name=name, description="File the report.")
    model = ScriptedChatModel([action(name, "the report"), final("Filed.")])
    result = ExplicitReActAgent(model, [search, keyword_tool]).run("File the report.")
    assert called == ["the report"]
    assert result.steps[0].action == name and result.steps[0].observation == "filed"
    assert result.answer == "Filed." and result.stop_reason is StopReason.SUCCESS


@pytest.mark.parametrize(
    ("question", "message"), [(123, "must be a string.*not int"), ("  ", "the question is empty")]
)
def test_run_refuses_a_question_it_cannot_use(question: object, message: str) -> None:
    model = ScriptedChatModel([])
    with pytest.raises(ConfigurationError, match=message):
        ExplicitReActAgent(model, [search]).run(question)  # type: ignore[arg-type]
    assert model.calls == []  # nothing reached the model


def test_invoke_takes_messages_and_a_messages_state() -> None:
    history = [HumanMessage("I live in Lyon."), AIMessage("Noted."), HumanMessage("Where do I live?")]
    model = ScriptedChatModel([final("Lyon."), final("Lyon.")])
    agent = ExplicitReActAgent(model, [search])
    out = agent.invoke(history)
    assert out["input"] == "Where do I live?" and "messages" not in out
    state_out = agent.invoke({"messages": history})
    assert [m.content for m in state_out["messages"]] == ["Lyon."]
    assert "User: I live in Lyon.\nAssistant: Noted." in model.calls[1].prompt


def test_on_llm_error_raise_lets_with_retry_run_the_agent_again() -> None:
    model = ScriptedChatModel([RuntimeError("503"), final("Paris.")])
    agent = ExplicitReActAgent(model, [search], max_retries=0, on_llm_error="raise")
    with pytest.raises(ModelCallError):
        agent.run("Capital of France?")
    retried = ExplicitReActAgent(
        ScriptedChatModel([RuntimeError("503"), final("Paris.")]),
        [search],
        max_retries=0,
        on_llm_error="raise",
    )
    assert (
        retried.with_retry(stop_after_attempt=2, wait_exponential_jitter=False).invoke("Capital of France?")[
            "output"
        ]
        == "Paris."
    )


def test_on_llm_error_stop_keeps_the_result() -> None:
    model = ScriptedChatModel([RuntimeError("503")])
    result = ExplicitReActAgent(model, [search], max_retries=0).run("q")
    assert result.stop_reason is StopReason.LLM_ERROR and "503" in (result.error or "")


def test_a_tool_cut_by_max_seconds_is_kept_as_a_step() -> None:
    import time as _time

    @tool
    def slow(query: str) -> str:
        """Takes a long time."""
        _time.sleep(5)
        return "late"

    model = ScriptedChatModel([action("slow", "x")])
    result = ExplicitReActAgent(model, [slow], max_seconds=0.5).run("q")
    assert result.stop_reason is StopReason.MAX_SECONDS
    assert len(result.steps) == 1 and result.steps[0].action == "slow"
    assert (
        result.steps[0].error == "tool_timeout"
        and "ran out while tool 'slow' was running" in result.steps[0].observation
    )


def test_the_trace_shows_an_action_before_its_tool_returns() -> None:
    buffer = io.StringIO()
    seen: list[str] = []

    @tool
    def probe(query: str) -> str:
        """Records what the trace showed while it ran."""
        seen.append(buffer.getvalue())
        return "done"

    printer = TracePrinter(Console(file=buffer, width=120, color_system=None))
    model = ScriptedChatModel([action("probe", "x"), final("ok")])
    ExplicitReActAgent(model, [probe], listeners=[printer]).run("q")
    assert "Action (turn 1/5): probe" in seen[0] and "Observation" not in seen[0]
    assert buffer.getvalue().count("Action (turn 1/5): probe") == 1  # not printed twice
