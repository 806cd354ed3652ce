"""The web search tool: DuckDuckGo through ``ddgs``, with retries and a hard overall timeout."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForToolRun, CallbackManagerForToolRun
from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from explicit_react.deadline import acall_in_thread
from explicit_react.network import unreachable
from explicit_react.redaction import error_message
from explicit_react.tools._errors import Text, checked_query, tool_error, validation_error_observation

if TYPE_CHECKING:
    from ddgs.ddgs import DDGS

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


class _BadSetting(ValueError):
    """A setting of the tool that cannot work (an unknown ddgs engine): reported, not retried."""


class _UncertainNoResults(Exception):
    """ddgs found nothing, but some engine refused, or ddgs gave no way to tell: the empty answer
    comes with this note."""


class WebSearchTool(BaseTool):
    """Searches the web with DuckDuckGo (``ddgs``) and returns numbered title / URL / snippet results."""

    name: str = "web_search"
    description: str = "Search the web. Input: a search query. Returns titles, URLs and snippets."
    args_schema: type[BaseModel] = WebSearchInput
    handle_tool_error: bool = True
    handle_validation_error: Any = validation_error_observation

    max_results: int = Field(default=5, ge=1, le=50)
    ddgs_backend: str = Field(
        default="duckduckgo",
        min_length=1,
        description="ddgs engine(s), comma-separated: 'duckduckgo', or e.g. 'duckduckgo,brave', or 'auto'",
    )
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
        try:
            found = self._search_with_retries(query)
        except _UncertainNoResults as uncertain:
            return f"No web results for {query!r} ({uncertain})."
        results = _result_dicts(found)
        return format_results(query, results[: self.max_results])

    async def _arun(self, query: str, run_manager: AsyncCallbackManagerForToolRun | None = None) -> str:
        """``_run`` in a daemon thread of its own (``deadline.acall_in_thread``), not in the event
        loop's default executor: that one runs a few calls at once (6 on 2 CPUs), so 40 searches at
        once queued, and 22 of them took longer than their ``timeout``."""
        return await acall_in_thread(functools.partial(self._run, query), None)

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
                if unreachable(exc):  # offline, a retry fails the same way: say so at once
                    problem = f"cannot reach the search engine (no network?): {problem}"
                    break
            except TimeoutError:
                problem = f"no answer within {self.timeout:g}s"
                break
            except _UncertainNoResults:
                raise
            except _BadSetting as exc:
                raise tool_error(f"web search failed: {_first_line(str(exc))}") from None
            except Exception as exc:  # a broken backend: not worth retrying
                raise tool_error(f"web search failed: {_first_line(_describe(exc))}") from None
            if attempt < self.retries:
                if deadline - time.monotonic() <= backoff:
                    break  # no time left to wait: five tries in 5 ms at an engine that said 429 help no one
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
        # ddgs is imported here, not at the top: it is slow to import and not needed offline
        from ddgs.exceptions import DDGSException

        _check_ddgs_backend(self.ddgs_backend)
        client = _observed_ddgs_class()(timeout=max(1, int(remaining)))
        try:
            return client.text(
                query,
                region=self.region,
                safesearch=self.safesearch,
                timelimit=self.timelimit,
                max_results=self.max_results,
                backend=self.ddgs_backend,
            )
        except DDGSException as exc:  # the base of RatelimitException and TimeoutException
            if "no results found" not in str(exc).lower():
                raise
        # ddgs drops every answer but HTTP 200 and then says "No results found.": whether the
        # engines answered with nothing or refused (429, DuckDuckGo's 202 rate-limit page, 403, 5xx)
        # is told by the status codes the engines' HTTP clients saw during this call.
        statuses = getattr(client, "explicit_react_statuses", {})
        refusals = [
            f"{host} answered HTTP {status}{_REFUSAL_KINDS.get(status, '')}"
            for host, status in statuses.values()
            if status != 200
        ]
        if not statuses:
            raise _UncertainNoResults(
                "the search engine may have refused the request: ddgs reported no answers to check"
            )
        if len(refusals) == len(statuses):
            raise SearchUnavailable(_first_line("; ".join(refusals)))
        if refusals:
            raise _UncertainNoResults(
                _first_line(
                    f"{len(refusals)} of {len(statuses)} search engines refused the request: "
                    + "; ".join(refusals)
                )
            )
        return []


_REFUSAL_KINDS = {202: ", a rate limit", 429: ", a rate limit", 403: ", a block"}
"""DuckDuckGo answers a rate-limited request with 202 and a page without results; others with 429."""


def _check_ddgs_backend(backend: str) -> None:
    """An unknown engine name is an error: ddgs would only log it, and fall back to its metasearch
    when no name is left."""
    from ddgs.engines import ENGINES

    known = ENGINES["text"]
    unknown = [name for name in (part.strip() for part in backend.split(",")) if name not in known]
    unknown = [name for name in unknown if name not in ("auto", "all")]
    if unknown:
        raise _BadSetting(
            f"unknown ddgs backend {', '.join(map(repr, unknown))}; known: auto, {', '.join(sorted(known))}"
        )


@functools.cache
def _observed_ddgs_class() -> type[DDGS]:
    """A ``DDGS`` that records, per engine, the host and HTTP status of the last answer it got.

    Each search makes its own instance, whose engines (and their HTTP clients) are its own, so
    concurrent searches, in threads or under asyncio, never see each other's answers.
    """
    from ddgs.base import BaseSearchEngine
    from ddgs.ddgs import DDGS

    class ObservedDDGS(DDGS):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.explicit_react_statuses: dict[str, tuple[str, int]] = {}
            self._explicit_react_lock = threading.Lock()

        def _get_engines(self, category: str, backend: str) -> list[BaseSearchEngine[Any]]:
            engines = super()._get_engines(category, backend)
            for engine in engines:
                self._explicit_react_observe(engine)
            return engines

        def _explicit_react_observe(self, engine: BaseSearchEngine[Any]) -> None:
            http_client = engine.http_client
            if getattr(http_client, "explicit_react_observed", False):
                return
            send = http_client.request
            name = str(getattr(engine, "name", type(engine).__name__))

            def request(*args: Any, **kwargs: Any) -> Any:
                response = send(*args, **kwargs)
                status = getattr(response, "status_code", None)
                if isinstance(status, int):
                    url = str(kwargs.get("url", args[1] if len(args) > 1 else ""))
                    host = url.split("/")[2] if url.count("/") >= 2 else name
                    with self._explicit_react_lock:
                        self.explicit_react_statuses[name] = (host, status)
                return response

            setattr(http_client, "request", request)  # noqa: B010  (mypy: no assignment to a method)
            setattr(http_client, "explicit_react_observed", True)  # noqa: B010

    return ObservedDDGS


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
