"""Edges of the public surface: values that strict JSON cannot hold, event order, async listeners."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import tool

from explicit_react import AgentResult, ExplicitReActAgent
from explicit_react.testing import ScriptedChatModel
from tests.helpers import ChainEvents, action, final, search


@tool
def measure(low: float, high: float, samples: list[float]) -> str:
    """Measure a range."""
    return f"{low} to {high} over {samples}"


def _strict(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_non_finite_numbers_in_an_action_input_are_strict_json_in_the_result_and_the_trace(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "trace.jsonl"
    reply = action("measure", '{"low": -1e999, "high": 1e999, "samples": [1.5, NaN]}')
    model = ScriptedChatModel([reply, final("done")])
    result = ExplicitReActAgent(model, [measure], trace_path=trace).run("How wide?")
    assert result.steps[0].observation == "-inf to inf over [1.5, nan]"
    data = result.to_dict()
    assert data["steps"][0]["action_input"] == {"low": "-inf", "high": "inf", "samples": [1.5, "nan"]}
    assert _strict(json.dumps(data, allow_nan=False)) == data
    lines = [_strict(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    assert [line["event"] for line in lines] == ["step", "result"]
    assert lines[0]["action_input"]["samples"] == [1.5, "nan"]


def test_astream_events_gives_the_result_chunk_before_the_root_run_ends() -> None:
    model = ScriptedChatModel([action("search", "population of Paris"), final("2.1M")])
    agent = ExplicitReActAgent(model, [search])

    async def root_events() -> list[tuple[str, str]]:
        return [
            (event["event"], type(event["data"].get("chunk", event["data"].get("output"))).__name__)
            async for event in agent.astream_events("How many live in Paris?", version="v2")
            if event["name"] == "ExplicitReActAgent"
        ]

    assert asyncio.run(root_events()) == [
        ("on_chain_start", "NoneType"),
        ("on_chain_stream", "Step"),
        ("on_chain_stream", "AgentResult"),
        ("on_chain_end", "dict"),
    ]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_result_comes_before_the_chain_run_ends_and_a_reader_may_stop_at_it(mode: str) -> None:
    model = ScriptedChatModel([action("search", "population of Paris"), final("2.1M")])
    agent = ExplicitReActAgent(model, [search])
    recorder = ChainEvents(outputs=True)
    config: Any = {"callbacks": [recorder]}
    seen_at_result: list[str] = []
    if mode == "sync":
        for item in agent.stream("q", config):
            if isinstance(item, AgentResult):
                seen_at_result = list(recorder.events)
                break
    else:

        async def read_to_the_result() -> None:
            nonlocal seen_at_result
            stream = agent.astream("q", config)
            async for item in stream:
                if isinstance(item, AgentResult):
                    seen_at_result = list(recorder.events)
                    break
            await stream.aclose()  # type: ignore[attr-defined]

        asyncio.run(read_to_the_result())
    assert seen_at_result == ["start"]
    assert recorder.events == ["start", "end(2.1M)"]


class AsyncListener:
    """A listener whose methods are coroutines: each records the event after yielding to the loop."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    async def on_turn_start(self, turn: int, max_turns: int | None) -> None:
        await asyncio.sleep(0)
        self.events.append(("turn", turn))

    async def on_action(self, action: Any, turn: int, max_turns: int | None) -> None:
        await asyncio.sleep(0)
        self.events.append(("action", action.tool))

    async def on_step(self, step: Any, turn: int, max_turns: int | None) -> None:
        await asyncio.sleep(0)
        self.events.append(("step", step.observation))

    async def on_result(self, result: AgentResult) -> None:
        await asyncio.sleep(0)
        self.events.append(("result", result.answer))


LISTENED = [
    ("turn", 1),
    ("action", "search"),
    ("step", "2100000"),
    ("turn", 2),
    ("result", "2.1M"),
]


def _listened_agent(listener: Any) -> ExplicitReActAgent:
    model = ScriptedChatModel([action("search", "population of Paris"), final("2.1M")])
    return ExplicitReActAgent(model, [search], listeners=[listener])


@pytest.mark.parametrize("entry", ["run", "arun", "run inside an event loop"])
def test_an_async_listener_hears_every_event_under_run_as_under_arun(entry: str) -> None:
    listener = AsyncListener()
    agent = _listened_agent(listener)
    if entry == "run":
        agent.run("q")
    elif entry == "arun":
        asyncio.run(agent.arun("q"))
    else:

        async def notebook_cell() -> None:  # sync code called where a loop already runs
            agent.run("q")

        asyncio.run(notebook_cell())
    assert listener.events == LISTENED


class FailingAsyncListener:
    async def on_step(self, step: Any, turn: int, max_turns: int | None) -> None:
        raise OSError("No space left on device")


@pytest.mark.parametrize("entry", ["run", "arun"])
def test_an_async_listener_that_raises_fails_the_run_under_run_as_under_arun(entry: str) -> None:
    agent = _listened_agent(FailingAsyncListener())
    with pytest.raises(OSError, match="No space left"):
        if entry == "run":
            agent.run("q")
        else:
            asyncio.run(agent.arun("q"))


def test_trace_records_of_concurrent_runs_say_which_run_they_belong_to(tmp_path: Path) -> None:
    async def complete(messages: list[dict[str, str]]) -> str:
        prompt = "\n".join(m["content"] for m in messages)
        await asyncio.sleep(0.01)  # the runs take turns
        city = "Paris" if "Question: Paris" in prompt else "Rome"
        looked = prompt.count(f"Action Input: population of {city}")
        return final(city) if looked >= 2 else action("search", f"population of {city} ({looked})")

    path = tmp_path / "trace.jsonl"
    agent = ExplicitReActAgent(complete, [search], trace_path=path)

    async def both() -> None:
        await asyncio.gather(agent.arun("Paris"), agent.arun("Rome"))

    asyncio.run(both())
    records = [json.loads(line) for line in path.read_text().splitlines()]
    runs = {r["question"]: r["run"] for r in records if r["event"] == "result"}
    assert len(set(runs.values())) == 2
    for question, run in runs.items():
        steps = [r for r in records if r["event"] == "step" and r["run"] == run]
        assert len(steps) == 2 and all(question in s["action_input"] for s in steps)
