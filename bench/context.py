"""How big the prompt gets: the text sent to the model at each step of a 30-step run.

A scripted model makes ``--steps`` calls to a ``search`` tool that returns a ~600-character
passage each time (distinct inputs, so loop detection stays out of it), then answers. The model
records every prompt it receives; we report its size in characters (and ~tokens = chars / 4).

- explicit_react with compaction (the default, ``keep_recent_steps=6``: older steps are shown as
  one line each, the last six in full)
- explicit_react without compaction (``keep_recent_steps=None``)
- classic ``AgentExecutor`` with the hub ReAct prompt (its scratchpad keeps every step in full)

    python bench/context.py [--steps 30] [--quick] [--out PATH]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.tools import tool

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HUB_REACT_PROMPT, RESULTS, table, write_json

from explicit_react import ExplicitReActAgent
from explicit_react.testing import ScriptedChatModel

QUESTION = "Collect the facts about every topic."
PASSAGE = (
    "Topic {n}: the archive lists this item with a long description, several dates, a catalogue "
    "number and notes from three reviewers. "
) * 4


@tool
def search(query: str) -> str:
    """Search the archive."""
    return PASSAGE.format(n=query.strip())[:600]


def script(steps: int) -> list[str]:
    replies = [f"Thought: I need topic {i}.\nAction: search\nAction Input: {i}" for i in range(steps)]
    return [*replies, "Thought: I now know the final answer\nFinal Answer: done"]


def prompt_sizes(model: ScriptedChatModel) -> list[int]:
    """Characters of every prompt the model received, in order."""
    return [len(call.prompt) for call in model.calls]


def explicit(steps: int, keep_recent: int | None) -> list[int]:
    model = ScriptedChatModel(script(steps))
    agent = ExplicitReActAgent(model, [search], max_iterations=steps + 1, keep_recent_steps=keep_recent)
    result = agent.run(QUESTION)
    assert result.answer == "done", result
    return prompt_sizes(model)


def classic(steps: int) -> list[int]:
    from langchain_classic.agents import AgentExecutor, create_react_agent
    from langchain_core.prompts import PromptTemplate

    model = ScriptedChatModel(script(steps))
    agent = create_react_agent(model, [search], PromptTemplate.from_template(HUB_REACT_PROMPT))
    output = AgentExecutor(agent=agent, tools=[search], max_iterations=steps + 1).invoke({"input": QUESTION})
    assert output["output"] == "done", output
    return prompt_sizes(model)


RUNS: dict[str, Callable[[int], list[int]]] = {
    "explicit_react, compaction (keep_recent_steps=6)": lambda n: explicit(n, 6),
    "explicit_react, no compaction (keep_recent_steps=None)": lambda n: explicit(n, None),
    "classic AgentExecutor": classic,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="8 steps (smoke test)")
    parser.add_argument("--out", type=Path, default=RESULTS / "context.json")
    args = parser.parse_args(argv)
    if args.quick:
        args.steps = 8
    sizes = {name: run(args.steps) for name, run in RUNS.items()}
    # Call k (1-based) is the prompt for turn k, which holds k - 1 finished steps.
    shown = sorted({1, 2, 5, 7, 10, 15, 20, 25, args.steps, args.steps + 1} & set(range(1, args.steps + 2)))
    print(f"Prompt size (characters) at each model call of a {args.steps}-step run; ~600-char observations\n")
    rows: list[list[Any]] = [[name, *(s[k - 1] for k in shown), max(s)] for name, s in sizes.items()]
    print(table(["run", *(f"call {k}" for k in shown), "max"], rows))
    compacted = sizes[next(iter(RUNS))]
    tail = compacted[-10:]
    summary = {
        "steps": args.steps,
        "max_chars": {name: max(s) for name, s in sizes.items()},
        "max_tokens_approx": {name: max(s) // 4 for name, s in sizes.items()},
        "last_call_chars": {name: s[-1] for name, s in sizes.items()},
        "compacted_growth_per_step_last_10_calls": (tail[-1] - tail[0]) / max(len(tail) - 1, 1),
    }
    print(
        f"\nwith compaction the prompt grows {summary['compacted_growth_per_step_last_10_calls']:.1f} chars per "
        "step over the last 10 calls"
    )
    write_json(args.out, {"summary": summary, "prompt_chars_per_call": sizes})
    return 0


if __name__ == "__main__":
    sys.exit(main())
