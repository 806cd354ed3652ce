"""Defects found in a review of the loop, the executor and the agent's entry points, each pinned by
a test that failed before its fix: a chain's streamed input, the answer of a ``return_direct`` tool,
tool output that only reads like an error, async-only ``BaseTool``s under the sync driver, a tool
that raises ``CancelledError`` itself, and loop detection of programs that differ in indentation."""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import AsyncIterator, Iterator
from operator import itemgetter
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableGenerator, RunnableLambda
from langchain_core.tools import BaseTool, StructuredTool, ToolException, tool

from explicit_react import ExplicitReActAgent
from explicit_react.policy import SOURCED_NUMBERS
from explicit_react.scale import aanswer_all
from explicit_react.testing import ScriptedChatModel
from explicit_react.types import StopReason, call_signature
from tests.helpers import action, final, search

# 1. transform: a chain's streamed input is gathered, then the agent runs once ---------------------


def _retrieve(question: str) -> list[Document]:
    return [Document("Paris had 2,100,000 inhabitants in 2023.", metadata={"source": "insee.csv"})]


def _rag(model: ScriptedChatModel) -> Any:
    """The docs' RAG chain: a parallel step (one streamed chunk per key) before the agent."""
    agent = ExplicitReActAgent(model, [search])
    return {
        "input": itemgetter("question"),
        "context": itemgetter("question") | RunnableLambda(_retrieve),
    } | agent


QUESTION = {"question": "How many people live in Paris?"}


def test_stream_after_a_parallel_step_runs_the_agent_once_on_the_whole_input() -> None:
    model = ScriptedChatModel([final("2.1 million (insee.csv).")] * 3)
    chunks = list(_rag(model).stream(QUESTION))
    assert [chunk["output"] for chunk in chunks] == ["2.1 million (insee.csv)."]
    assert len(model.calls) == 1
    assert "insee.csv" in model.calls[0].prompt and "How many people live in Paris?" in model.calls[0].prompt


def test_astream_after_a_parallel_step_runs_the_agent_once_on_the_whole_input() -> None:
    model = ScriptedChatModel([final("2.1 million (insee.csv).")] * 3)

    async def chunks() -> list[dict[str, Any]]:
        return [chunk async for chunk in _rag(model).astream(QUESTION)]

    assert [chunk["output"] for chunk in asyncio.run(chunks())] == ["2.1 million (insee.csv)."]
    assert len(model.calls) == 1 and "insee.csv" in model.calls[0].prompt


def _pieces(_: Iterator[Any]) -> Iterator[str]:
    yield "How many people "
    yield "live in Paris?"


async def _apieces(_: AsyncIterator[Any]) -> AsyncIterator[str]:
    yield "How many people "
    yield "live in Paris?"


def test_streamed_text_pieces_are_added_into_one_question() -> None:
    model = ScriptedChatModel([final("2.1 million.")] * 3)
    chain = RunnableGenerator(_pieces, _apieces) | ExplicitReActAgent(model, [search])
    assert [chunk["output"] for chunk in chain.stream("go")] == ["2.1 million."]
    assert len(model.calls) == 1 and "How many people live in Paris?" in model.calls[0].prompt

    model = ScriptedChatModel([final("2.1 million.")] * 3)
    chain = RunnableGenerator(_pieces, _apieces) | ExplicitReActAgent(model, [search])

    async def chunks() -> list[dict[str, Any]]:
        return [chunk async for chunk in chain.astream("go")]

    assert [chunk["output"] for chunk in asyncio.run(chunks())] == ["2.1 million."]
    assert len(model.calls) == 1 and "How many people live in Paris?" in model.calls[0].prompt


def test_chunks_that_cannot_be_added_keep_the_last_as_langchain_does() -> None:
    model = ScriptedChatModel([final("b's answer")] * 3)
    agent = ExplicitReActAgent(model, [search])
    out = list(agent.transform(iter([{"input": "question a"}, {"input": "question b"}])))
    assert [item["output"] for item in out] == ["b's answer"]
    assert len(model.calls) == 1 and "question b" in model.calls[0].prompt
    assert list(agent.transform(iter([]))) == []


