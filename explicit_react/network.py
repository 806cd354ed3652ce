"""Whether an error says a server cannot be reached at all (no network, no DNS, no route): the model
call (``llm.py``) and the web search (``tools/search.py``) then fail at once instead of retrying;
and whether it is a passing one, worth trying again (``is_transient``: the model call's retries, a
tool call the loop lets the model make once more)."""

from __future__ import annotations

import errno
import re
import socket

# How the text of a failed name lookup or a missing route reads, for errors that carry no cause.
_NO_ROUTE = re.compile(
    r"Name or service not known|nodename nor servname|Temporary failure in name resolution|"
    r"getaddrinfo failed|No address associated with hostname|Network is unreachable|error resolving DNS",
    re.IGNORECASE,
)


def unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` (or an error in its chain) says a server cannot be reached at all:
    its name did not resolve (``socket.gaierror``: no network, no DNS, a wrong host) or the network
    has no route (``ENETUNREACH``). Offline, such a call fails at once, every time, so it is not
    retried: a run ends with "cannot reach the model's server (no network?)" in seconds, and a web
    search says "cannot reach the search engine (no network?)" after one attempt."""
    seen: set[int] = set()
    error: BaseException | None = exc
    while error is not None and id(error) not in seen and len(seen) < 16:
        seen.add(id(error))
        if isinstance(error, socket.gaierror):
            return True
        if isinstance(error, OSError) and error.errno == errno.ENETUNREACH:
            return True
        try:
            if _NO_ROUTE.search(str(error)):
                return True
        except Exception:  # a library's broken __str__
            pass
        error = error.__cause__ or error.__context__
    return False


_TRANSIENT_NAMES = re.compile(
    r"RateLimit|ResourceExhausted|TooManyRequests|ServiceUnavailable|Unavailable|Timeout|TimedOut|"
    r"Connect|Overloaded|InternalServer|ServerError|DeadlineExceeded|Aborted|RemoteProtocol",
    re.IGNORECASE,
)


def is_transient(exc: BaseException) -> bool:
    """True for errors worth retrying: rate limits, timeouts, dropped connections, 5xx (the
    error's ``status_code`` or ``code``, or its HTTP response's: httpx, requests). A server that
    cannot be reached at all (``unreachable``) is not: a retry seconds later fails the same way."""
    if unreachable(exc):
        return False
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    status = getattr(exc, "status_code", None) or getattr(exc, "code", None)
    if not isinstance(status, int):
        status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(status, int) and (status == 429 or 500 <= status < 600):
        return True
    return any(_TRANSIENT_NAMES.search(cls.__name__) for cls in type(exc).__mro__)
