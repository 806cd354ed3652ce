"""The deterministic mock search tool used by demos and tests."""

from __future__ import annotations

import asyncio

import pytest

from explicit_react.tools import mock_search


def test_tool_name_matches_the_seed_demo() -> None:
    assert mock_search.name == "search"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What is the capital of France?", "Paris is the capital of France"),
        ("population of France", "68000000"),
        ("population of Paris", "2100000"),
        ("Population of Paris, France", "2100000"),
        ("what is ReAct", "Reason + Act"),
        ("capital of Germany", "Berlin"),
    ],
)
def test_known_queries(query: str, expected: str) -> None:
    assert expected in mock_search.invoke(query)


def test_unknown_query_says_no_results() -> None:
    assert mock_search.invoke({"query": "capital of Italy"}) == "No results for 'capital of Italy'."


def test_word_matching_not_substring() -> None:
    assert mock_search.invoke("chemical reactions").startswith("No results")


def test_is_deterministic_and_async() -> None:
    first = mock_search.invoke("capital of France")
    assert asyncio.run(mock_search.ainvoke("capital of France")) == first


def test_empty_query_is_an_error_observation() -> None:
    assert mock_search.invoke("   ").startswith("Error: empty query")