# 2. return_direct: the answer is the tool's own output -------------------------------------------


@tool(return_direct=True)
def lookup(query: str) -> str:
    """Look up an order."""
    return "ORDER-" + "x" * 50


@tool
def other(query: str) -> str:
    """Another tool."""
    return "o"


@tool(return_direct=True)
def big(query: str) -> str:
    """A long report."""
    return "".join(f"line {i}\n" for i in range(100))


def test_return_direct_answer_is_not_the_note_about_extra_tool_calls() -> None:
    reply = AIMessage(
        content="",
        tool_calls=[
            {"name": "lookup", "args": {"query": "a"}, "id": "1"},
            {"name": "other", "args": {"query": "b"}, "id": "2"},
        ],
    )
    result = ExplicitReActAgent(ScriptedChatModel([reply]), [lookup, other], mode="tool_calling").run("q")
    assert result.stop_reason is StopReason.RETURN_DIRECT
    assert result.answer == "ORDER-" + "x" * 50
    assert "Note:" in result.steps[-1].observation  # the model's own view keeps the note


def test_return_direct_answer_is_not_cut_to_max_observation_chars() -> None:
    agent = ExplicitReActAgent(ScriptedChatModel([action("big", "a")]), [big], max_observation_chars=100)
    result = agent.run("q")
    assert result.stop_reason is StopReason.RETURN_DIRECT
    assert result.answer == "".join(f"line {i}\n" for i in range(100)).strip()
    assert len(result.steps[-1].observation) < 200  # the step's observation is still cut


def test_return_direct_answer_is_not_the_note_about_a_long_reply() -> None:
    reply = action("lookup", "a") + "\nThought: " + "z" * 100
    result = ExplicitReActAgent(ScriptedChatModel([reply]), [lookup], max_reply_chars=60).run("q")
    assert result.stop_reason is StopReason.RETURN_DIRECT
    assert result.answer == "ORDER-" + "x" * 50


def test_return_direct_answer_does_not_depend_on_keep_tool_output() -> None:
    agent = ExplicitReActAgent(
        ScriptedChatModel([action("big", "a")]), [big], max_observation_chars=100, keep_tool_output=False
    )
    assert agent.run("q").answer == "".join(f"line {i}\n" for i in range(100)).strip()


# 3. a tool's output that starts with "Error" is not a failure by its text alone ------------------


@tool
def error_rate(service: str) -> str:
    """Error rate of a service."""
    return "Error rate for checkout: 0.37% over the last hour"


@tool(return_direct=True)
def errors_report(service: str) -> str:
    """Return the errors report to the user as is."""
    return "Errors in checkout today: none"


@tool
def calculator(expression: str) -> str:
    """Calculate."""
    return "0.74"


calculator.metadata = {SOURCED_NUMBERS: True}


def test_output_starting_with_the_word_error_is_a_result() -> None:
    model = ScriptedChatModel(
        [action("error_rate", "checkout"), action("calculator", "0.37 * 2"), final("0.74%")]
    )
    result = ExplicitReActAgent(model, [error_rate, calculator]).run("What is twice the checkout error rate?")
    first, second = result.steps
    assert first.error is None
    assert first.observation == "Error rate for checkout: 0.37% over the last hour"  # no "Other tools"
    assert second.error is None and second.observation == "0.74"  # 0.37 was sourced by the first
    assert result.stop_reason is StopReason.SUCCESS


def test_return_direct_tool_whose_output_starts_with_error_still_answers() -> None:
    model = ScriptedChatModel([action("errors_report", "checkout"), final("x")])
    result = ExplicitReActAgent(model, [errors_report, calculator]).run("errors report?")
    assert result.steps[0].error is None
    assert result.stop_reason is StopReason.RETURN_DIRECT
    assert result.answer == "Errors in checkout today: none"


