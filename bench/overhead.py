"""Framework cost per agent step: explicit_react vs langchain_classic AgentExecutor vs langgraph.

Each framework runs the same script on an instant model (``ScriptedChatModel``, no delay, no
usage counting) with a trivial ``echo`` tool: ``N`` tool calls with distinct inputs, then a final
answer. Everything measured is therefore the framework: prompt rendering, parsing, callbacks,
tool dispatch, state handling.

Per-step cost = (median time of an N-step run - median time of a 0-step run) / N. Subtracting the
0-step run (one model call, a final answer) removes the fixed cost of starting a run (callback
managers, input checks, graph start-up), which is reported separately as "per run". The agents and
models are built outside the timed region, as an application builds its agent once. Runs are
interleaved (the framework order rotates each repetition) so all three see the same machine load.

- explicit_react: ``ExplicitReActAgent(model, [echo], max_iterations=N + 1).invoke(question)``
- classic: ``AgentExecutor(agent=create_react_agent(model, [echo], hub ReAct prompt), ...)``
- langgraph: ``langgraph.prebuilt.create_react_agent(model, [echo])``; the model replies with
  native tool calls (``ScriptedChatModel.bind_tools`` accepts tools, and its scripted ``AIMessage``
  replies carry ``tool_calls``, which is all the prebuilt agent needs).

    python bench/overhead.py [--steps 20] [--repeats 15] [--quick] [--out PATH]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.tools import tool

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HUB_REACT_PROMPT, RESULTS, median, table, write_json

from explicit_react import ExplicitReActAgent
from explicit_react.testing import ScriptedChatModel

QUESTION = "Echo the numbers."


@tool
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


def text_script(steps: int) -> list[str]:
    """ReAct text replies: ``steps`` echo calls with distinct inputs, then a final answer."""
    return [f"Thought: step {i}\nAction: echo\nAction Input: {i}" for i in range(steps)] + [
        "Thought: I now know the final answer\nFinal Answer: done"
    ]


def tool_call_script(steps: int) -> list[AIMessage]:
    """Native tool-call replies for langgraph: ``steps`` echo calls, then a plain answer."""
    calls = [
        AIMessage(content="", tool_calls=[{"name": "echo", "args": {"text": str(i)}, "id": f"call_{i}"}])
        for i in range(steps)
    ]
    return [*calls, AIMessage(content="done")]


def model(replies: list[Any]) -> ScriptedChatModel:
    """An instant model that replies from the script."""
    return ScriptedChatModel(replies, report_usage=False)


Prepared = Callable[[], Any]
"""A zero-argument call that runs one whole agent run (everything built beforehand)."""


def prepare_explicit(steps: int) -> Prepared:
    agent = ExplicitReActAgent(model(text_script(steps)), [echo], max_iterations=steps + 1)
    return lambda: agent.invoke(QUESTION)


def prepare_classic(steps: int) -> Prepared:
    from langchain_classic.agents import AgentExecutor, create_react_agent
    from langchain_core.prompts import PromptTemplate

    agent = create_react_agent(
        model(text_script(steps)), [echo], PromptTemplate.from_template(HUB_REACT_PROMPT)
    )
    executor = AgentExecutor(agent=agent, tools=[echo], max_iterations=steps + 1)
    return lambda: executor.invoke({"input": QUESTION})


def prepare_langgraph(steps: int) -> Prepared:
    with warnings.catch_warnings():  # langgraph 1.x points to langchain.agents.create_agent
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

        graph = create_react_agent(model(tool_call_script(steps)), [echo])
    config = {"recursion_limit": 2 * steps + 10}
    return lambda: graph.invoke({"messages": [("user", QUESTION)]}, config)


def prepare_direct(steps: int) -> Prepared:
    """No framework: the same model and tool calls a framework must make, in a plain loop."""
    from langchain_core.messages import HumanMessage, SystemMessage

    chat = model(text_script(steps))
    messages = [SystemMessage("Use the tools."), HumanMessage(QUESTION)]

    def run() -> dict[str, str]:
        for _ in range(steps):
            reply = chat.invoke(messages, stop=["\nObservation:"])
            echo.run(str(reply.content).rsplit(" ", 1)[-1])
        final = chat.invoke(messages, stop=["\nObservation:"])
        return {"output": str(final.content).rsplit(": ", 1)[-1]}

    return run


DIRECT = "direct calls (no framework)"

FRAMEWORKS: dict[str, Callable[[int], Prepared]] = {
    DIRECT: prepare_direct,
    "explicit_react": prepare_explicit,
    "classic AgentExecutor": prepare_classic,
    "langgraph create_react_agent": prepare_langgraph,
}


def check(name: str, output: Any) -> None:
    """Each run must end with the scripted answer, or the timing means nothing."""
    text = output["output"] if "output" in output else output["messages"][-1].content
    if text != "done":
        raise RuntimeError(f"{name} did not finish the script: {output!r:.300}")


def timed(name: str, prepare: Callable[[int], Prepared], steps: int) -> float:
    """Seconds for one run of ``steps`` steps."""
    run = prepare(steps)
    gc.collect()
    began = time.perf_counter()
    output = run()
    seconds = time.perf_counter() - began
    check(name, output)
    return seconds


def measure(steps: int, repeats: int) -> dict[str, dict[str, Any]]:
    """Interleaved N-step and 0-step runs of every framework; medians and per-step cost."""
    names = list(FRAMEWORKS)
    for name in names:  # warm-up: imports, lazily built schemas
        timed(name, FRAMEWORKS[name], 1)
    samples: dict[str, dict[str, list[float]]] = {n: {"n": [], "zero": []} for n in names}
    for repeat in range(repeats):
        order = names[repeat % len(names) :] + names[: repeat % len(names)]
        for name in order:
            samples[name]["n"].append(timed(name, FRAMEWORKS[name], steps))
            samples[name]["zero"].append(timed(name, FRAMEWORKS[name], 0))
    results = {}
    for name in names:
        run_n, run_zero = median(samples[name]["n"]), median(samples[name]["zero"])
        results[name] = {
            "median_run_seconds": run_n,
            "median_zero_step_seconds": run_zero,
            "per_step_ms": (run_n - run_zero) / steps * 1000,
            "per_run_ms": run_zero * 1000,
            "samples": samples[name],
        }
    floor = results[DIRECT]["per_step_ms"]
    for result in results.values():
        result["overhead_per_step_ms"] = result["per_step_ms"] - floor
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="3 steps, 2 repeats (smoke test)")
    parser.add_argument("--out", type=Path, default=RESULTS / "overhead.json")
    args = parser.parse_args(argv)
    if args.quick:
        args.steps, args.repeats = 3, 2
    results = measure(args.steps, args.repeats)
    ours = results["explicit_react"]["overhead_per_step_ms"]
    rows = [
        [
            name,
            f"{r['per_step_ms']:.2f}",
            f"{r['overhead_per_step_ms']:.2f}" if name != DIRECT else "0 (the floor)",
            f"{r['per_run_ms']:.2f}",
            f"{r['median_run_seconds'] * 1000:.1f}",
            f"{ours / r['overhead_per_step_ms']:.2f}" if name not in (DIRECT, "explicit_react") else "",
        ]
        for name, r in results.items()
    ]
    print(f"Framework cost, instant model, {args.steps}-step runs, median of {args.repeats} (interleaved)\n")
    header = [
        "framework",
        "time per step (ms)",
        "overhead per step (ms)",
        "per run, 0 steps (ms)",
        f"{args.steps}-step run (ms)",
        "explicit_react overhead / this",
    ]
    print(table(header, rows))
    overhead = {name: r["overhead_per_step_ms"] for name, r in results.items()}
    summary = {
        "steps": args.steps,
        "repeats": args.repeats,
        "per_step_ms": {name: r["per_step_ms"] for name, r in results.items()},
        "overhead_per_step_ms": overhead,
        "ratio_to_classic": ours / overhead["classic AgentExecutor"],
        "ratio_to_langgraph": ours / overhead["langgraph create_react_agent"],
        "target_met": ours <= overhead["classic AgentExecutor"] / 5,
    }
    print(
        f"\nexplicit_react overhead per step / AgentExecutor's = {summary['ratio_to_classic']:.3f} "
        "(target <= 0.2)"
    )
    write_json(args.out, {"summary": summary, "results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
