"""The parser's pass rate on the shared corpus of real model outputs (bench/parser_corpus.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "parser_corpus.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("parser_corpus", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _bench()


@pytest.mark.skipif(
    not bench.DEFAULT_CORPUS.exists(),
    reason=f"parser corpus not found at {bench.DEFAULT_CORPUS} (it lives outside the repo, in ../shared)",
)
def test_parser_passes_at_least_95_percent_of_the_corpus() -> None:
    result = bench.score(bench.load(bench.DEFAULT_CORPUS), bench.run_ours)
    failed = [failure["id"] for failure in result["failures"]]
    assert result["total"] >= 190
    assert result["rate"] >= 0.95, f"failing cases: {failed}"


def test_scorer_rejects_a_wrong_parse() -> None:
    case = {"id": "x-1", "text": "", "expect": {"type": "action", "tool": "search", "input": {"q": 1}}}
    assert not bench.matches({"type": "action", "tool": "search", "input": {"q": 2}}, case["expect"])
    assert not bench.matches({"type": "error", "why": ""}, case["expect"])
    assert bench.matches({"type": "action", "tool": " search ", "input": '{"q": 1}'}, case["expect"])


def test_scorer_accepts_the_alt_in_the_note() -> None:
    case = {
        "id": "x-2",
        "expect": {"type": "action", "tool": "final_answer", "input": "7"},
        "note": 'framework tool. ALT: {"type": "final", "answer": "7"}',
    }
    assert [want["type"] for want in bench.acceptable(case)] == ["action", "final"]
