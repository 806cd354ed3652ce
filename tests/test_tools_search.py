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

    def dropped(query: str, max_results: int) -> list[dict[str, Any]]:
        calls.append(query)
        raise ConnectionResetError("[Errno 104] Connection reset by peer")

    observation = WebSearchTool(backend=dropped, retries=1, timeout=5).invoke("anything")
    assert (
        observation
        == "Error: web search unavailable: ConnectionResetError: [Errno 104] Connection reset by peer"
    )
    assert len(calls) == 2


@pytest.mark.parametrize(
    "error",
    [
        ConnectionError("[Errno 101] Network is unreachable"),
        OSError("DNSError('error sending request > error resolving DNS > DNS error: no records found')"),
    ],
)
def test_no_network_is_reported_at_once_not_retried(error: OSError) -> None:
    """Offline, each retry failed the same way after its backoff (2.6 s with ddgs's DNS error)."""
    calls: list[str] = []

    def offline(query: str, max_results: int) -> list[dict[str, Any]]:
        calls.append(query)
        raise error

    observation = WebSearchTool(backend=offline, retries=2, timeout=5).invoke("anything")
    assert observation.startswith(
        "Error: web search unavailable: cannot reach the search engine (no network?): "
    )
    assert len(calls) == 1


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


# The real ddgs client, with its HTTP call replaced at the edge (``HttpClient.request``): what
# DuckDuckGo answers decides the observation.

DDG_PAGE = """<html><body>
<div class="result results_links web-result"><div class="links_main links_deep result__body">
<h2 class="result__title"><a class="result__a" href="https://en.wikipedia.org/wiki/Paris">Paris - Wikipedia</a></h2>
<a class="result__snippet" href="https://en.wikipedia.org/wiki/Paris">Paris is the capital of France.</a>
</div></div>
</body></html>"""
EMPTY_PAGE = "<html><body><div class='no-results'>No results.</div></body></html>"


class FakeResponse:
    def __init__(self, status: int, text: str = "") -> None:
        self.status_code = status
        self.text = text
        self.content = text.encode()


def fake_http(
    monkeypatch: pytest.MonkeyPatch, answer: Any, requests: list[tuple[str, str, dict[str, Any]]]
) -> None:
    """Replace ddgs's HTTP client call: ``answer(url, payload) -> FakeResponse``; every request is
    recorded as ``(method, url, payload)``."""
    from ddgs.http_client import HttpClient

    def request(self: Any, method: str, url: str, *args: Any, **kwargs: Any) -> FakeResponse:
        payload = dict(kwargs.get("data") or kwargs.get("params") or {})
        requests.append((method, url, payload))
        return answer(url, payload)

    monkeypatch.setattr(HttpClient, "request", request)


def _host(url: str) -> str:
    return url.split("/")[2]


def test_the_search_goes_to_duckduckgo_only_with_a_valid_region(monkeypatch: pytest.MonkeyPatch) -> None:
    requests: list[tuple[str, str, dict[str, Any]]] = []
    fake_http(monkeypatch, lambda url, payload: FakeResponse(200, DDG_PAGE), requests)
    observation = WebSearchTool(timeout=5).invoke("capital of France")
    assert observation == (
        "1. Paris - Wikipedia\n   https://en.wikipedia.org/wiki/Paris\n   Paris is the capital of France."
    )
    assert [(method, url) for method, url, _ in requests] == [("POST", "https://html.duckduckgo.com/html/")]
    assert requests[0][2]["q"] == "capital of France"
    assert requests[0][2]["l"] == "wt-wt"  # DuckDuckGo's "no region"


def test_other_ddgs_engines_are_opt_in(monkeypatch: pytest.MonkeyPatch) -> None:
    requests: list[tuple[str, str, dict[str, Any]]] = []
    fake_http(monkeypatch, lambda url, payload: FakeResponse(200, EMPTY_PAGE), requests)
    WebSearchTool(ddgs_backend="duckduckgo, mojeek", region="us-en", timeout=5).invoke("q")
    assert {_host(url) for _, url, _ in requests} == {"html.duckduckgo.com", "www.mojeek.com"}


def test_an_unknown_ddgs_backend_is_an_error_not_a_metasearch(monkeypatch: pytest.MonkeyPatch) -> None:
    requests: list[tuple[str, str, dict[str, Any]]] = []
    fake_http(monkeypatch, lambda url, payload: FakeResponse(200, EMPTY_PAGE), requests)
    observation = WebSearchTool(ddgs_backend="duckduckgoo", timeout=5).invoke("q")
    assert observation.startswith("Error: web search failed: unknown ddgs backend 'duckduckgoo'"), observation
    assert requests == []


