"""Ctrl-C stops a batch at once, and blocking calls are not capped below the concurrency asked for.

With no time limit (no ``tool_timeout``, ``llm_timeout`` or ``max_seconds``: the defaults) a sync tool
or a blocking model under an async run goes to a worker thread. In asyncio's default executor, one
Ctrl-C took effect only when the call returned (``asyncio.run`` waits for that executor's threads,
and a call that never returns hung the process), and ``min(32, cpu + 4)`` calls ran at once whatever
the concurrency. LangChain's sync ``batch`` waited for its running calls after Ctrl-C the same way.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from explicit_react import ExplicitReActAgent, deadline
from explicit_react.scale import aanswer_all

ROOT = Path(__file__).resolve().parent.parent

HANG = 20
"""Seconds the interrupted tool blocks: past every bound below, so waiting for it shows."""

CHILD = f"""
import asyncio, os, signal, sys, threading, time
from explicit_react import ExplicitReActAgent
from explicit_react.scale import aanswer_all

interrupted_at = [0.0]

def hang(query: str) -> str:
    \"\"\"Interrupts the process (as Ctrl-C would) once the batch waits, then blocks.\"\"\"
    time.sleep(0.2)
    interrupted_at[0] = time.monotonic()
    os.kill(os.getpid(), signal.SIGINT)
    threading.Event().wait({HANG})
    return "late"

def model(messages):
    text = "\\n".join(m["content"] for m in messages)
    if "Question: hang\\n" in text and "late" not in text:
        return "Thought: t\\nAction: hang\\nAction Input: x"
    return "Thought: t\\nFinal Answer: ok"

agent = ExplicitReActAgent(model, [hang])
questions = ["a", "hang", "b"]
cases = {{
    "abatch": lambda: asyncio.run(agent.abatch(questions, config={{"max_concurrency": 3}})),
    "aanswer_all": lambda: asyncio.run(aanswer_all(agent, questions, concurrency=3)),
    "arun": lambda: asyncio.run(agent.arun("hang")),
    "batch": lambda: agent.batch(questions, config={{"max_concurrency": 3}}),
    "batch_as_completed": lambda: list(agent.batch_as_completed(questions, config={{"max_concurrency": 3}})),
}}
for name, case in cases.items():
    try:
        case()
        print(f"{{name}}: returned", flush=True)
    except KeyboardInterrupt:
        print(f"{{name}}: KeyboardInterrupt after {{time.monotonic() - interrupted_at[0]:.1f}} s", flush=True)
print("done", flush=True)
"""


def test_one_ctrl_c_stops_a_batch_at_once_and_the_process_exits() -> None:
    """Each case interrupts itself from inside its blocking tool; the KeyboardInterrupt must reach the
    caller within a second or two (not when the tool returns), and the process must exit at once
    after, with the tools still blocked in their threads."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    watchdog = threading.Timer(90, child.kill)
    watchdog.start()
    try:
        assert child.stdout is not None
        lines, done_at = [], None
        for line in child.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith("done"):
                done_at = time.monotonic()
        child.wait()
        exited_at = time.monotonic()
    finally:
        watchdog.cancel()
    assert child.stderr is not None
    errors = child.stderr.read()
    results = dict(line.split(": ", 1) for line in lines if ": " in line)
    assert set(results) == {"abatch", "aanswer_all", "arun", "batch", "batch_as_completed"}, (
        lines,
        errors[-3000:],
    )
    late = {
        name: result
        for name, result in results.items()
        if not result.startswith("KeyboardInterrupt") or float(result.split()[2]) > 2.0
    }
    assert not late, lines
    assert done_at is not None and child.returncode == 0, errors[-3000:]
    assert exited_at - done_at < 2.0, "the blocked tools' threads kept the process from exiting"


def barrier_agent(parties: int, where: str) -> tuple[ExplicitReActAgent, list[str]]:
    """An agent whose every question makes one blocking call (the model's, or a sync tool's) that
    waits for ``parties`` such calls to be in flight at once (2 s at most, then it fails)."""
    barrier = threading.Barrier(parties, timeout=2)

    def meet(query: str) -> str:
        """Waits for the other calls."""
        barrier.wait()
        return "MET-THEM-ALL"

    def model(messages: list[dict[str, str]]) -> str:
        text = "\n".join(m["content"] for m in messages)
        if where == "model":
            meet("")
        elif "MET-THEM-ALL" not in text:
            return "Thought: t\nAction: meet\nAction Input: x"
        return "Thought: t\nFinal Answer: ok"

    agent = ExplicitReActAgent(model, [meet], max_retries=0)
    return agent, [f"q{i}" for i in range(parties)]


