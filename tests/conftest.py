"""Test-wide guards: no network. Any attempt to reach a non-local address fails the test.

The guard raises inside the code under test (so the attempt cannot succeed) and also records the
attempt, so a test still fails when the code under test swallows the error. It covers Python
sockets, and primp, the Rust HTTP client of ``ddgs``, which opens its own sockets: its clients are
replaced by ones that record and raise. As a last line for any other native client, the proxy
variables point at a closed loopback port, so a request that slips past both fails to connect
without a DNS lookup. A test that checks the
real behaviour with no network (the machine has none) opts in with ``@pytest.mark.real_network``.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from typing import Any

import primp
import pytest
from hypothesis import HealthCheck, settings

_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "", None}


class NetworkAccessInTests(RuntimeError):
    """Raised when code under test tries to reach the network."""


_attempts: list[str] = []


def _is_local(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    return host in _LOCAL_HOSTS or (isinstance(host, str) and host.startswith("127."))


def _blocked(what: str) -> NetworkAccessInTests:
    _attempts.append(what)
    return NetworkAccessInTests(f"network access in tests is not allowed: {what}")


_DEAD_PROXY = "http://127.0.0.1:9"  # the discard port: nothing listens there, the connection is refused
_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
_PRIMP_FUNCTIONS = ("request", "get", "head", "options", "delete", "post", "put", "patch")


def _url(args: tuple[Any, ...], kwargs: dict[str, Any], method: str) -> Any:
    """The URL of a primp call: ``request(method, url)`` or ``get(url)``."""
    position = 1 if method == "request" else 0
    return kwargs.get("url", args[position] if len(args) > position else None)


def _blocked_primp_call(name: str) -> Any:
    def blocked(*args: Any, **kwargs: Any) -> Any:
        raise _blocked(f"primp.{name}({_url(args, kwargs, name)!r})")

    return blocked


class _BlockedPrimpClient:
    """Stands in for ``primp.Client`` / ``AsyncClient``: built and configured like one (settings such
    as ``headers_update`` do nothing), every request is blocked."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        if name in _PRIMP_FUNCTIONS:
            return _blocked_primp_call(f"Client.{name}")
        return lambda *args, **kwargs: None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "real_network: let the test try the real (absent) network to check the offline path"
    )


@pytest.fixture(autouse=True)
def no_network(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Block and record every connection to a non-local address."""
    if request.node.get_closest_marker("real_network"):
        yield
        return
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_local(host):
            raise _blocked(f"getaddrinfo({host!r})")
        return real_getaddrinfo(host, *args, **kwargs)

    def guarded_connect(sock: socket.socket, address: Any) -> Any:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not _is_local(address[0]):
            raise _blocked(f"connect({address!r})")
        return real_connect(sock, address)

    def guarded_connect_ex(sock: socket.socket, address: Any) -> Any:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not _is_local(address[0]):
            raise _blocked(f"connect_ex({address!r})")
        return real_connect_ex(sock, address)

    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)
    monkeypatch.setattr(primp, "Client", _BlockedPrimpClient)
    monkeypatch.setattr(primp, "AsyncClient", _BlockedPrimpClient)
    for name in _PRIMP_FUNCTIONS:
        monkeypatch.setattr(primp, name, _blocked_primp_call(name))
    for variable in _PROXY_VARIABLES:
        monkeypatch.setenv(variable, _DEAD_PROXY)
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1,::1")
    monkeypatch.setenv("no_proxy", "localhost,127.0.0.1,::1")
    _attempts.clear()
    yield
    if _attempts:
        attempts = ", ".join(_attempts)
        _attempts.clear()
        pytest.fail(f"the test tried to use the network: {attempts}")


# Hypothesis: a fast, deterministic profile for the default suite (HYPOTHESIS_PROFILE=thorough for more).
settings.register_profile(
    "fast",
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough", max_examples=5_000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fast"))
