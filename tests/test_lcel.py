"""docs/lcel.md runs: its Python blocks, in order, in one namespace (prompt values, pick, retrievers,
message history, fallbacks, LangGraph)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from tests.test_examples import python_blocks

LCEL = Path(__file__).resolve().parent.parent / "docs" / "lcel.md"


def test_the_lcel_page_runs() -> None:
    blocks = python_blocks(LCEL.read_text(encoding="utf-8"))
    assert len(blocks) >= 8
    namespace: dict[str, object] = {"__name__": "lcel"}
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", DeprecationWarning
        )  # RunnableWithMessageHistory is deprecated upstream
        for number, block in enumerate(blocks, 1):
            try:
                exec(compile(block, f"lcel.md block {number}", "exec"), namespace)
            except Exception as error:  # pragma: no cover - the message names the failing block
                pytest.fail(f"lcel.md block {number} failed: {error!r}\n{block}")
