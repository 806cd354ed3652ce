"""Fuzz the parser and whole agent runs: nothing a model writes may raise anything but a ParseError.

Replies come from six generators: random Unicode text; soups of format pieces (labels, fences,
JSON, call syntax, control characters); mutations of the real model outputs of the parser corpus;
mutations of well-formed replies; the adversarial families of ``parser_worst.py`` at random sizes
up to 20 KB; and deeply nested JSON. Each is given to ``parse()``, which must return a well-formed
``Action`` or ``FinalAnswer`` (a stripped, non-empty tool name; a non-empty answer) or raise
``ParseError``; anything else is counted by exception type, with the first few replies kept.

Runs script a ``ScriptedChatModel`` with 1-6 fuzzed replies (sometimes a model exception in
between), give it real tools (the calculator; a tool that raises; a tool that returns odd values:
None, bytes, dicts, deep lists, 100 KB of text; a two-argument tool) and run it through
``ExplicitReActAgent.run``, ``arun`` and ``stream`` and the compat ``AgentExecutor.invoke`` and
``stream`` (``handle_parsing_errors=True``: with ``False`` the classic ``ValueError`` is the
documented behaviour). A run must return, with a ``StopReason`` and a string answer, and must not
call an empty answer a success.

    python bench/fuzz.py [--replies 100000] [--runs 10000] [--seed 0] [--quick] [--out PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, write_json
from langchain_core.tools import BaseTool, StructuredTool, tool
from parser_worst import families

from explicit_react import Action, ExplicitReActAgent, FinalAnswer, ParseError, StopReason, parse
from explicit_react.compat import AgentExecutor, create_react_agent
from explicit_react.testing import ScriptedChatModel
from explicit_react.tools import calculator
from explicit_react.types import Step

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "parser-corpus" / "corpus.jsonl"
NO_TOOL = {"", "none", "null", "n/a", "nothing"}
KEPT_EXAMPLES = 5
PIECES = [
    "Thought:", "Action:", "Action Input:", "Observation:", "Final Answer:", "Answer:", "Input:", "Tool:",
    "**Action 1:**", "action input :", "FINAL ANSWER:", "Obs", "Finish[", "Final Answer", "Action: Final Answer",
    "`", "```", "````", "```json\n", "{", "}", "[", "]", "(", ")", '"', "'", ":", ",", "=", "\\", "\\n",
    '{"action": "calculator", "action_input": ', '{"name": "calculator", "arguments": {"expression": "1+1"}}',
    '{"a": 1}', "[1, 2]", '["a"]', "[]", "{}", "True", "None", "null", "//", "/*", "*/", "calculator", "odd",
    "raises", "pair", "2 + 2", "1/0", "10**10**10", "calculator(expression='3*3')", "odd[x]",
    "\n", "\r\n", " ", "\t", "\x00", "\u00a0", "\u3000", "\u2028", "<|im_end|>", "<|eot_id|>", "x", "42", "query=",
]  # fmt: skip
TOOL_NAMES = ["calculator", "raises", "odd", "pair", "Final Answer", "Finish", "unknown_tool", "none", ""]


# -- Replies ---------------------------------------------------------------------------------------
class Replies:
    """Fuzzed model replies, reproducible from a seed."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.corpus = [
            json.loads(line)["text"]
            for line in CORPUS.read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]
        self.families = list(families().items())
        self.generators: list[tuple[str, Callable[[], str], float]] = [
            ("random text", self.random_text, 0.15),
            ("piece soup", self.soup, 0.25),
            ("corpus mutation", lambda: self.mutate(self.rng.choice(self.corpus)), 0.25),
            ("well-formed mutation", lambda: self.mutate(self.well_formed()), 0.2),
            ("well-formed", self.well_formed, 0.08),
            ("adversarial family", self.adversarial, 0.04),
            ("deep nesting", self.deep, 0.03),
        ]

    def next(self) -> tuple[str, str]:
        """A (generator name, reply) pair."""
        name, generate, _ = self.rng.choices(self.generators, [weight for *_, weight in self.generators])[0]
        return name, generate()

    def random_text(self) -> str:
        rng = self.rng
        alphabet = rng.choice(
            [
                None,  # any code point
                "`{}[]()\"':,\n \t*_#>-",
                "ab \n:",
                "\x00\x01\x1c\x85\u2028\ud800\ufeff",
            ]
        )
        size = rng.choice([rng.randint(0, 40), rng.randint(0, 400)])
        if alphabet is None:
            return "".join(chr(rng.randint(0, 0x10FFFF)) for _ in range(size))
        return "".join(rng.choice(alphabet) for _ in range(size))

    def soup(self) -> str:
        return "".join(self.rng.choice(PIECES) for _ in range(self.rng.randint(0, 30)))

    def well_formed(self) -> str:
        rng = self.rng
        thought = rng.choice(["", "Thought: I should compute it.\n", "I will use a tool.\n", "Thought:\n"])
        if rng.random() < 0.3:
            return (
                thought
                + "Final Answer: "
                + rng.choice(["42", "Paris", "", "the answer is {x}", "```\ncode\n```"])
            )
        name = rng.choice(TOOL_NAMES)
        value = rng.choice(
            [
                "2 + 2",
                '{"expression": "3 * 7"}',
                '{"a": "x", "b": 2}',
                "['a']",
                "[]",
                "",
                '"quoted"',
                "1/0",
                "x" * 50,
            ]
        )
        form = rng.randrange(5)
        if form == 0:
            return f"{thought}Action: {name}\nAction Input: {value}"
        if form == 1:
            return f"{thought}Action: {name}({value})"
        if form == 2:
            return f"{thought}Action: {name}[{value}]"
        if form == 3:
            return thought + json.dumps({"action": name, "action_input": value})
        return f"```\n{thought}Action: {name}\nAction Input: {value}\n```"

    def mutate(self, text: str) -> str:
        rng = self.rng
        for _ in range(rng.randint(1, 4)):
            position = rng.randint(0, len(text))
            end = min(len(text), position + rng.randint(0, 20))
            operation = rng.randrange(9)
            if operation == 0:
                text = text[:position] + text[end:]
            elif operation == 1:
                text = text[:position] + text[position:end] * rng.randint(2, 5) + text[end:]
            elif operation == 2:
                text = text[:position] + rng.choice(PIECES) + text[position:]
            elif operation == 3:
                text = (
                    text[:position] + rng.choice("`{[ \t*.\n:\"'") * rng.randint(10, 2000) + text[position:]
                )
            elif operation == 4:
                text = text[:position]
            elif operation == 5:
                text = text[:position] + text[position:end].swapcase() + text[end:]
            elif operation == 6:
                text = text[:position] + chr(rng.randint(0, 0x2FFF)) + text[end:]
            elif operation == 7:
                text = f"```{rng.choice(['', 'json', 'text'])}\n{text}\n```"
            else:
                text = text + "\n" + text[: rng.randint(0, len(text))]
        return text

    def adversarial(self) -> str:
        _, build = self.rng.choice(self.families)
        return build(self.rng.choice([100, 1_000, 5_000, 20_000]))

    def deep(self) -> str:
        depth = self.rng.choice([50, 99, 100, 101, 500, 999, 1000, 3000])
        opener = self.rng.choice(['{"a": ', "[", '{"action": "odd", "action_input": ' + "[" * 10])
        body = opener * depth + "1" + ("}" if opener.startswith("{") else "]") * depth
        return (
            self.rng.choice(["Action: odd\nAction Input: ", "Action: Final Answer\nAction Input: ", ""])
            + body
        )


