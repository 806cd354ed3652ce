"""Many questions at once: ``abatch`` wall time against the ideal, and memory per concurrent run.

The model waits ``--delay`` seconds (50 ms) per call with ``asyncio.sleep``, like a remote API, and
replies by question: first a ``lookup`` call, then, once the observation is in the prompt, the final
answer. So one question costs exactly two model calls, and with ``c`` runs at a time the ideal wall
time is ``ceil(questions / c) * 2 * delay``. Efficiency = ideal / measured: 100% means the framework
adds nothing but waiting; the rest is CPU the framework spends per run, which concurrency cannot hide.

Memory per concurrent run = the tracemalloc peak above the starting point during the batch, divided
by the number of runs in flight (``c``). It is measured in a separate pass, because tracemalloc
slows Python down and would spoil the timing. A last pass sets the delay to 0 and measures the CPU
each question costs (``time.process_time``): that is what concurrency cannot hide.

explicit_react's ``ExplicitReActAgent.abatch`` is compared with the classic ``AgentExecutor.abatch``
(same model, tool and hub ReAct prompt), both with ``config={"max_concurrency": c}``.
A third row runs explicit_react with the model as a plain async function (same replies, same
delay) instead of a LangChain chat model, to show how much of the cost is the chat-model machinery.
A fourth row has no agent: each question makes the same two model calls and one tool call through
LangChain's interfaces and nothing else, the ceiling for any agent built on those objects (with a
one-line prompt, no stop sequence, the tool's input as text, ``asyncio.gather`` and a semaphore).
Two more rows have no agent either, but make exactly the LangChain calls the agent makes: recorded
from real runs of the agent (one per question, through its model and tool), the same message lists,
``stop``, config, tool input and keyword arguments, replayed with no prompt, parser or loop; once
through ``asyncio.gather`` and a semaphore like the fourth row, once through LangChain's
``Runnable.abatch`` like the agent. The CPU table divides every row by both floors: the LangChain
calls alone, and the agent's own calls replayed through ``abatch``.

    python bench/concurrency.py [--questions 200] [--delay 0.05] [--quick] [--out PATH]

Where the agent's CPU goes: ``--breakdown`` builds the no-agent row up, one layer of what the agent
does at a time (a chain run for callbacks, the prompt, the parser), and measures each against the
whole agent, CPU per question as above.

Before and after a change: ``--trees OLD,NEW`` measures only the CPU per question, of explicit_react,
of the LangChain calls alone and of the agent's own calls replayed (each tree's agent recorded), for
the explicit_react of each source tree (a git worktree of
another commit, say), in fresh processes taking turns, ``--rounds`` times each; in each process the
agent and the LangChain calls alone take turns ``--repeats`` times, and each keeps its least CPU:

    python bench/concurrency.py --trees /tmp/before,. --rounds 4
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import inspect
import json
import math
import re
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, tool

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HUB_REACT_PROMPT, RESULTS, load_average, median, run_in_trees, table, write_json

import explicit_react
from explicit_react import ExplicitReActAgent

_ITEM = re.compile(r"What is the value of item (\d+)\?")


@tool
def lookup(item: str) -> str:
    """Look up the value of an item."""
    return f"The value of {item.strip()} is 42."


async def _alookup(item: str) -> str:
    return f"The value of {item.strip()} is 42."


async_lookup = StructuredTool.from_function(
    coroutine=_alookup, name="lookup", description="Look up the value of an item."
)
"""The same tool written as ``async def``: LangChain runs a sync tool in a thread pool when the agent
is async, and that hop costs more CPU than the whole agent step; an async tool runs on the event loop."""

TOOLS: dict[str, BaseTool] = {"sync": lookup, "async": async_lookup}


class QuestionKeyedModel(BaseChatModel):
    """Waits ``delay`` seconds, then asks for a lookup, or answers once the lookup's result is in the prompt."""

    delay: float = 0.05

    @property
    def _llm_type(self) -> str:
        return "question-keyed"

    def _reply(self, messages: list[BaseMessage]) -> ChatResult:
        prompt = "\n".join(str(m.content) for m in messages)
        match = _ITEM.search(prompt)
        if match is None:
            raise ValueError("no question in the prompt")
        item = f"item {match[1]}"
        if f"The value of {item} is" in prompt:
            text = f"Thought: I now know the final answer\nFinal Answer: {item} is 42"
        else:
            text = f"Thought: I need to look this up.\nAction: lookup\nAction Input: {item}"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, **kwargs: Any
    ) -> ChatResult:
        time.sleep(self.delay)
        return self._reply(messages)

    async def _agenerate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, **kwargs: Any
    ) -> ChatResult:
        await asyncio.sleep(self.delay)
        return self._reply(messages)


