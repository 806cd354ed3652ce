"""The web search tool: DuckDuckGo through ``ddgs``, with retries and a hard overall timeout."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForToolRun, CallbackManagerForToolRun
from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from explicit_react.redaction import error_message
from explicit_react.tools._errors import Text, checked_query, tool_error, validation_error_observation

SearchBackend = Callable[[str, int], list[dict[str, Any]]]
"""``(query, max_results) -> [{"title", "href", "body"}, ...]``: the shape ddgs returns."""

MAX_SNIPPET_CHARS = 300
MAX_TITLE_CHARS = 200
MAX_URL_CHARS = 500


class WebSearchInput(BaseModel):
    """Arguments of the web search tool."""

    query: Text = Field(description="what to search the web for")


class SearchUnavailable(Exception):
    """The search backend failed in a way worth retrying: rate limit, timeout, network error."""


class WebSearchTool(BaseTool):
    """Searches the web with DuckDuckGo (``ddgs``) and returns numbered title / URL / snippet results."""

    name: str = "web_search"
    description: str = "Search the web. Input: a search query. Returns titles, URLs and snippets."
    args_schema: type[BaseModel] = WebSearchInput
    handle_tool_error: bool = True
    handle_validation_error: Any = validation_error_observation

    max_results: int = Field(default=5, ge=1, le=50)
    region: str = "wt-wt"
    safesearch: Literal["on", "moderate", "off"] = "moderate"
    timelimit: Literal["d", "w", "m", "y"] | None = None
    timeout: float = Field(default=10.0, gt=0, description="seconds for the whole search, retries included")
    retries: int = Field(default=2, ge=0, description="extra attempts after a rate limit or network error")
    max_query_chars: int = Field(default=500, ge=1, description="longer queries are refused")
    backend: SearchBackend | None = Field(default=None, exclude=True)
    """Replaces ddgs (for tests and other engines): ``(query, max_results) -> list of result dicts``."""

    def _run(self, query: str, run_manager: CallbackManagerForToolRun | None = None) -> str:
        query = checked_query(query, self.max_query_chars, "search the web for")
        results = _result_dicts(self._search_with_retries(query))
        return format_results(query, results[: self.max_results])

    async def _arun(self, query: str, run_manager: AsyncCallbackManagerForToolRun | None = None) -> str:
        return await asyncio.to_thread(self._run, query)

    def _search_with_retries(self, query: str) -> list[dict[str, Any]]:
        deadline = time.monotonic() + self.timeout
        backoff = 0.5
        problem = "no attempt was made"
        for attempt in range(self.retries + 1):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                return _call_within(self._search_once, query, remaining)
            except SearchUnavailable as exc:
                problem = str(exc)
            except TimeoutError:
                problem = f"no answer within {self.timeout:g}s"
                break
            except Exception as exc:  # a broken backend: not worth retrying
                raise tool_error(f"web search failed: {_describe(exc)}") from None
            if attempt < self.retries and deadline - time.monotonic() > backoff:
                time.sleep(backoff)
                backoff *= 2
        raise tool_error(f"web search unavailable: {problem}")

    def _search_once(self, query: str, remaining: float) -> list[dict[str, Any]]:
        try:
            found = (
                self.backend(query, self.max_results) if self.backend else self._ddgs_search(query, remaining)
            )
        except Exception as exc:
            if not _is_transient(exc):
                raise
            raise SearchUnavailable(_first_line(_describe(exc))) from exc
        return found

    def _ddgs_search(self, query: str, remaining: float) -> list[dict[str, Any]]:
        from ddgs import DDGS  # imported here: ddgs is slow to import and not needed offline
        from ddgs.exceptions import DDGSException

        try:
            return DDGS(timeout=max(1, int(remaining))).text(
                query,
                region=self.region,
                safesearch=self.safesearch,
                timelimit=self.timelimit,
                max_results=self.max_results,
            )
        except DDGSException as exc:  # the base of RatelimitException and TimeoutException
            if "no results found" in str(exc).lower():
                return []
            raise


def _result_dicts(found: Any) -> list[dict[str, Any]]:
    """The backend's results, checked to be a list of dicts (what ddgs returns); anything else is an
    ``Error:`` observation, not an AttributeError while formatting."""
    if not isinstance(found, (list, tuple)) or not all(isinstance(result, Mapping) for result in found):
        raise tool_error(
            f"web search failed: the search backend returned {type(found).__name__}, not a list of results"
        )
    return [dict(result) for result in found]


def _is_transient(error: Exception) -> bool:
    """Rate limits, timeouts and network errors (ddgs's exceptions, OSError) are worth a retry.

    Matched by class name so that this check does not import ddgs.
    """
    return any(cls.__name__ in _TRANSIENT_ERRORS for cls in type(error).__mro__)


_TRANSIENT_ERRORS = frozenset({"DDGSException", "OSError", "TimeoutError"})


def _call_within(search: Callable[[str, float], list[dict[str, Any]]], query: str, seconds: float) -> Any:
    """Run one search attempt in a daemon thread and stop waiting for it after ``seconds``.

    ddgs's own timeout applies per request, not to the whole search, and an injected backend may
    have none: the thread guarantees the observation comes back in time. A thread left behind
    finishes (or fails) on its own; its result is dropped.
    """
    outcome: dict[str, Any] = {}

    def attempt() -> None:
        try:
            outcome["results"] = search(query, seconds)
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=attempt, name="web_search", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise TimeoutError
    error = outcome.get("error")
    if isinstance(error, Exception):
        raise error
    if error is not None:  # SystemExit or KeyboardInterrupt raised by the search code, not by the user
        raise RuntimeError(f"the search raised {_describe(error)}")
    return outcome["results"]


def format_results(query: str, results: list[dict[str, Any]]) -> str:
    """Number the results as title / URL / snippet lines."""
    if not results:
        return f"No web results for {query!r}."
    blocks = []
    for number, result in enumerate(results, start=1):
        title = _shortened(str(result.get("title") or "(no title)"), MAX_TITLE_CHARS)
        url = _shortened(str(result.get("href") or result.get("url") or ""), MAX_URL_CHARS)
        snippet = _shortened(str(result.get("body") or result.get("snippet") or ""), MAX_SNIPPET_CHARS)
        blocks.append("\n".join([f"{number}. {title}"] + [f"   {line}" for line in (url, snippet) if line]))
    return "\n".join(blocks)


def _shortened(text: str, max_chars: int) -> str:
    """``text`` on one line, cut to ``max_chars`` with "…" where it was longer."""
    text = " ".join(text[: max_chars * 4].split())
    return text if len(text) <= max_chars else text[: max_chars - 1].rstrip() + "…"


def _describe(error: BaseException) -> str:
    """``Type: message``, redacted, even for an exception whose ``str()`` itself fails."""
    message = error_message(error)
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:300] if text.strip() else text