def check_parse(text: str) -> str:
    """The outcome of parsing ``text``: ``action``, ``final``, ``parse_error``, or ``raised:<Type>`` /
    ``malformed:<what>``."""
    try:
        result = parse(text)
    except ParseError as error:
        return "parse_error" if error.feedback.strip() else "malformed:empty feedback"
    except Exception as error:  # the finding this script exists for
        return f"raised:{type(error).__name__}"
    if isinstance(result, Action):
        if result.tool != result.tool.strip() or result.tool.lower() in NO_TOOL:
            return "malformed:tool name"
        if not isinstance(result.tool_input, (str, dict, list)):
            return "malformed:tool input"
        return "action"
    if isinstance(result, FinalAnswer) and result.answer.strip():
        return "final"
    return "malformed:empty answer"


# -- Runs ------------------------------------------------------------------------------------------
class Boom(Exception):
    """A tool's own exception type."""


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


ODD_VALUES = [
    None,
    b"\xff\xfe bytes",
    {"a": {1, 2}},
    _nested(10),
    _nested(2000),
    "x" * 100_000,
    "",
    3.5,
    object(),
]


def make_tools() -> list[BaseTool]:
    """The calculator, a tool that raises, a tool that returns odd values, a two-argument tool.

    What ``raises`` and ``odd`` do depends on the length of their input, so a run repeats exactly.
    """

    @tool
    def raises(query: str) -> str:
        """Fails in one of several ways."""
        errors = [Boom("tool exploded"), ValueError("bad value"), KeyError("key"), RuntimeError("")]
        raise errors[len(query) % len(errors)]

    @tool
    def odd(query: str) -> Any:
        """Returns an odd value."""
        return ODD_VALUES[len(query) % len(ODD_VALUES)]

    def pair(first: str, second: int = 0) -> str:
        """Joins two arguments."""
        return f"{first}:{second}"

    return [calculator, raises, odd, StructuredTool.from_function(pair)]


