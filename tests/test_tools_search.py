"""The web search tool: formatting, retries, timeouts and the real offline path."""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
import time
from typing import Any

import pytest

from explicit_react.tools import WebSearchTool, default_tools

RESULTS = [
    {
        "title": "Paris - Wikipedia",
        "href": "https://en.wikipedia.org/wiki/Paris",
        "body": "Paris is the capital.",
    },
    {"title": "France", "href": "https://example.org/france", "body": "France   is a\ncountry."},
    {"title": "Third", "href": "https://example.org/3", "body": "third"},
]


def backend_returning(results: list[dict[str, Any]], calls: list[tuple[str, int]] | None = None) -> Any:
    def backend(query: str, max_results: int) -> list[dict[str, Any]]:
        if calls is not None:
            calls.append((query, max_results))
        return results

    return backend


def test_results_are_numbered_title_url_snippet() -> None:
    calls: list[tuple[str, int]] = []
    tool = WebSearchTool(backend=backend_returning(RESULTS, calls), max_results=2)
    observation = tool.invoke("capital of France")
    assert observation == (
        "1. Paris - Wikipedia\n   https://en.wikipedia.org/wiki/Paris\n   Paris is the capital.\n"
        "2. France\n   https://example.org/france\n   France is a country."
    )
    assert calls == [("capital of France", 2)]


def test_accepts_a_dict_and_runs_async() -> None:
    tool = WebSearchTool(backend=backend_returning(RESULTS))
    observation = asyncio.run(tool.ainvoke({"query": "paris"}))
    assert observation.startswith("1. Paris - Wikipedia")
    assert "3. Third" in observation


def test_no_results_is_a_plain_message() -> None:
    assert WebSearchTool(backend=backend_returning([])).invoke("zzzz") == "No web results for 'zzzz'."


def test_long_snippets_are_cut() -> None:
    tool = WebSearchTool(backend=backend_returning([{"title": "t", "href": "u", "body": "word " * 500}]))
    snippet_line = tool.invoke("q").splitlines()[2]
    assert len(snippet_line) < 320
    assert snippet_line.endswith("…")


def test_network_error_is_retried_then_reported() -> None:
    calls: list[str] = []

    def offline(query: str, max_results: int) -> list[dict[str, Any]]:
        calls.append(query)
        raise ConnectionError("[Errno 101] Network is unreachable")

    observation = WebSearchTool(backend=offline, retries=1, timeout=5).invoke("anything")
    assert observation == "Error: web search unavailable: ConnectionError: [Errno 101] Network is unreachable"
    assert len(calls) == 2


def test_rate_limit_is_retried_and_can_succeed() -> None:
    from ddgs.exceptions import RatelimitException

    calls: list[str] = []

    def flaky(query: str, max_results: int) -> list[dict[str, Any]]:
        calls.append(query)
        if len(calls) == 1:
            raise RatelimitException("202 Ratelimit")
        return RESULTS[:1]

    observation = WebSearchTool(backend=flaky, timeout=5).invoke("q")
    assert observation.startswith("1. Paris - Wikipedia")
    assert len(calls) == 2


def test_a_broken_backend_is_reported_without_retry() -> None:
    calls: list[str] = []

    def broken(query: str, max_results: int) -> list[dict[str, Any]]:
        calls.append(query)
        raise KeyError("title")

    observation = WebSearchTool(backend=broken).invoke("q")
    assert observation.startswith("Error: web search failed: KeyError")
    assert len(calls) == 1


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message")


@pytest.mark.parametrize(
    ("raised", "observation"),
    [
        (_Unprintable(), "Error: web search failed: _Unprintable: (its message could not be read)"),
        (OSError(), "Error: web search unavailable: OSError"),  # transient, retried, no message
        (SystemExit(3), "Error: web search failed: RuntimeError: the search raised SystemExit: 3"),
        (KeyboardInterrupt(), "Error: web search failed: RuntimeError: the search raised KeyboardInterrupt"),
    ],
)
def test_any_exception_from_the_search_is_an_observation(raised: BaseException, observation: str) -> None:
    def backend(query: str, max_results: int) -> list[dict[str, Any]]:
        raise raised

    assert WebSearchTool(backend=backend, retries=0).invoke("q") == observation


def test_long_titles_and_urls_are_cut() -> None:
    huge = [{"title": "T" * 200_000, "href": "https://x/" + "a" * 200_000, "body": "b"}]
    title, url, snippet = WebSearchTool(backend=backend_returning(huge)).invoke("q").splitlines()
    assert title == "1. " + "T" * 199 + "…"
    assert url == "   https://x/" + "a" * 489 + "…"
    assert snippet == "   b"


def test_a_hanging_backend_is_cut_off_at_the_timeout() -> None:
    release = threading.Event()

    def hangs(query: str, max_results: int) -> list[dict[str, Any]]:
        release.wait(10)
        return RESULTS

    started = time.monotonic()
    observation = WebSearchTool(backend=hangs, timeout=0.5).invoke("q")
    release.set()
    assert observation == "Error: web search unavailable: no answer within 0.5s"
    assert time.monotonic() - started < 1.5


def test_empty_query_is_an_error() -> None:
    assert WebSearchTool(backend=backend_returning(RESULTS)).invoke("  ").startswith("Error: empty query")


def _duckduckgo_reachable() -> bool:
    try:
        socket.create_connection(("duckduckgo.com", 443), timeout=2).close()
    except OSError:
        return False
    return True


@pytest.mark.real_network
def test_real_ddgs_client_with_no_network_reports_unavailable_within_the_timeout() -> None:
    if _duckduckgo_reachable():
        pytest.skip("the network is reachable here, so the offline path cannot be checked for real")
    tool = WebSearchTool(timeout=3, retries=1)
    started = time.monotonic()
    observation = tool.invoke("capital of France")
    elapsed = time.monotonic() - started
    assert observation.startswith("Error: web search unavailable: "), observation
    assert elapsed < 3 + 0.5


def test_importing_the_tools_does_not_import_the_search_libraries() -> None:
    import subprocess

    code = (
        "import sys, explicit_react.tools; "
        "print(*(name in sys.modules for name in ('ddgs', 'rank_bm25', 'snowballstemmer')))"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.split() == ["False", "False", "False"]


def test_default_tools_are_web_search_and_python() -> None:
    assert [tool.name for tool in default_tools()] == ["web_search", "python_repl"]