def test_a_tools_handled_tool_exception_is_still_a_failure() -> None:
    def fail(query: str) -> str:
        raise ToolException("Error: the index is rebuilding, try later")

    handled = StructuredTool.from_function(
        fail, name="lookup", description="Look up.", handle_tool_error=True, return_direct=True
    )
    result = ExplicitReActAgent(ScriptedChatModel([action("lookup", "x"), final("later")]), [handled]).run(
        "q"
    )
    assert result.steps[0].error == "tool_error"
    assert result.steps[0].observation == "Error: the index is rebuilding, try later"
    assert result.stop_reason is StopReason.SUCCESS  # a failed return_direct tool does not answer


# 4. an async-only BaseTool works under the sync entry points -------------------------------------


class AsyncOnly(BaseTool):
    name: str = "fetch"
    description: str = "Fetch a page."

    def _run(self, query: str) -> str:
        raise NotImplementedError("fetch is async only")

    async def _arun(self, query: str) -> str:
        await asyncio.sleep(0)
        return f"page for {query}"


def _fetch_agent() -> ExplicitReActAgent:
    return ExplicitReActAgent(ScriptedChatModel([action("fetch", "x"), final("ok")]), [AsyncOnly()])


def test_async_only_basetool_gives_the_same_step_sync_and_async() -> None:
    expected = ("fetch", None, "page for x")

    def seen(steps: list[Any]) -> tuple[Any, ...]:
        (step,) = steps
        return (
            (step.action, step.error, step.observation)
            if not isinstance(step, dict)
            else (step["action"], step["error"], step["observation"])
        )

    assert seen(_fetch_agent().run("q").steps) == expected
    assert seen(asyncio.run(_fetch_agent().arun("q")).steps) == expected
    assert seen(list(_fetch_agent().stream("q"))[-1].steps) == expected
    assert seen(_fetch_agent().invoke("q")["steps"]) == expected
    assert seen(_fetch_agent().batch(["q"])[0]["steps"]) == expected


def test_async_only_basetool_is_cancelled_at_its_timeout_under_run() -> None:
    class Slow(AsyncOnly):
        async def _arun(self, query: str) -> str:
            await asyncio.sleep(30)
            return "late"

    model = ScriptedChatModel([action("fetch", "x"), final("ok")])
    result = ExplicitReActAgent(model, [Slow()], tool_timeout=0.2).run("q")
    assert result.steps[0].error == "tool_timeout"


def test_not_implemented_deeper_in_a_tool_is_its_error_and_not_retried_async() -> None:
    calls: list[str] = []

    def missing_feature() -> str:
        raise NotImplementedError("no such feature")

    class Deep(AsyncOnly):
        def _run(self, query: str) -> str:
            calls.append("sync")
            return missing_feature()

        async def _arun(self, query: str) -> str:
            calls.append("async")
            return "async"

    result = ExplicitReActAgent(ScriptedChatModel([action("fetch", "x"), final("ok")]), [Deep()]).run("q")
    assert result.steps[0].error == "tool_error" and "no such feature" in result.steps[0].observation
    assert calls == ["sync"]


# 5. a tool that raises CancelledError itself ------------------------------------------------------


@tool
async def cancelled_fetch(url: str) -> str:
    """Fetch a URL."""
    future = asyncio.get_running_loop().create_future()
    future.cancel()  # e.g. a connection pool cancelled the request it handed out
    result: str = await future
    return result


def _cancelled_agent() -> ExplicitReActAgent:
    model = ScriptedChatModel([action("cancelled_fetch", "http://x"), final("ok")])
    return ExplicitReActAgent(model, [cancelled_fetch])


def test_a_tools_own_cancelled_error_is_an_observation_under_run_and_arun() -> None:
    for result in (_cancelled_agent().run("q"), asyncio.run(_cancelled_agent().arun("q"))):
        assert result.stop_reason is StopReason.SUCCESS and result.answer == "ok"
        (step,) = result.steps
        assert step.error == "tool_error"
        assert step.observation.startswith("Error: tool 'cancelled_fetch' failed: CancelledError")


def test_a_tools_own_cancelled_error_does_not_break_a_batch() -> None:
    outputs = _cancelled_agent().batch(["q"], return_exceptions=True)
    assert outputs[0]["output"] == "ok" and outputs[0]["steps"][0]["error"] == "tool_error"
    outputs = asyncio.run(_cancelled_agent().abatch(["q"], return_exceptions=True))
    assert outputs[0]["output"] == "ok" and outputs[0]["steps"][0]["error"] == "tool_error"


