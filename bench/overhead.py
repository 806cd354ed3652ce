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

Before and after a change: ``--trees OLD,NEW`` measures the explicit_react of each source tree (a git
worktree of another commit, say) with this script, in fresh processes taking turns, ``--rounds``
times each, so machine load falls on both alike; it reports each tree's median per-step cost, its
overhead over the direct calls and its ratio to AgentExecutor's, measured in the same process:

    git worktree add --detach /tmp/before 6b4c7d8
    python bench/overhead.py --trees /tmp/before,. --rounds 4 --repeats 9
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.tools import tool

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HUB_REACT_PROMPT, RESULTS, load_average, median, run_in_trees, table, write_json

import explicit_react
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
SHORT_NAMES = dict(zip(("direct", "explicit_react", "classic", "langgraph"), FRAMEWORKS, strict=True))
"""The names ``--frameworks`` takes."""


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


def measure(steps: int, repeats: int, names: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Interleaved N-step and 0-step runs of the frameworks ``names`` (all by default; the direct
    calls always); medians and per-step cost."""
    names = [DIRECT, *(n for n in names or FRAMEWORKS if n != DIRECT)]
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
    parser.add_argument("--out", type=Path, default=None, help="default: results/overhead.json")
    parser.add_argument(
        "--frameworks", default=",".join(SHORT_NAMES), help=f"comma-separated: {', '.join(SHORT_NAMES)}"
    )
    parser.add_argument("--trees", help="OLD,NEW: source trees whose explicit_react to compare, interleaved")
    parser.add_argument("--rounds", type=int, default=4, help="with --trees: runs per tree")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.steps, args.repeats, args.rounds = 3, 2, 1
    names = [SHORT_NAMES[name.strip()] for name in args.frameworks.split(",")]
    if args.trees:
        return compare_trees(args, [Path(tree) for tree in args.trees.split(",")])
    results = measure(args.steps, args.repeats, names)
    if args.worker:
        per_step = {name: {k: v for k, v in r.items() if k != "samples"} for name, r in results.items()}
        print(json.dumps({"package": explicit_react.__file__, "results": per_step}))
        return 0
    args.out = args.out or RESULTS / "overhead.json"
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


def compare_trees(args: argparse.Namespace, trees: list[Path]) -> int:
    """``--trees``: each tree's explicit_react measured in turn (see the module's docstring)."""
    load_before = load_average()
    worker = [
        "--steps",
        str(args.steps),
        "--repeats",
        str(args.repeats),
        "--frameworks",
        "direct,explicit_react,classic",
    ]
    runs = run_in_trees(Path(__file__), trees, args.rounds, worker)
    load_after = load_average()
    summary: dict[str, dict[str, Any]] = {}
    for tree, rounds in runs.items():

        def each(
            key: str, name: str = "explicit_react", rounds: list[dict[str, Any]] = rounds
        ) -> list[float]:
            return [r["results"][name][key] for r in rounds]

        ratios = [
            r["results"]["explicit_react"]["overhead_per_step_ms"]
            / r["results"]["classic AgentExecutor"]["overhead_per_step_ms"]
            for r in rounds
        ]
        summary[tree] = {
            "commit": _commit(Path(tree)),
            "per_step_ms": median(each("per_step_ms")),
            "overhead_per_step_ms": median(each("overhead_per_step_ms")),
            "per_run_ms": median(each("per_run_ms")),
            "direct_per_step_ms": median(each("per_step_ms", DIRECT)),
            "ratio_to_classic": median(ratios),
            "rounds": {
                "per_step_ms": each("per_step_ms"),
                "overhead_per_step_ms": each("overhead_per_step_ms"),
                "direct_per_step_ms": each("per_step_ms", DIRECT),
                "ratio_to_classic": ratios,
            },
        }
    print(
        f"explicit_react per step, {args.steps}-step runs, median of {args.repeats} per process, "
        f"{args.rounds} processes per tree taking turns (load average {load_before} before, {load_after} after)\n"
    )
    header = [
        "tree",
        "commit",
        "time per step (ms)",
        "overhead per step (ms)",
        "per run (ms)",
        "/ AgentExecutor's overhead",
    ]
    rows = [
        [
            tree,
            s["commit"],
            f"{s['per_step_ms']:.3f}",
            f"{s['overhead_per_step_ms']:.3f}",
            f"{s['per_run_ms']:.3f}",
            f"{s['ratio_to_classic']:.3f}",
        ]
        for tree, s in summary.items()
    ]
    print(table(header, rows))
    first, last = summary[str(trees[0])], summary[str(trees[-1])]
    change = {
        key: last[key] / first[key] for key in ("per_step_ms", "overhead_per_step_ms", "ratio_to_classic")
    }
    print(
        f"\n{trees[-1]} / {trees[0]}: time per step {change['per_step_ms']:.3f}, "
        f"overhead per step {change['overhead_per_step_ms']:.3f}, ratio to AgentExecutor {change['ratio_to_classic']:.3f}"
    )
    out = args.out or RESULTS / "overhead_trees.json"
    write_json(
        out,
        {
            "load_average": [load_before, load_after],
            "steps": args.steps,
            "repeats": args.repeats,
            "rounds": args.rounds,
            "change": change,
            "trees": summary,
        },
    )
    return 0


def _commit(tree: Path) -> str:
    """The tree's commit, with ``+changes`` when its package differs from that commit."""

    def git(*command: str) -> str:
        done = subprocess.run(["git", "-C", str(tree), *command], capture_output=True, text=True, check=False)
        return done.stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "?"
    return commit + ("+changes" if git("status", "--porcelain", "--", "explicit_react") else "")


if __name__ == "__main__":
    sys.exit(main())