def above_default_pool() -> int:
    """More calls at once than asyncio's (and LangChain's) default thread pool runs."""
    return min(32, (os.cpu_count() or 1) + 4) + 3


@pytest.mark.parametrize("where", ["model", "tool"])
def test_async_batch_runs_as_many_blocking_calls_at_once_as_its_concurrency(where: str) -> None:
    n = above_default_pool()
    agent, questions = barrier_agent(n, where)
    started = time.monotonic()
    outputs = asyncio.run(agent.abatch(questions, config={"max_concurrency": n}))
    assert [o["output"] for o in outputs] == ["ok"] * n, [o["error"] for o in outputs]
    assert time.monotonic() - started < 2


def test_aanswer_all_runs_as_many_blocking_calls_at_once_as_its_concurrency() -> None:
    n = above_default_pool()
    agent, questions = barrier_agent(n, "model")
    records = asyncio.run(aanswer_all(agent, questions, concurrency=n))
    assert [r["answer"] for r in records] == ["ok"] * n, [r["error"] for r in records]


def test_sync_batch_runs_max_concurrency_calls_at_once() -> None:
    n = above_default_pool()
    agent, questions = barrier_agent(n, "tool")
    outputs = agent.batch(questions, config={"max_concurrency": n})
    assert [o["output"] for o in outputs] == ["ok"] * n, [o["error"] for o in outputs]
    ran = sorted(i for i, _ in agent.batch_as_completed(questions, config={"max_concurrency": n}))
    assert ran == list(range(n))


def test_a_blocking_call_under_an_async_run_gets_a_reused_daemon_thread() -> None:
    """No time limit: the call runs in a daemon thread (it cannot keep the process alive at exit),
    taken from the pool the calls share: once a thread is free, no thread is started per call."""
    seen: list[threading.Thread] = []

    def where() -> threading.Thread:
        return threading.current_thread()

    async def calls() -> set[threading.Thread]:
        await deadline.acall_in_thread(where, None)
        there = set(threading.enumerate())
        for _ in range(20):
            seen.append(await deadline.acall_in_thread(where, None))
        return there

    there = asyncio.run(calls())
    assert all(thread.daemon and thread is not threading.main_thread() for thread in seen)
    assert set(seen) <= there


def test_a_cancelled_call_is_given_up() -> None:
    """A cancelled async run (Ctrl-C cancels ``asyncio.run``'s task) sets the blocking call's
    ``abandoned()`` event, with no time limit too, so a tool can stop its work."""
    events: list[threading.Event | None] = []
    started = threading.Event()

    def call() -> None:
        events.append(deadline.abandoned())
        started.set()
        assert events[0] is not None
        events[0].wait(5)

    async def cancel() -> None:
        task = asyncio.ensure_future(deadline.acall_in_thread(call, None))
        await asyncio.to_thread(started.wait, 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel())
    assert events[0] is not None and events[0].is_set()


def test_sync_batch_keeps_langchain_semantics() -> None:
    """Order of outputs, ``return_exceptions``, a failure raised, one input run inline, nothing for none."""
    agent = ExplicitReActAgent(lambda messages: "Thought: t\nFinal Answer: ok", [])
    assert agent.batch([]) == []
    assert [o["output"] for o in agent.batch(["a"])] == ["ok"]
    outputs = agent.batch(["a", "b", "c"], config={"max_concurrency": 2})
    assert [o["input"] for o in outputs] == ["a", "b", "c"]

    def boom(input: Any, config: Any = None, **kwargs: Any) -> dict[str, Any]:
        if input == "b":
            raise ValueError("b failed")
        return {"output": input}

    agent.invoke = boom  # type: ignore[method-assign]
    mixed = agent.batch(["a", "b", "c"], return_exceptions=True)
    assert mixed[0] == {"output": "a"} and isinstance(mixed[1], ValueError) and mixed[2] == {"output": "c"}
    with pytest.raises(ValueError, match="b failed"):
        agent.batch(["a", "b", "c"])
    completed = dict(agent.batch_as_completed(["a", "b"], return_exceptions=True))
    assert completed[0] == {"output": "a"} and isinstance(completed[1], ValueError)


def test_idle_workers_end() -> None:
    """The pool shrinks back: a worker with nothing to do for ``idle_seconds`` ends."""
    workers = deadline._Workers(idle_seconds=0.05)
    threads: list[threading.Thread] = []
    done = threading.Event()

    def job() -> Callable[[], None]:
        threads.append(threading.current_thread())
        return done.set

    workers.run(job)
    assert done.wait(5)
    threads[0].join(5)
    assert not threads[0].is_alive()
    done.clear()
    workers.run(job)  # a new worker takes over
    assert done.wait(5) and threads[1] is not threads[0]
