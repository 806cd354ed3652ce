"""Parsing time grows linearly with the reply, for every adversarial family of bench/parser_worst.py.

No wall-clock threshold: for each family the CPU time of this thread (other processes on a busy
machine do not count) at 20 KB is compared with the time at 2 KB. Linear growth gives about 10x;
quadratic gives 100x and cubic 1000x, so the bound of 35x leaves room for noise and still fails any
regression to the old backtracking patterns (those took 100x to 10,000x here). The larger size is
retried a few times and the best kept, so one preempted or cache-cold run does not fail the test.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
SMALL, LARGE = 2_000, 20_000
MAX_GROWTH = 35.0
TRIES = 5


def _load_bench() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("bench_parser_worst", BENCH / "parser_worst.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


worst = _load_bench()


def _cpu_seconds(family: str, text: str) -> float:
    start = time.thread_time()
    worst.parse_once(family, text)
    return time.thread_time() - start


@pytest.mark.parametrize("family", list(worst.families()))
def test_parsing_time_grows_linearly(family: str) -> None:
    build = worst.families()[family]
    small_text, large_text = build(SMALL), build(LARGE)
    worst.parse_once(family, small_text)  # warm the pattern caches
    small = min(_cpu_seconds(family, small_text) for _ in range(TRIES))
    small = max(small, 20e-6)  # below the resolution that matters; keeps the ratio meaningful
    ratios = []
    for _ in range(TRIES):
        ratios.append(_cpu_seconds(family, large_text) / small)
        if ratios[-1] <= MAX_GROWTH:
            return
    pytest.fail(f"{family}: 10x the text took {min(ratios):.0f}x the time (linear is about 10x)")
