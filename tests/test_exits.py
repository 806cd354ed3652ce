"""Async runs always exit and obey their timeouts: each case runs in a child process that must exit.

A hung sync call cannot be killed; what is checked is that the run returns on time, that the call
is left on a daemon thread (never the event loop's own thread, never its default executor), and so
that the child process exits at once when its work is done.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PRELUDE = """
import asyncio, threading, time
from typing import Any
from langchain_core.language_models import BaseChatModel
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from explicit_react import AgentExecutor, ExplicitReActAgent, create_react_agent
from explicit_react.testing import ScriptedChatModel

HANG = 3600

@tool
def hang(query: str) -> str:
    \"\"\"Never returns.\"\"\"
    time.sleep(HANG)
    return "never"

class SyncOnlyModel(BaseChatModel):
    \"\"\"A chat model with no async implementation that hangs.\"\"\"
    @property
    def _llm_type(self) -> str:
        return "sync-only"
    def _generate(self, messages: Any, stop: Any = None, **kwargs: Any) -> ChatResult:
        time.sleep(HANG)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="never"))])

def blocking_model(messages: list[dict[str, str]]) -> str:
    time.sleep(HANG)
    return "never"

def report(label: str, value: Any, started: float) -> None:
    print(f"{label}: {value} in {time.monotonic() - started:.1f} s", flush=True)

def stragglers() -> list[str]:
    return [t.name for t in threading.enumerate() if not t.daemon and t is not threading.main_thread()]
"""

CASES = {
    "sync tool under arun, tool_timeout": """
        script = ["Action: hang\\nAction Input: x", "Final Answer: done"]
        agent = ExplicitReActAgent(ScriptedChatModel(script), [hang], tool_timeout=0.5)
        result = asyncio.run(agent.arun("q"))
        report("result", (result.stop_reason.value, result.steps[0].error), started)
    """,
    "sync-only chat model under arun, llm_timeout": """
        agent = ExplicitReActAgent(SyncOnlyModel(), [hang], llm_timeout=0.5, max_retries=0)
        result = asyncio.run(agent.arun("q"))
        report("result", result.stop_reason.value, started)
    """,
    "blocking callable model under arun, llm_timeout": """
        agent = ExplicitReActAgent(blocking_model, [hang], llm_timeout=0.5, max_retries=0)
        result = asyncio.run(agent.arun("q"))
        report("result", result.stop_reason.value, started)
    """,
    "sync tool under arun, max_seconds": """
        script = ["Action: hang\\nAction Input: x", "Final Answer: done"]
        agent = ExplicitReActAgent(ScriptedChatModel(script), [hang], max_seconds=0.5)
        result = asyncio.run(agent.arun("q"))
        report("result", result.stop_reason.value, started)
    """,
    "compat ainvoke, sync-only model, max_execution_time": """
        executor = AgentExecutor(
            agent=create_react_agent(SyncOnlyModel(), [hang]), tools=[hang], max_execution_time=0.5
        )
        output = asyncio.run(executor.ainvoke({"input": "q"}))
        report("result", executor.last_stop_reason.value, started)
    """,
    "compat ainvoke, sync tool, max_execution_time": """
        script = ["Action: hang\\nAction Input: x", "Final Answer: done"]
        executor = AgentExecutor(
            agent=create_react_agent(ScriptedChatModel(script), [hang]), tools=[hang], max_execution_time=0.5
        )
        output = asyncio.run(executor.ainvoke({"input": "q"}))
        report("result", executor.last_stop_reason.value, started)
    """,
}

EXPECTED = {
    "sync tool under arun, tool_timeout": "('success', 'tool_timeout')",
    "sync-only chat model under arun, llm_timeout": "llm_error",
    "blocking callable model under arun, llm_timeout": "llm_error",
    "sync tool under arun, max_seconds": "max_seconds",
    "compat ainvoke, sync-only model, max_execution_time": "max_seconds",
    "compat ainvoke, sync tool, max_execution_time": "max_seconds",
}


def child_script() -> str:
    """Every case in turn, each reporting its result, its time and the non-daemon threads it left."""
    parts = [PRELUDE]
    for number, (case, body) in enumerate(CASES.items()):
        parts.append(f"def case_{number}() -> None:\n    started = time.monotonic()")
        parts.append(textwrap.indent(textwrap.dedent(body), "    "))
        parts.append(f"    print('threads: {case}:', stragglers(), flush=True)\n")
    parts.append("".join(f"case_{n}()\n" for n in range(len(CASES))))
    return "\n".join(parts)


def test_async_runs_with_hung_sync_calls_return_on_time_and_the_process_exits() -> None:
    """All cases share one child process (one LangChain import): it must print every result and exit."""
    try:
        child = subprocess.run(
            [sys.executable, "-c", child_script()], cwd=ROOT, capture_output=True, text=True, timeout=90
        )
    except subprocess.TimeoutExpired as exc:  # a hung call kept the process (or a run) from ending
        pytest.fail(f"the child did not exit; it printed:\n{exc.stdout}")
    assert child.returncode == 0, child.stderr[-2000:]
    results = [line.split(": ", 1)[1] for line in child.stdout.splitlines() if line.startswith("result: ")]
    threads = [line.rsplit(": ", 1)[1] for line in child.stdout.splitlines() if line.startswith("threads: ")]
    assert [r.rpartition(" in ")[0] for r in results] == list(EXPECTED.values())
    assert all(float(r.rpartition(" in ")[2].split()[0]) < 5 for r in results), results
    assert threads == ["[]"] * len(CASES)  # no case left a thread that would keep the process alive