def item_of(question: str) -> str:
    """The item number a benchmark question asks about."""
    match = _ITEM.search(question)
    assert match is not None, question
    return match[1]


Batch = Callable[[list[str], int], Any]
"""``batch(questions, concurrency)``: an awaitable that answers all the questions."""


def make_agent(model: Any, tool: BaseTool) -> ExplicitReActAgent:
    """The agent every explicit_react row measures (and ``replayed_batch`` records)."""
    return ExplicitReActAgent(model, [tool], max_iterations=3)


def explicit_batch(delay: float, tool: BaseTool) -> Batch:
    agent = make_agent(QuestionKeyedModel(delay=delay), tool)

    async def batch(questions: list[str], concurrency: int) -> list[str]:
        outputs = await agent.abatch(questions, config={"max_concurrency": concurrency})
        return [o["output"] for o in outputs]

    return batch


def explicit_function_batch(delay: float, tool: BaseTool) -> Batch:
    """explicit_react with the model as a plain ``async def complete(messages) -> str`` (the seed's
    shape, which the classic agent cannot take): shows how much of the cost is LangChain's
    chat-model machinery rather than the agent's."""
    keyed = QuestionKeyedModel(delay=delay)

    async def complete(messages: list[dict[str, str]]) -> str:
        await asyncio.sleep(delay)
        reply = keyed._reply([AIMessage(content="\n".join(m["content"] for m in messages))])
        return str(reply.generations[0].message.content)

    agent = ExplicitReActAgent(complete, [tool], max_iterations=3)

    async def batch(questions: list[str], concurrency: int) -> list[str]:
        outputs = await agent.abatch(questions, config={"max_concurrency": concurrency})
        return [o["output"] for o in outputs]

    return batch


def classic_batch(delay: float, tool: BaseTool) -> Batch:
    from langchain_classic.agents import AgentExecutor, create_react_agent
    from langchain_core.prompts import PromptTemplate

    model = QuestionKeyedModel(delay=delay)
    agent = create_react_agent(model, [tool], PromptTemplate.from_template(HUB_REACT_PROMPT))
    executor = AgentExecutor(agent=agent, tools=[tool], max_iterations=3)

    async def batch(questions: list[str], concurrency: int) -> list[str]:
        outputs = await executor.abatch(
            [{"input": q} for q in questions], config={"max_concurrency": concurrency}
        )
        return [o["output"] for o in outputs]

    return batch


def langchain_calls_batch(delay: float, tool: BaseTool) -> Batch:
    """No agent at all: per question the two model calls and the one tool call an agent makes, through
    the same LangChain interfaces (``BaseChatModel.ainvoke``, ``BaseTool.arun``), with no prompt, parser
    or loop around them. The most any agent that calls these objects can reach on this machine."""
    model = QuestionKeyedModel(delay=delay)

    async def one(question: str, slots: asyncio.Semaphore) -> str:
        async with slots:
            await model.ainvoke([HumanMessage(question)])
            observation = await tool.arun(f"item {item_of(question)}")
            reply = await model.ainvoke([HumanMessage(f"{question}\n{observation}")])
            return str(reply.content).split("Final Answer: ", 1)[1]

    async def batch(questions: list[str], concurrency: int) -> list[str]:
        slots = asyncio.Semaphore(concurrency)
        return list(await asyncio.gather(*(one(q, slots) for q in questions)))

    return batch


class RecordedCall(NamedTuple):
    """One call the agent made on its model or tool: the method, the arguments exactly as passed (the
    same objects), and whether a blocking method ran off the main thread, where the batch's event loop
    runs (the async driver runs a call with no native async form, such as a sync tool's ``run``, with
    ``asyncio.to_thread``)."""

    target: str  # "model" or "tool"
    method: str  # "ainvoke", "invoke", "arun" or "run"
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    in_thread: bool