def test_an_empty_answer_is_no_results_without_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    requests: list[tuple[str, str, dict[str, Any]]] = []
    fake_http(monkeypatch, lambda url, payload: FakeResponse(200, EMPTY_PAGE), requests)
    assert WebSearchTool(timeout=5).invoke("zzzz") == "No web results for 'zzzz'."
    assert len(requests) == 1


@pytest.mark.parametrize(
    ("status", "reason"),
    [(429, "HTTP 429"), (202, "HTTP 202"), (403, "HTTP 403"), (503, "HTTP 503")],
)
def test_a_refused_request_is_retried_then_reported_unavailable(
    monkeypatch: pytest.MonkeyPatch, status: int, reason: str
) -> None:
    """ddgs drops non-200 answers and then says "No results found."; the tool must not tell the
    model that the web has nothing."""
    requests: list[tuple[str, str, dict[str, Any]]] = []
    fake_http(monkeypatch, lambda url, payload: FakeResponse(status, "Too Many Requests"), requests)
    started = time.monotonic()
    observation = WebSearchTool(timeout=5, retries=1).invoke("capital of France")
    assert observation.startswith("Error: web search unavailable: "), observation
    assert f"html.duckduckgo.com answered {reason}" in observation
    assert len(requests) == 2  # retried once
    assert time.monotonic() - started >= 0.5  # after the documented backoff


def test_a_rate_limit_then_an_answer_gives_the_results(monkeypatch: pytest.MonkeyPatch) -> None:
    requests: list[tuple[str, str, dict[str, Any]]] = []

    def answer(url: str, payload: dict[str, Any]) -> FakeResponse:
        return FakeResponse(429, "Too Many Requests") if len(requests) == 1 else FakeResponse(200, DDG_PAGE)

    fake_http(monkeypatch, answer, requests)
    assert WebSearchTool(timeout=5).invoke("capital of France").startswith("1. Paris - Wikipedia")
    assert len(requests) == 2


def test_some_engines_refusing_is_said_with_the_empty_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    requests: list[tuple[str, str, dict[str, Any]]] = []

    def answer(url: str, payload: dict[str, Any]) -> FakeResponse:
        return FakeResponse(429) if "duckduckgo" in url else FakeResponse(200, EMPTY_PAGE)

    fake_http(monkeypatch, answer, requests)
    observation = WebSearchTool(ddgs_backend="duckduckgo,mojeek", region="us-en", retries=0).invoke("q")
    assert observation == (
        "No web results for 'q' (1 of 2 search engines refused the request: "
        "html.duckduckgo.com answered HTTP 429, a rate limit)."
    )


def test_concurrent_searches_do_not_mix_their_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    requests: list[tuple[str, str, dict[str, Any]]] = []
    both_arrived = threading.Barrier(2, timeout=5)

    def answer(url: str, payload: dict[str, Any]) -> FakeResponse:
        both_arrived.wait()  # both searches are in flight at once
        return FakeResponse(429) if payload["q"] == "refused" else FakeResponse(200, EMPTY_PAGE)

    fake_http(monkeypatch, answer, requests)
    tool = WebSearchTool(retries=0, timeout=5)

    async def both() -> list[str]:
        return list(await asyncio.gather(tool.ainvoke("refused"), tool.ainvoke("empty")))

    refused, empty = asyncio.run(both())
    assert refused.startswith("Error: web search unavailable: "), refused
    assert empty == "No web results for 'empty'."


def test_an_empty_answer_ddgs_says_nothing_about_is_not_passed_off_as_certain(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ddgs.ddgs import DDGS
    from ddgs.exceptions import DDGSException

    def no_results(self: Any, query: str, **kwargs: Any) -> list[dict[str, Any]]:
        raise DDGSException("No results found.")

    monkeypatch.setattr(DDGS, "text", no_results)
    observation = WebSearchTool(retries=0).invoke("q")
    assert observation.startswith("No web results for 'q' (the search engine may have refused the request")


def test_a_huge_error_message_is_cut() -> None:
    def broken(query: str, max_results: int) -> list[dict[str, Any]]:
        raise ValueError("x" * 100_000 + "\nsecond line")

    observation = WebSearchTool(backend=broken).invoke("q")
    assert observation.startswith("Error: web search failed: ValueError: xxx")
    assert len(observation) <= 330
    assert "second line" not in observation


def test_a_huge_error_from_ddgs_is_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    from ddgs.ddgs import DDGS

    def broken(self: Any, query: str, **kwargs: Any) -> list[dict[str, Any]]:
        raise ValueError("y" * 100_000)

    monkeypatch.setattr(DDGS, "text", broken)
    observation = WebSearchTool(retries=0).invoke("q")
    assert observation.startswith("Error: web search failed: ValueError: yyy")
    assert len(observation) <= 330


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