def test_a_tools_own_cancelled_error_in_aanswer_all_is_a_step_not_a_failed_question() -> None:
    model = ScriptedChatModel([final("one"), action("cancelled_fetch", "x"), final("two"), final("three")])
    agent = ExplicitReActAgent(model, [cancelled_fetch])
    records = asyncio.run(aanswer_all(agent, ["first", "second", "third"], concurrency=1))
    assert [record["answer"] for record in records] == ["one", "two", "three"]
    assert [step["error"] for step in records[1]["steps"]] == ["tool_error"]


def test_cancelling_the_run_while_a_tool_runs_still_cancels_it() -> None:
    async def scenario() -> asyncio.Task[Any]:
        started = asyncio.Event()

        @tool
        async def slow(url: str) -> str:
            """Fetch slowly."""
            started.set()
            await asyncio.sleep(30)
            return "late"

        model = ScriptedChatModel([action("slow", "x"), final("ok")])
        task = asyncio.create_task(ExplicitReActAgent(model, [slow]).arun("q"))
        await started.wait()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return task

    task = asyncio.run(scenario())
    assert task.cancelled()


# 6. loop detection tells apart programs that differ in indentation -------------------------------


BUGGY = "total = 0\nfor n in [1, 2, 3]:\n    total += n\n    print(total)"
FIXED = "total = 0\nfor n in [1, 2, 3]:\n    total += n\nprint(total)"


def test_multi_line_inputs_keep_their_indentation_in_the_call_signature() -> None:
    assert call_signature("python_repl", BUGGY) != call_signature("python_repl", FIXED)
    assert call_signature("t", {"code": BUGGY}) != call_signature("t", {"code": FIXED})
    # trailing whitespace on a line, and blank lines or spaces around the whole input, change nothing
    padded = "\n" + BUGGY.replace("total = 0", "total = 0   ") + "  \n\n"
    assert call_signature("python_repl", padded) == call_signature("python_repl", BUGGY)
    assert call_signature("python_repl", BUGGY.replace("\n", "\r\n")) == call_signature("python_repl", BUGGY)
    # a single line still has its inner whitespace collapsed
    assert call_signature("search", "  paris   population ") == call_signature("search", "paris population")


def test_a_fixed_indentation_is_not_a_repeated_call() -> None:
    @tool
    def python_repl(code: str) -> str:
        """Run Python code and return what it prints."""
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(code, {})
        return out.getvalue() or "(no output)"

    def run_code(code: str) -> str:
        return f"Thought: run it\nAction: python_repl\nAction Input: {code}"

    model = ScriptedChatModel([run_code(BUGGY), run_code(FIXED), final("6")])
    result = ExplicitReActAgent(model, [python_repl]).run("Sum 1, 2 and 3 with Python; print the total.")
    assert [step.error for step in result.steps] == [None, None]
    assert [step.observation.split() for step in result.steps] == [["1", "3", "6"], ["6"]]
    assert result.stop_reason is StopReason.SUCCESS

    model = ScriptedChatModel([run_code(FIXED), run_code(FIXED + "\n"), final("6")])
    result = ExplicitReActAgent(model, [python_repl]).run("Sum 1, 2 and 3 with Python; print the total.")
    assert [step.error for step in result.steps] == [None, "repeated_call"]  # the same program again


def test_a_tool_that_returns_an_error_text_of_its_own_is_a_failure() -> None:
    # The convention of tools written by hand: a failure returned as "Error: ...", no exception.
    def lookup(query: str) -> str:
        """Look up an order."""
        return "Error: order 42 not found"

    tool_ = StructuredTool.from_function(lookup, return_direct=True)
    model = ScriptedChatModel([action("lookup", "42"), final("no such order")])
    result = ExplicitReActAgent(model, [tool_]).run("Where is order 42?")
    assert result.steps[0].error == "tool_error"
    assert result.stop_reason is StopReason.SUCCESS and result.answer == "no such order"
