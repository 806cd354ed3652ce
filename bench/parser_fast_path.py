"""The parser's shortcut for a well-formed reply returns exactly what the full reading returns.

``parse`` first tries ``parser._well_formed``: a reply written exactly in the prompt's format (one
Thought line, then an Action line with a plain tool name and one Action Input line, or a Final
Answer) is read with one match. It must return what ``parse_in_full`` (every step of the parser)
returns for the same text, or ``None``. This script compares the two on:

- the parser corpus (real model outputs, ``../shared/parser-corpus``);
- the fuzz generator of ``bench/fuzz.py`` (random text, soups of format pieces, mutations of the
  corpus and of well-formed replies, adversarial families, deep nesting);
- near misses: well-formed replies built from values that hold labels, colons, fences, quotes, JSON,
  Unicode spaces and line breaks, Observation words, special tool names, then mutated;
- every string literal in ``tests/``.

Each text is read with no tool names and with the names of ``fuzz.TOOL_NAMES`` (a real tool called
``none`` or ``finish``). A difference is a failure (exit status 1). It also times both readings on the
replies the shortcut takes.

    python bench/parser_fast_path.py [--replies 200000] [--seed 0] [--quick] [--out PATH]
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, write_json
from fuzz import CORPUS, TOOL_NAMES, Replies

from explicit_react.errors import ParseError
from explicit_react.parser import _well_formed, parse_in_full

TESTS = Path(__file__).resolve().parents[1] / "tests"
TOOL_SETS: list[tuple[str, ...]] = [(), tuple(TOOL_NAMES)]
VALUES = [
    "", " ", "item 3", "2 + 2", '{"query": "x"}', "{'a': 1,}", "[1, 2]", '"quoted"', "'single", "https://a.b/c",
    "a: b", "Action: x", "Final Answer: 42", "final answer: 42", "Answer: 42", "Input: y", "Thought: z", "x Observation",
    "Observation", "observation:", "Obs", "```json\n{}\n```", "`x`", "<|im_end|>", "\r", "\u2028", "\x85", "\x1c",
    "\u3000", "\t", "**Action:**", "Action 1:", "tool(x)", "tool[x]", "x\nAction: y", "x\n\nmore", "：", "toolAction:",
    "I now know the final answer", "none", "Finish", "**bold**", "x" * 300,
]  # fmt: skip
TOOLS = [
    "lookup",
    "calculator",
    "a",
    "web-search",
    "web_search",
    "x_",
    "_x",
    "none",
    "Finish",
    "Final",
    "Input",
    "a.b",
]


def near_misses(rng: random.Random) -> Iterator[str]:
    """Replies in the prompt's format whose parts are drawn from values that could change the reading."""
    fuzz = Replies(rng)
    while True:
        thought, value = rng.choice(VALUES), rng.choice(VALUES)
        space = rng.choice(["", " ", "  ", "\t"])
        if rng.random() < 0.3:
            text = f"Thought:{space}{thought}\nFinal Answer:{space}{value}"
        else:
            tool = rng.choice(TOOLS)
            text = f"Thought:{space}{thought}\nAction:{space}{tool}{rng.choice(['', ' '])}\nAction Input:{space}{value}"
        text += rng.choice(["", "", "\n", " \n\n", "\nObservation:", "\n" + rng.choice(VALUES)])
        yield fuzz.mutate(text) if rng.random() < 0.3 else text


def test_strings() -> list[str]:
    """Every string literal in the test files."""
    strings = []
    for path in sorted(TESTS.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                strings.append(node.value)
    return strings


def full(text: str, tools: tuple[str, ...]) -> Any:
    """``parse_in_full``'s result, or the ``ParseError`` (or other exception) it raised, as a value."""
    try:
        return parse_in_full(text, tools=tools)
    except ParseError as exc:
        return ("ParseError", exc.feedback)
    except Exception as exc:  # a difference in what is raised is a difference too
        return (type(exc).__name__, str(exc))


def compare(
    source: str, texts: Iterator[str] | list[str], limit: int, counts: Counter[str], bad: list[Any]
) -> None:
    for number, text in enumerate(texts):
        if number >= limit:
            break
        quick = _well_formed(text)
        counts[f"{source}: texts"] += 1
        if quick is None:
            continue
        counts[f"{source}: read by the shortcut"] += 1
        for tools in TOOL_SETS:
            expected = full(text, tools)
            if quick != expected or type(quick) is not type(expected):
                counts[f"{source}: differences"] += 1
                if len(bad) < 10:
                    bad.append(
                        {"text": text, "tools": tools, "shortcut": repr(quick), "full": repr(expected)}
                    )


def timing(texts: list[str]) -> dict[str, float]:
    """Microseconds per reply, shortcut and full reading, over the texts the shortcut takes."""
    taken = [t for t in texts if _well_formed(t) is not None] or ["Thought: x\nAction: a\nAction Input: b"]
    result = {}
    for name, read in (("shortcut_us", _well_formed), ("full_us", parse_in_full)):
        best = float("inf")
        for _ in range(5):
            began = time.perf_counter()
            for text in taken:
                read(text)
            best = min(best, time.perf_counter() - began)
        result[name] = 1e6 * best / len(taken)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--replies", type=int, default=200_000, help="fuzzed replies (and as many near misses)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="5,000 of each")
    parser.add_argument("--out", type=Path, default=RESULTS / "parser_fast_path.json")
    args = parser.parse_args(argv)
    n = 5_000 if args.quick else args.replies
    rng = random.Random(args.seed)
    counts: Counter[str] = Counter()
    bad: list[Any] = []
    corpus = [
        json.loads(line)["text"] for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    compare("corpus", corpus, len(corpus), counts, bad)
    compare("tests' strings", test_strings(), 10**9, counts, bad)
    fuzz = Replies(rng)
    compare("fuzz generator", (fuzz.next()[1] for _ in iter(int, 1)), n, counts, bad)
    misses = near_misses(rng)
    compare("near misses", misses, n, counts, bad)
    sample = [next(misses) for _ in range(min(n, 2_000))] + corpus
    summary = {
        "seed": args.seed,
        "counts": dict(sorted(counts.items())),
        "differences": bad,
        **timing(sample),
    }
    for key, value in summary["counts"].items():
        print(f"{key:45s} {value:8d}")
    print(f"shortcut {summary['shortcut_us']:.1f} us per reply, full reading {summary['full_us']:.1f} us")
    for example in bad:
        print(json.dumps(example, ensure_ascii=False))
    write_json(args.out, summary)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
