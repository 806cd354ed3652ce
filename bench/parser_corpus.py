"""Score explicit_react.parse and LangChain's ReActSingleInputOutputParser on the parser corpus.

The corpus (198 real model outputs with the parse a user would want) and its scoring rules are in
``../shared/parser-corpus/README.md``. A result passes when it matches ``expect`` or the ``ALT`` at
the end of ``note``: same type; for an action the same tool and input (strings compared with
surrounding whitespace stripped); for a final answer the same answer (stripped); an expected
error must be a parse error.

Haystack 1.x cases are parsed with Haystack's labels (``Tool:``/``Tool Input:``), the
configurable-keyword feature they exist to test; LangChain's parser has no such option.

    python bench/parser_corpus.py [--corpus PATH] [--json PATH] [--failures]
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from explicit_react import parser as ours
from explicit_react.errors import ParseError
from explicit_react.types import Action

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "parser-corpus" / "corpus.jsonl"
_ALT = re.compile(r"ALT:\s*(\{.*\})\s*$", re.S)
_FENCE = re.compile(r"\A`{3,}\w*\s*(.*?)\s*`{3,}\Z", re.S)
_LABELS_BY_SOURCE = {"haystack": ours.Labels(action="Tool", action_input="Tool Input")}

Result = dict[str, Any]
"""A parse in the corpus schema: ``{"type": "action"|"final"|"error", ...}``."""


def load(path: Path) -> list[dict[str, Any]]:
    """The corpus entries."""
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def prefix(case: dict[str, Any]) -> str:
    """The source prefix of a case id (``lc``, ``lcjs``, ``li``, ...)."""
    return str(case["id"]).split("-", 1)[0]


def acceptable(case: dict[str, Any]) -> list[Result]:
    """``expect`` and, when the note ends with one, the ``ALT`` result."""
    results = [case["expect"]]
    alt = _ALT.search(case.get("note", ""))
    if alt:
        results.append(json.loads(alt[1]))
    return results


def _as_json(text: str) -> Any:
    """README rule 2 for a parser that returns JSON inputs as text: the JSON (in a fence, or a
    Python-literal dict) as a value; otherwise the text unchanged."""
    body = text.strip()
    fenced = _FENCE.match(body)
    body = fenced[1] if fenced else body
    try:
        return json.loads(body, strict=False)
    except ValueError:
        pass
    try:
        return ast.literal_eval(body)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return text


def _same_value(got: Any, want: Any) -> bool:
    if isinstance(got, str) and isinstance(want, str):
        return got.strip() == want.strip()
    if isinstance(got, str):
        return bool(_as_json(got) == want)
    return bool(got == want)


def matches(got: Result, want: Result) -> bool:
    """Whether a parse result meets one expected result (README scoring rules)."""
    if got["type"] != want["type"]:
        return False
    if want["type"] == "action":
        return _same_value(got["tool"], want["tool"]) and _same_value(got["input"], want["input"])
    if want["type"] == "final":
        return _same_value(got["answer"], want["answer"])
    return True


def run_ours(case: dict[str, Any]) -> Result:
    """Parse with explicit_react.parse."""
    labels = _LABELS_BY_SOURCE.get(prefix(case), ours.DEFAULT_LABELS)
    try:
        decision = ours.parse(case["text"], labels=labels)
    except ParseError as error:
        return {"type": "error", "why": error.feedback.splitlines()[0]}
    if isinstance(decision, Action):
        return {"type": "action", "tool": decision.tool, "input": decision.tool_input}
    return {"type": "final", "answer": decision.answer}


def run_langchain(case: dict[str, Any]) -> Result:
    """Parse with langchain_classic's ReActSingleInputOutputParser."""
    from langchain_classic.agents.output_parsers import ReActSingleInputOutputParser
    from langchain_core.agents import AgentAction
    from langchain_core.exceptions import OutputParserException

    try:
        decision = ReActSingleInputOutputParser().parse(case["text"])
    except OutputParserException as error:
        return {"type": "error", "why": str(error).splitlines()[0] if str(error) else ""}
    if isinstance(decision, AgentAction):
        return {"type": "action", "tool": decision.tool, "input": decision.tool_input}
    return {"type": "final", "answer": decision.return_values.get("output", "")}


def score(cases: Iterable[dict[str, Any]], run: Callable[[dict[str, Any]], Result]) -> dict[str, Any]:
    """Pass counts per source prefix, the overall rate, and the failures."""
    per_source: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    failures = []
    for case in cases:
        got = run(case)
        passed = any(matches(got, want) for want in acceptable(case))
        per_source[prefix(case)][0] += passed
        per_source[prefix(case)][1] += 1
        if not passed:
            failures.append({"id": case["id"], "got": got, "expect": case["expect"]})
    total = sum(count for _, count in per_source.values())
    passed_total = sum(passed for passed, _ in per_source.values())
    return {
        "passed": passed_total,
        "total": total,
        "rate": passed_total / total if total else 0.0,
        "per_source": {source: {"passed": p, "total": t} for source, (p, t) in sorted(per_source.items())},
        "failures": failures,
    }


def _table(results: dict[str, dict[str, Any]]) -> str:
    names = list(results)
    sources = sorted({source for result in results.values() for source in result["per_source"]})
    rows = [f"{'source':<10}" + "".join(f"{name:>16}" for name in names)]
    for source in sources:
        cells = []
        for name in names:
            counts = results[name]["per_source"].get(source, {"passed": 0, "total": 0})
            cells.append(f"{counts['passed']:>10}/{counts['total']:<5}")
        rows.append(f"{source:<10}" + "".join(cells))
    overall = [f"{r['passed']}/{r['total']} {r['rate']:.1%}" for r in results.values()]
    rows.append(f"{'overall':<10}" + "".join(f"{cell:>16}" for cell in overall))
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Score both parsers, print the table; optionally write JSON and list failures."""
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="path to corpus.jsonl")
    options.add_argument("--json", type=Path, help="write the scores as JSON to this path")
    options.add_argument("--failures", action="store_true", help="list the cases each parser fails")
    args = options.parse_args(argv)
    cases = load(args.corpus)
    results = {"explicit_react": score(cases, run_ours), "langchain": score(cases, run_langchain)}
    print(_table(results))
    if args.failures:
        for name, result in results.items():
            print(f"\n{name} failures ({len(result['failures'])}):")
            for failure in result["failures"]:
                print(f"  {failure['id']}\n    got:    {failure['got']}\n    expect: {failure['expect']}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