ENTRY_POINTS = ("run", "arun", "stream", "compat.invoke", "compat.stream")


def run_once(entry: str, script: list[Any], tools: list[BaseTool]) -> str:
    """Run one scripted agent through ``entry``; the outcome (a stop reason, or ``raised:<Type>``)."""
    model = ScriptedChatModel(script, ignore_stop=True)
    try:
        if entry.startswith("compat."):
            executor = AgentExecutor(
                agent=create_react_agent(model, tools),
                tools=tools,
                max_iterations=4,
                handle_parsing_errors=True,
            )
            if entry == "compat.invoke":
                output = executor.invoke({"input": "q"})
            else:
                chunks = list(executor.stream({"input": "q"}))
                output = chunks[-1] if chunks else {}
            if not isinstance(output.get("output"), str):
                return "malformed:compat output"
            return "compat ok"
        agent = ExplicitReActAgent(
            model, tools, max_iterations=4, max_retries=0, tool_timeout=10, max_seconds=60
        )
        if entry == "run":
            result = agent.run("q")
        elif entry == "arun":
            result = asyncio.run(agent.arun("q"))
        else:  # each Step, then the AgentResult
            *steps, result = list(agent.stream("q"))
            if not all(isinstance(step, Step) and isinstance(step.observation, str) for step in steps):
                return "malformed:stream"
    except Exception as error:
        if any(type(reply) is type(error) and str(reply) == str(error) for reply in script):
            return "model exception passed on"  # AgentExecutor's classic contract; the agent stops instead
        return f"raised:{type(error).__name__}"
    if not isinstance(result.stop_reason, StopReason) or not isinstance(result.answer, str):
        return "malformed:result"
    if result.success and not result.answer.strip():
        return "malformed:empty answer counted as success"
    return str(result.stop_reason)


def minimal_script(entry: str, script: list[Any], tools: list[BaseTool], outcome: str) -> list[Any]:
    """The script without every reply the outcome does not need (one greedy pass)."""
    index = 0
    while index < len(script):
        shorter = script[:index] + script[index + 1 :]
        if shorter and run_once(entry, shorter, tools) == outcome:
            script = shorter
        else:
            index += 1
    return script


def script_for(replies: Replies) -> list[Any]:
    """1-6 fuzzed replies, sometimes a model exception, then enough final answers for any limit."""
    rng = replies.rng
    script: list[Any] = []
    for _ in range(rng.randint(1, 6)):
        if rng.random() < 0.05:
            script.append(
                rng.choice([RuntimeError("model down"), TimeoutError("slow"), ValueError("bad request")])
            )
        else:
            script.append(replies.next()[1])
    return script + ["Final Answer: done"] * 8


# -- Main ------------------------------------------------------------------------------------------
def _describe(value: Any) -> Any:
    text = repr(value)
    return text if len(text) <= 600 else text[:300] + f" ... ({len(text)} chars) ... " + text[-200:]


