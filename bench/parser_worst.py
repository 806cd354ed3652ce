"""Parsing time on adversarial replies: does every family grow linearly with the reply's size?

Each family builds a reply of a given size (1 KB, 10 KB, 100 KB, 1 MB) out of one kind of junk a
model can write: runs of backticks; runs of whitespace or punctuation on each label line; braces;
brackets; repeated labels; deep nesting; NUL bytes; very long single tokens. The time of one
``parse()`` (CPU time of this thread, the best of ``--repeats``, so a busy machine adds little) is
printed per size with the growth per 10x: about 10 is linear, 100 is quadratic. A family passes when
every 10x step grows by at most ``LINEAR_GROWTH``.

The ``invented observation`` family times ``llm.cut_invented_observation`` (the client-side cut
applied to every reply before parsing) instead of ``parse()``.

    python bench/parser_worst.py [--sizes 1000,10000,100000,1000000] [--repeats 3] [--quick] [--out PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable
from itertools import cycle, islice, pairwise
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, load_average, table, write_json

from explicit_react.errors import ParseError
from explicit_react.llm import cut_invented_observation
from explicit_react.parser import parse

SIZES = (1_000, 10_000, 100_000, 1_000_000)
QUICK_SIZES = (1_000, 10_000)
LINEAR_GROWTH = 20.0
"""The largest growth per 10x that still counts as linear (fixed costs and caches add some; quadratic is 100)."""

LABELS = ("Thought", "Action", "Action Input", "Final Answer", "Observation")
PUNCTUATION = ".,;:!?*_-'\"#>~|/\\=+"


def _repeat(unit: str, size: int) -> str:
    """``unit`` repeated up to ``size`` characters."""
    return (unit * (size // len(unit) + 1))[:size]


def _run(characters: str, size: int) -> str:
    return "".join(islice(cycle(characters), size))


def _on_label_line(label: str, junk: Callable[[int], str]) -> Callable[[int], str]:
    """A reply whose ``label`` line holds ``a``, the junk, then ``b`` (with the lines a parse needs)."""
    before = {
        "Thought": "",
        "Action": "",
        "Action Input": "Action: search\n",
        "Final Answer": "Thought: done\n",
        "Observation": "Action: search\nAction Input: x\n",
    }[label]
    after = {"Action": "\nAction Input: x"}.get(label, "")
    return lambda size: f"{before}{label}: a{junk(size)}b{after}"


def families() -> dict[str, Callable[[int], str]]:
    """Family name -> a function from a size in characters to a reply of about that size."""
    found: dict[str, Callable[[int], str]] = {
        "backticks": lambda size: "`" * size,
        "backticks as the input": lambda size: "Action: search\nAction Input: " + "`" * size,
        "backtick runs of growing length": lambda size: _growing_fences(size),
    }
    for label in LABELS:
        found[f"spaces and tabs on the {label} line"] = _on_label_line(label, lambda size: _run(" \t", size))
        found[f"punctuation on the {label} line"] = _on_label_line(
            label, lambda size: _run(PUNCTUATION, size)
        )
    found |= {
        "spaces before a call's parenthesis": lambda size: "Action: search" + " " * size + '(query="x")',
        "a call with many arguments": lambda size: "Action: search(" + _repeat("x=1,", size) + ")",
        "a call with a long sum": lambda size: "Action: search(" + _repeat("1+", size) + "1)",
        "open braces": lambda size: "{" * size,
        "open braces as the input": lambda size: "Action: search\nAction Input: " + "{" * size,
        "objects that never close": lambda size: _repeat('{"a"', size),
        "open brackets": lambda size: "[" * size,
        "brackets on the Action line": lambda size: "Action: search[" + "[" * size + "]",
        "brackets and braces as the input": lambda size: (
            "Action: search\nAction Input: " + _repeat("[{", size)
        ),
        "repeated Action lines": lambda size: _repeat("Action: search\n", size),
        "repeated labels on one line": lambda size: _repeat("Thought: Action: Action Input: ", size),
        "repeated Final Answer lines": lambda size: _repeat("Final Answer: x\n", size),
        "a Final Answer quoting label lines": lambda size: (
            "Final Answer: the format:\n" + _repeat("Question: q:\nThought: t\n", size)
        ),
        "repeated whole steps": lambda size: _repeat(
            "Thought: t\nAction: search\nAction Input: x\nObservation: o\n", size
        ),
        "deep nesting, unclosed": lambda size: _repeat('{"a":', size),
        "deep nesting, closed": lambda size: (
            "Action: search\nAction Input: " + "[" * (size // 2) + "]" * (size // 2)
        ),
        "deep nesting of objects, closed": lambda size: '{"a":' * (size // 6) + "1" + "}" * (size // 6),
        "NUL bytes": lambda size: "\0" * size,
        "NUL bytes as the input": lambda size: "Action: search\nAction Input: " + "\0" * size,
        "one long tool name": lambda size: "Action: " + "a" * size + "\nAction Input: x",
        "one long input word": lambda size: "Action: search\nAction Input: " + "a" * size,
        "one long quoted input": lambda size: "Action: search\nAction Input: {'q': '" + "a" * size + "'}",
        "one long final answer word": lambda size: "Final Answer: " + "a" * size,
        "spaces after a bare Observation": lambda size: "Action: search\nObservation" + " " * size + "x",
        "invented observation": lambda size: "Action: search\nObservation" + " " * size + "x",
    }
    return found


def _growing_fences(size: int) -> str:
    """Backtick runs of length 3, 4, 5, ... separated by a letter, up to ``size`` characters."""
    parts, total, length = [], 0, 3
    while total < size:
        parts.append("`" * length + "x")
        total += length + 1
        length += 1
    return "".join(parts)[:size]


def parse_once(family: str, text: str) -> None:
    """Parse (or, for the invented-observation family, cut) one reply; a ParseError is a result too."""
    if family == "invented observation":
        cut_invented_observation(text)
        return
    with contextlib.suppress(ParseError):
        parse(text)


def seconds(family: str, text: str, repeats: int) -> float:
    """The best CPU time of this thread over ``repeats`` parses (other processes do not count)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.thread_time()
        parse_once(family, text)
        best = min(best, time.thread_time() - start)
    return best