RECORDED_METHODS = {"model": ("invoke", "ainvoke"), "tool": ("run", "arun")}


def recording(target: str, obj: Any, log: list[RecordedCall]) -> Any:
    """``obj`` with its public call methods (``RECORDED_METHODS``) recording each call into ``log``
    and then calling the real method with the same arguments: patched on the instance, so the
    object's class, and every check the agent makes on it, stay what they were."""
    for name in RECORDED_METHODS[target]:
        real = getattr(obj, name)
        if inspect.iscoroutinefunction(real):

            async def arecord(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
                log.append(RecordedCall(target, _name, args, kwargs, False))
                return await _real(*args, **kwargs)

            object.__setattr__(obj, name, arecord)
        else:

            def record(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
                off_loop = threading.current_thread() is not threading.main_thread()
                log.append(RecordedCall(target, _name, args, kwargs, off_loop))
                return _real(*args, **kwargs)

            object.__setattr__(obj, name, record)
    return obj


def question_of(call: RecordedCall) -> str:
    """The question a recorded call belongs to: every model prompt holds it, every tool input its item."""
    if call.target == "model":
        prompt = "\n".join(str(m.content) for m in call.args[0])
        return f"What is the value of item {item_of(prompt)}?"
    item = re.search(r"item (\d+)", str(call.args[0]))
    assert item is not None, call.args
    return f"What is the value of item {item[1]}?"


def record_agent_calls(tool: BaseTool, asked: list[str]) -> dict[str, list[RecordedCall]]:
    """Run the agent of the explicit_react row (``make_agent``, through ``abatch`` at concurrency 50,
    no callbacks) once over ``asked``, its model and a copy of ``tool`` recording every call; the calls
    of each question, in order. Each question must have made a model call, a tool call, a model call."""
    log: list[RecordedCall] = []
    model = recording("model", QuestionKeyedModel(delay=0.0), log)
    agent = make_agent(model, recording("tool", tool.model_copy(), log))
    outputs = asyncio.run(agent.abatch(asked, config={"max_concurrency": 50}))
    answers = [o["output"] for o in outputs]
    expected = [f"item {item_of(q)} is 42" for q in asked]
    if answers != expected:
        raise RuntimeError(f"recording the agent's calls: wrong answers, e.g. {answers[:3]!r}")
    calls: dict[str, list[RecordedCall]] = {question: [] for question in asked}
    for call in log:
        calls[question_of(call)].append(call)
    for question, made in calls.items():
        if [c.target for c in made] != ["model", "tool", "model"]:
            raise RuntimeError(f"{question}: the agent made {[(c.target, c.method) for c in made]}")
    return calls


RECORDINGS: dict[tuple[int, float], tuple[QuestionKeyedModel, dict[str, list[Any]]]] = {}
"""The replayed calls of each tool (by ``id``) and model delay, with the model they are replayed on:
shared by the two replay rows, so a process holds one copy of them. They are many objects (about
10 per question, besides the recorded arguments themselves) that the collector tracks and that stay
for the process's life; ``cpu_per_question`` drops them before the next tool's."""


def replayed_batch(delay: float, tool: BaseTool, *, through_abatch: bool = True) -> Batch:
    """No agent: per question exactly the model and tool calls the agent made for it (recorded by
    ``record_agent_calls`` from real agent runs: the same message lists, ``stop``, config, tool input
    and keyword arguments, on the same kind of model and the same tool, a blocking call in a thread as
    the agent's async driver runs it), replayed with no prompt, parser or loop. ``through_abatch``: the
    questions go through LangChain's ``Runnable.abatch`` as the agent's do (a ``Runnable`` whose
    ``ainvoke`` replays a question), else through ``asyncio.gather`` and a semaphore, like the
    LangChain calls alone. The calls must be recorded first (``prepare``), outside any timing."""
    model, replays = RECORDINGS.setdefault((id(tool), delay), (QuestionKeyedModel(delay=delay), {}))
    methods = {
        (target, name): getattr(obj, name)
        for target, obj in (("model", model), ("tool", tool))
        for name in RECORDED_METHODS[target]
    }

    def capture(asked: list[str]) -> None:
        todo = [question for question in asked if question not in replays]
        for question, made in (record_agent_calls(tool, todo) if todo else {}).items():
            replays[question] = [
                (
                    methods[c.target, c.method],
                    c.args,
                    c.kwargs,
                    "await" if c.method.startswith("a") else "thread" if c.in_thread else "call",
                )
                for c in made
            ]

    async def one(question: str) -> str:
        reply: Any = None
        for method, args, kwargs, how in replays[question]:
            if how == "await":
                reply = await method(*args, **kwargs)
            elif how == "thread":
                reply = await asyncio.to_thread(method, *args, **kwargs)
            else:
                reply = method(*args, **kwargs)
        return str(reply.content).split("Final Answer: ", 1)[1]

    class Replayed(Runnable[str, str]):
        def invoke(self, input: str, config: RunnableConfig | None = None, **kwargs: Any) -> str:
            raise NotImplementedError("the replay is async only")

        async def ainvoke(self, input: str, config: RunnableConfig | None = None, **kwargs: Any) -> str:
            return await one(input)

    replayed = Replayed()

    async def batch(questions: list[str], concurrency: int) -> list[str]:
        if through_abatch:
            return await replayed.abatch(questions, config={"max_concurrency": concurrency})
        slots = asyncio.Semaphore(concurrency)

        async def gated(question: str) -> str:
            async with slots:
                return await one(question)

        return list(await asyncio.gather(*(gated(q) for q in questions)))

    batch.capture = capture  # type: ignore[attr-defined]
    return batch


def prepare(batches: dict[Any, Batch], asked: list[str]) -> None:
    """Record the agent's calls for ``asked`` for every replay among ``batches`` (before timing them)."""
    for batch in batches.values():
        capture = getattr(batch, "capture", None)
        if capture is not None:
            capture(asked)


NO_AGENT = "no agent: the LangChain calls alone"
REPLAYED_GATHER = "no agent: the agent's own LangChain calls, replayed, gather+Semaphore"
REPLAYED = "no agent: the agent's own LangChain calls, replayed, abatch"
FRAMEWORKS: dict[str, Callable[[float, BaseTool], Batch]] = {
    "explicit_react": explicit_batch,
    "classic AgentExecutor": classic_batch,
    "explicit_react, model as an async function": explicit_function_batch,
    NO_AGENT: langchain_calls_batch,
    REPLAYED_GATHER: partial(replayed_batch, through_abatch=False),
    REPLAYED: replayed_batch,
}


def questions(n: int) -> list[str]:
    return [f"What is the value of item {i}?" for i in range(n)]


def check(name: str, outputs: list[str], n: int) -> None:
    """Every run must have answered its own question, or the timing means nothing."""
    wrong = [i for i, out in enumerate(outputs) if out != f"item {i} is 42"]
    if len(outputs) != n or wrong:
        raise RuntimeError(f"{name}: {len(wrong)} wrong answers, e.g. {outputs[wrong[0]]!r}")


def timed(name: str, batch: Batch, n: int, concurrency: int) -> float:
    gc.collect()
    began = time.perf_counter()
    outputs = asyncio.run(batch(questions(n), concurrency))
    seconds = time.perf_counter() - began
    check(name, outputs, n)
    return seconds


def peak_memory(batch: Batch, n: int, concurrency: int) -> int:
    """Bytes allocated at the peak of the batch, above what was allocated when it started."""
    gc.collect()
    tracemalloc.start()
    start, _ = tracemalloc.get_traced_memory()
    asyncio.run(batch(questions(n), concurrency))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak - start


def measure(n: int, delay: float, levels: list[int], repeats: int, tools: list[str]) -> list[dict[str, Any]]:
    batches = {(name, kind): make(delay, TOOLS[kind]) for kind in tools for name, make in FRAMEWORKS.items()}
    prepare(batches, questions(n))
    for (name, _), batch in batches.items():  # warm-up
        timed(name, batch, min(n, 10), 10)
    rows = []
    for concurrency in levels:
        ideal = math.ceil(n / concurrency) * 2 * delay
        times: dict[tuple[str, str], list[float]] = {key: [] for key in batches}
        for _ in range(1 if concurrency == 1 else repeats):  # interleaved
            for key, batch in batches.items():
                times[key].append(timed(key[0], batch, n, concurrency))
        for (name, kind), batch in batches.items():
            seconds = median(times[name, kind])
            memory = peak_memory(batch, n, concurrency)
            rows.append(
                {
                    "framework": name,
                    "tool": kind,
                    "concurrency": concurrency,
                    "ideal_seconds": ideal,
                    "median_seconds": seconds,
                    "samples": times[name, kind],
                    "efficiency": ideal / seconds,
                    "questions_per_second": n / seconds,
                    "peak_bytes": memory,
                    "kib_per_concurrent_run": memory / min(concurrency, n) / 1024,
                }
            )
    return rows


def tasks_per_question(name: str, batch: Batch, n: int) -> float:
    """asyncio tasks created per question (counted by a task factory, at concurrency 50).

    A run that awaits a task hands the event loop back at least twice (``bench/lockstep.py`` shows
    what such turns cost when many replies arrive together)."""
    created = 0

    def counting_factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        nonlocal created
        created += 1
        return asyncio.Task(coro, loop=loop, **kwargs)

    async def counted() -> list[str]:
        asyncio.get_running_loop().set_task_factory(counting_factory)
        outputs: list[str] = await batch(questions(n), 50)
        return outputs

    check(name, asyncio.run(counted()), n)
    return created / n


def layered_batch(layers: int, tool: BaseTool) -> Batch:
    """The no-agent row with the first ``layers`` of the agent's own work added, in order: 1 a chain
    run for callbacks (``on_chain_start``, its child manager passed to every call, ``on_agent_finish``,
    ``on_chain_end``), 2 the agent's prompt (rendered, as LangChain messages, with the stop sequence),
    3 the parser reading both replies."""
    from langchain_core.agents import AgentFinish
    from langchain_core.runnables import ensure_config
    from langchain_core.runnables.config import get_async_callback_manager_for_config

    from explicit_react.llm import STOP_SEQUENCE, Completion, to_langchain
    from explicit_react.types import Step

    model = QuestionKeyedModel(delay=0.0)
    agent = ExplicitReActAgent(model, [tool], max_iterations=3)

    async def call(question: str, steps: list[Step], config: RunnableConfig) -> Any:
        if layers < 2:
            text = "\n".join([question, *(s.observation for s in steps)])
            return await model.ainvoke([HumanMessage(text)], config)
        messages = to_langchain(agent.messages(question, steps, "", 3 - len(steps)))
        reply = await model.ainvoke(messages, config, stop=[STOP_SEQUENCE])
        if layers >= 3:
            agent.transport.read(Completion(str(reply.content)))
        return reply

    async def one(question: str, slots: asyncio.Semaphore) -> str:
        async with slots:
            item = item_of(question)
            run, config = None, RunnableConfig()
            if layers >= 1:
                start = get_async_callback_manager_for_config(ensure_config(None))
                run = await start.on_chain_start(None, {"input": question, "context": ""}, name="agent")
                config = RunnableConfig(callbacks=run.get_child())
            await call(question, [], config)
            observation = await tool.arun(f"item {item}", callbacks=config.get("callbacks"))
            step = Step(thought="", action="lookup", action_input=f"item {item}", observation=observation)
            reply = await call(question, [step], config)
            answer = str(reply.content).split("Final Answer: ", 1)[1]
            if run is not None:
                await run.on_agent_finish(AgentFinish({"output": answer}, str(reply.content)))
                await run.on_chain_end({"output": answer})
            return answer

    async def batch(questions: list[str], concurrency: int) -> list[str]:
        slots = asyncio.Semaphore(concurrency)
        return list(await asyncio.gather(*(one(q, slots) for q in questions)))

    return batch


BREAKDOWN = [
    "the LangChain calls alone",
    "+ a chain run for callbacks",
    "+ the agent's prompt",
    "+ the parser",
]


def cpu_in_turns(
    batches: dict[str, Batch],
    n: int,
    rounds: int,
    collections: dict[str, list[list[int]]] | None = None,
) -> dict[str, list[float]]:
    """CPU ms per question of each batch over ``n`` questions at concurrency 50, the batches taking
    turns, ``rounds`` times each (every run checked). ``collections``, if given, gets the garbage
    collections of each run, per generation (``gc.get_stats()`` before and after it)."""
    samples: dict[str, list[float]] = {name: [] for name in batches}
    for _ in range(rounds):
        for name, batch in batches.items():
            gc.collect()
            before = [generation["collections"] for generation in gc.get_stats()]
            began = time.process_time()
            outputs = asyncio.run(batch(questions(n), 50))
            samples[name].append(1000 * (time.process_time() - began) / n)
            after = [generation["collections"] for generation in gc.get_stats()]
            if collections is not None:
                collections.setdefault(name, []).append([a - b for a, b in zip(after, before, strict=True)])
            check(name, outputs, n)
    return samples


def breakdown(n: int, kind: str, rounds: int) -> list[dict[str, Any]]:
    """CPU ms per question of each layer of ``layered_batch`` and of the agent itself (``abatch``),
    measured in turns, ``rounds`` times each; the median and the minimum of each."""
    batches = {name: layered_batch(i, TOOLS[kind]) for i, name in enumerate(BREAKDOWN)}
    batches["the agent (abatch)"] = explicit_batch(0.0, TOOLS[kind])
    for name, batch in batches.items():  # warm-up
        check(name, asyncio.run(batch(questions(50), 50)), 50)
    samples = cpu_in_turns(batches, n, rounds)
    return [
        {"layer": name, "tool": kind, "cpu_ms_per_question": median(v), "min_cpu_ms_per_question": min(v)}
        for name, v in samples.items()
    ]


def cpu_per_question(
    n: int, tools: list[str], names: list[str] | None = None, repeats: int = 1
) -> list[dict[str, Any]]:
    """CPU milliseconds per question with the model's delay at 0 (``time.process_time``, which counts
    every thread, over ``n`` questions at concurrency 50): the cost concurrency cannot hide. Also the
    asyncio tasks each question creates. ``names``: the frameworks to measure (all by default).
    ``repeats``: the frameworks take turns this many times and each keeps its least CPU (on a loaded
    machine the least is the one least disturbed by other processes). Each row also has the garbage
    collections of each of its runs (young, middle, full) and its ratio to each of ``FLOORS``."""
    rows = []
    for kind in tools:
        RECORDINGS.clear()  # the last tool's; the next batches record their own
        batches = {name: FRAMEWORKS[name](0.0, TOOLS[kind]) for name in names or FRAMEWORKS}
        prepare(batches, questions(n))
        tasks = {
            name: tasks_per_question(name, batch, min(n, 50)) for name, batch in batches.items()
        }  # warm-up
        collections: dict[str, list[list[int]]] = {}
        samples = cpu_in_turns(batches, n, repeats, collections)
        least = {name: min(samples[name]) for name in batches}
        rows += [
            {
                "framework": name,
                "tool": kind,
                "cpu_ms_per_question": least[name],
                "samples": samples[name],
                "tasks_per_question": tasks[name],
                "gc_collections": collections[name],
                **{key: least[name] / least[floor] for key, floor in FLOORS.items() if floor in least},
            }
            for name in batches
        ]
    return rows


FLOORS = {"ratio_to_no_agent": NO_AGENT, "ratio_to_replayed": REPLAYED}
"""The two no-agent floors a row's CPU is divided by: the LangChain calls alone (issue 22's target is
1.3x of it), and the agent's own LangChain calls replayed through ``abatch``."""

WORKER_ROWS = ["explicit_react", NO_AGENT, REPLAYED_GATHER, REPLAYED]
"""What ``--trees`` measures in each process, taking turns."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.05, help="seconds the model waits per call")
    parser.add_argument("--levels", default="1,10,50,200", help="concurrency levels, comma-separated")
    parser.add_argument(
        "--repeats", type=int, default=3, help="repetitions per level above 1; with --trees: runs per process"
    )
    parser.add_argument("--tools", default="sync,async", help="tool kinds, comma-separated: sync, async")
    parser.add_argument("--quick", action="store_true", help="10 questions, 5 ms, levels 1,5 (smoke test)")
    parser.add_argument("--out", type=Path, default=None, help="default: results/concurrency.json")
    parser.add_argument(
        "--breakdown", action="store_true", help="only where the agent's CPU goes (see above)"
    )
    parser.add_argument("--trees", help="OLD,NEW: source trees whose explicit_react to compare, interleaved")
    parser.add_argument("--rounds", type=int, default=4, help="with --trees: runs per tree")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.questions, args.delay, args.levels, args.repeats, args.rounds = 10, 0.005, "1,5", 1, 1
    cpu_questions = 20 if args.quick else 1000
    if args.worker:
        rows = cpu_per_question(cpu_questions, args.tools.split(","), WORKER_ROWS, args.repeats)
        print(json.dumps({"package": explicit_react.__file__, "cpu": rows}))
        return 0
    if args.trees:
        return compare_trees(args, [Path(tree) for tree in args.trees.split(",")])
    if args.breakdown:
        return show_breakdown(args, cpu_questions)
    args.out = args.out or RESULTS / "concurrency.json"
    levels = [int(level) for level in args.levels.split(",")]
    rows = measure(args.questions, args.delay, levels, args.repeats, args.tools.split(","))
    cpu = cpu_per_question(cpu_questions, args.tools.split(","))
    print(
        f"abatch over {args.questions} questions, 2 model calls each, {args.delay * 1000:.0f} ms per call, "
        f"median of {args.repeats}\n"
    )
    print(
        table(
            [
                "framework",
                "tool",
                "concurrency",
                "ideal (s)",
                "measured (s)",
                "% of ideal",
                "questions/s",
                "KiB per concurrent run",
            ],
            [
                [
                    r["framework"],
                    r["tool"],
                    r["concurrency"],
                    f"{r['ideal_seconds']:.2f}",
                    f"{r['median_seconds']:.2f}",
                    f"{100 * r['efficiency']:.0f}%",
                    f"{r['questions_per_second']:.1f}",
                    f"{r['kib_per_concurrent_run']:.0f}",
                ]
                for r in rows
            ],
        )
    )

    print(f"\nCPU per question with no model delay ({cpu_questions} questions at concurrency 50)\n")
    print(
        table(
            [
                "framework",
                "tool",
                "CPU ms per question",
                "/ the LangChain calls alone",
                "/ the agent's calls replayed (abatch)",
                "asyncio tasks per question",
            ],
            [
                [
                    r["framework"],
                    r["tool"],
                    f"{r['cpu_ms_per_question']:.2f}",
                    f"{r['ratio_to_no_agent']:.2f}",
                    f"{r['ratio_to_replayed']:.2f}",
                    f"{r['tasks_per_question']:g}",
                ]
                for r in cpu
            ],
        )
    )

    def at_50(framework: str) -> dict[str, float]:
        return {
            r["tool"]: r["efficiency"] for r in rows if r["framework"] == framework and r["concurrency"] == 50
        }

    explicit_at_50 = at_50("explicit_react")
    summary = {
        "questions": args.questions,
        "delay": args.delay,
        "repeats": args.repeats,
        "explicit_react_efficiency_at_50": explicit_at_50,
        "langchain_calls_alone_efficiency_at_50": at_50("no agent: the LangChain calls alone"),
        "target_met": {kind: efficiency >= 0.9 for kind, efficiency in explicit_at_50.items()},
    }
    write_json(args.out, {"summary": summary, "rows": rows, "cpu": cpu})
    return 0


def show_breakdown(args: argparse.Namespace, n: int) -> int:
    """``--breakdown``: the layers of ``layered_batch`` and the agent, for each tool kind."""
    load_before = load_average()
    rounds = 1 if args.quick else 5
    rows = [row for kind in args.tools.split(",") for row in breakdown(n, kind, rounds)]
    floors = {r["tool"]: r["cpu_ms_per_question"] for r in rows if r["layer"] == BREAKDOWN[0]}
    for row in rows:
        row["ratio_to_no_agent"] = row["cpu_ms_per_question"] / floors[row["tool"]]
    print(
        f"CPU ms per question, no model delay, {n} questions at concurrency 50, median of {rounds} in turns "
        f"(load average {load_before} before, {load_average()} after)\n"
    )
    header = ["layer", "tool", "CPU ms per question (median)", "(min)", "/ the LangChain calls alone"]
    print(
        table(
            header,
            [
                [
                    r["layer"],
                    r["tool"],
                    f"{r['cpu_ms_per_question']:.3f}",
                    f"{r['min_cpu_ms_per_question']:.3f}",
                    f"{r['ratio_to_no_agent']:.2f}",
                ]
                for r in rows
            ],
        )
    )
    write_json(args.out or RESULTS / "concurrency_breakdown.json", {"rounds": rounds, "rows": rows})
    return 0


def compare_trees(args: argparse.Namespace, trees: list[Path]) -> int:
    """``--trees``: CPU per question of each tree's explicit_react, of the LangChain calls alone and of
    that agent's own calls replayed (``WORKER_ROWS``), measured in the same process, the processes
    taking turns; the agent's ratio to each floor, per process."""
    load_before = load_average()
    worker = ["--tools", args.tools, "--repeats", str(args.repeats)] + (["--quick"] if args.quick else [])
    runs = run_in_trees(Path(__file__), trees, args.rounds, worker)
    load_after = load_average()
    summary: dict[str, dict[str, Any]] = {}
    rows, collection_lines = [], []
    for tree, rounds in runs.items():
        summary[tree] = {}
        for kind in args.tools.split(","):
            cpu = [
                {r["framework"]: r["cpu_ms_per_question"] for r in run["cpu"] if r["tool"] == kind}
                for run in rounds
            ]
            ours = [c["explicit_react"] for c in cpu]
            floor, replayed = [c[NO_AGENT] for c in cpu], [c[REPLAYED] for c in cpu]
            gathered = [c[REPLAYED_GATHER] for c in cpu]
            ratios = [o / f for o, f in zip(ours, floor, strict=True)]
            to_replayed = [o / r for o, r in zip(ours, replayed, strict=True)]
            every_run: dict[
                str, list[list[int]]
            ] = {}  # each framework's collections, every run of every round
            for run in rounds:
                for r in run["cpu"]:
                    if r["tool"] == kind:
                        every_run.setdefault(r["framework"], []).extend(r["gc_collections"])
            collections = {
                name: [median([c[g] for c in counts]) for g in range(3)] for name, counts in every_run.items()
            }
            collection_lines.append(
                f"{tree}, {kind} tool: "
                + "; ".join(
                    f"{name} {'/'.join(f'{c:g}' for c in gens)}" for name, gens in collections.items()
                )
            )
            summary[tree][kind] = {
                "gc_collections_median": collections,
                "explicit_react_cpu_ms": median(ours),
                "no_agent_cpu_ms": median(floor),
                "replayed_gather_cpu_ms": median(gathered),
                "replayed_cpu_ms": median(replayed),
                "ratio_to_no_agent": median(ratios),
                "least_to_least": min(ours) / min(floor),
                "ratio_to_replayed": median(to_replayed),
                "least_to_least_replayed": min(ours) / min(replayed),
                "rounds": {
                    "explicit_react_cpu_ms": ours,
                    "no_agent_cpu_ms": floor,
                    "replayed_gather_cpu_ms": gathered,
                    "replayed_cpu_ms": replayed,
                    "ratio_to_no_agent": ratios,
                    "ratio_to_replayed": to_replayed,
                },
            }
            rows.append(
                [
                    tree,
                    kind,
                    f"{median(ours):.3f}",
                    f"{median(floor):.3f}",
                    f"{median(gathered):.3f}",
                    f"{median(replayed):.3f}",
                    f"{median(ratios):.2f} ({', '.join(f'{r:.2f}' for r in ratios)})",
                    f"{min(ours) / min(floor):.2f}",
                    f"{median(to_replayed):.2f} ({', '.join(f'{r:.2f}' for r in to_replayed)})",
                    f"{min(ours) / min(replayed):.2f}",
                ]
            )
    print(
        f"CPU ms per question, no model delay, {20 if args.quick else 1000} questions at concurrency 50, "
        f"{args.rounds} processes per tree taking turns, each the least of {args.repeats} runs taking turns "
        f"(load average {load_before} before, {load_after} after)\n"
    )
    print(
        table(
            [
                "tree",
                "tool",
                "explicit_react",
                "LangChain calls alone",
                "agent's calls replayed, gather",
                "agent's calls replayed, abatch",
                "/ calls alone, median of rounds (each)",
                "least / least",
                "/ replayed (abatch), median of rounds (each)",
                "least / least",
            ],
            rows,
        )
    )
    print(
        f"\nGarbage collections per run of {20 if args.quick else 1000} questions, young/middle/full, median:"
    )
    print("\n".join(collection_lines))
    out = args.out or RESULTS / "concurrency_trees.json"
    write_json(
        out,
        {
            "load_average": [load_before, load_after],
            "rounds": args.rounds,
            "repeats_per_process": args.repeats,
            "trees": summary,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