def fuzz_replies(count: int, replies: Replies) -> dict[str, Any]:
    """Parse ``count`` fuzzed replies; outcomes per generator, failures with examples, the slowest parse."""
    outcomes: Counter[str] = Counter()
    by_generator: dict[str, Counter[str]] = {}
    examples: dict[str, list[Any]] = {}
    slowest: list[tuple[float, str]] = []  # the five slowest single parses
    for _ in range(count):
        generator, text = replies.next()
        start = time.thread_time()  # CPU time: other processes on a busy machine do not count
        outcome = check_parse(text)
        elapsed = time.thread_time() - start
        slowest = sorted([*slowest, (elapsed, text)], key=lambda pair: -pair[0])[:5]
        outcomes[outcome] += 1
        by_generator.setdefault(generator, Counter())[outcome] += 1
        if (
            outcome.startswith(("raised", "malformed"))
            and len(examples.setdefault(outcome, [])) < KEPT_EXAMPLES
        ):
            examples[outcome].append(_describe(text))
    failed = sum(n for outcome, n in outcomes.items() if outcome.startswith(("raised", "malformed")))
    return {
        "replies": count,
        "failed": failed,
        "outcomes": dict(outcomes.most_common()),
        "by_generator": {name: dict(counter.most_common()) for name, counter in by_generator.items()},
        "examples": examples,
        "slowest_parses": [_remeasure(text) for _, text in slowest],
    }


def _remeasure(text: str) -> dict[str, Any]:
    """The best of three parse times (CPU ms) of a reply that was slow once, with its size."""
    best = float("inf")
    for _ in range(3):
        start = time.thread_time()
        check_parse(text)
        best = min(best, time.thread_time() - start)
    return {"ms": round(1000 * best, 2), "chars": len(text), "start": text[:60]}


def fuzz_runs(count: int, replies: Replies) -> dict[str, Any]:
    """``count`` scripted runs spread over the entry points; outcomes, failures with reproducers."""
    outcomes: dict[str, Counter[str]] = {entry: Counter() for entry in ENTRY_POINTS}
    examples: dict[str, list[Any]] = {}
    tools = make_tools()
    for index in range(count):
        entry = ENTRY_POINTS[index % len(ENTRY_POINTS)]
        script = script_for(replies)
        outcome = run_once(entry, script, tools)
        outcomes[entry][outcome] += 1
        if outcome.startswith(("raised", "malformed")):
            kept = examples.setdefault(f"{entry} {outcome}", [])
            if len(kept) < KEPT_EXAMPLES:
                smallest = minimal_script(entry, script, tools, outcome) if not kept else script
                kept.append({"script": [_describe(reply) for reply in smallest]})
    failed = sum(
        n
        for counter in outcomes.values()
        for o, n in counter.items()
        if o.startswith(("raised", "malformed"))
    )
    return {
        "runs": count,
        "failed": failed,
        "outcomes": {entry: dict(counter.most_common()) for entry, counter in outcomes.items()},
        "examples": examples,
    }


def main(argv: list[str] | None = None) -> int:
    """Fuzz replies and runs, print the counts, write the JSON."""
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--replies", type=int, default=100_000)
    options.add_argument("--runs", type=int, default=10_000)
    options.add_argument("--seed", type=int, default=0)
    options.add_argument("--quick", action="store_true", help="300 replies and 25 runs")
    options.add_argument("--out", type=Path, default=RESULTS / "fuzz.json")
    args = options.parse_args(argv)
    replies_count, runs_count = (300, 25) if args.quick else (args.replies, args.runs)
    replies = Replies(random.Random(args.seed))
    started = time.perf_counter()
    parsed = fuzz_replies(replies_count, replies)
    print(f"replies: {parsed['replies']} fuzzed, {parsed['failed']} raised or malformed", flush=True)
    print("  outcomes: " + ", ".join(f"{k} {v}" for k, v in parsed["outcomes"].items()), flush=True)
    worst = max(parsed["slowest_parses"], key=lambda parse: parse["ms"])
    print(f"  slowest parse (best of 3): {worst['ms']} ms ({worst['chars']} chars)", flush=True)
    try:
        runs = fuzz_runs(runs_count, replies)
    except Exception:  # a crash of the harness itself is a finding too; keep what was measured
        runs = {"runs": 0, "failed": None, "harness_error": traceback.format_exc()}
    print(f"runs: {runs['runs']} fuzzed, {runs['failed']} raised or malformed", flush=True)
    for entry, counter in runs.get("outcomes", {}).items():
        print(f"  {entry}: " + ", ".join(f"{k} {v}" for k, v in counter.items()))
    for kind, kept in {**parsed["examples"], **runs.get("examples", {})}.items():
        print(f"  example of {kind}: {kept[0]}")
    seconds = round(time.perf_counter() - started, 1)
    write_json(args.out, {"seed": args.seed, "seconds": seconds, "replies": parsed, "runs": runs})
    return 0


if __name__ == "__main__":
    sys.exit(main())