def growth(times: list[float]) -> list[float]:
    """The time ratio of each size to the previous one (sizes go up by 10x)."""
    return [later / max(earlier, 1e-6) for earlier, later in pairwise(times)]


def main(argv: list[str] | None = None) -> int:
    """Time every family at every size, print the table, write the JSON."""
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument(
        "--sizes", default=",".join(map(str, SIZES)), help="comma-separated sizes, 10x apart"
    )
    options.add_argument("--repeats", type=int, default=3)
    options.add_argument("--quick", action="store_true", help="1 KB and 10 KB, one repeat")
    options.add_argument("--out", type=Path, default=RESULTS / "parser_worst.json")
    args = options.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else tuple(int(size) for size in args.sizes.split(","))
    repeats = 1 if args.quick else args.repeats
    results = {}
    load_before = load_average()
    for family, build in families().items():
        times = [seconds(family, build(size), repeats) for size in sizes]
        steps = growth(times)
        results[family] = {
            "ms": [round(1000 * value, 3) for value in times],
            "growth_per_10x": [round(step, 1) for step in steps],
            "linear": all(step <= LINEAR_GROWTH for step in steps),
        }
        print(f"{family:45} " + " ".join(f"{1000 * value:9.2f}" for value in times), flush=True)
    header = ["family", *(f"{_size_name(size)} ms" for size in sizes), "growth per 10x", "linear"]
    rows = [
        [
            family,
            *result["ms"],
            " ".join(map(str, result["growth_per_10x"])),
            "yes" if result["linear"] else "NO",
        ]
        for family, result in results.items()
    ]
    print(table(header, rows))
    nonlinear = [family for family, result in results.items() if not result["linear"]]
    slowest_100k = (
        max((result["ms"][sizes.index(100_000)], family) for family, result in results.items())
        if 100_000 in sizes
        else None
    )
    summary = {"families": len(results), "nonlinear": nonlinear, "slowest_at_100kb_ms": slowest_100k}
    print(
        f"\n{len(results) - len(nonlinear)}/{len(results)} families grow linearly (<= {LINEAR_GROWTH}x per 10x)"
    )
    if slowest_100k:
        print(f"slowest at 100 KB: {slowest_100k[1]} ({slowest_100k[0]} ms)")
    write_json(
        args.out,
        {
            "sizes": list(sizes),
            "repeats": repeats,
            "linear_growth": LINEAR_GROWTH,
            "results": results,
            "summary": summary,
            "load_average": {"before": load_before, "after": load_average()},
        },
    )
    return 0


def _size_name(size: int) -> str:
    return (
        f"{size // 1_000_000} MB"
        if size >= 1_000_000
        else f"{size // 1000} KB"
        if size >= 1000
        else f"{size} B"
    )


if __name__ == "__main__":
    sys.exit(main())
