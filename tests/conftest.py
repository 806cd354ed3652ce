"""Test-wide guards: no network. Any attempt to reach a non-local address fails the test.

The guard raises inside the code under test (so the attempt cannot succeed) and also records the
attempt, so a test still fails when the code under test swallows the error. A test that checks the
real behaviour with no network (the machine has none) opts in with ``@pytest.mark.real_network``.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

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
    _attempts.clear()
    yield
    if _attempts:
        attempts = ", ".join(_attempts)
        _attempts.clear()
        pytest.fail(f"the test tried to use the network: {attempts}")
