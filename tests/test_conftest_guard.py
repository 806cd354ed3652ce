"""The network guard itself: an attempt fails loudly even when the caller swallows the error."""

from __future__ import annotations

import os
import socket

import primp
import pytest

from tests.conftest import NetworkAccessInTests, _attempts


def test_connecting_to_a_remote_host_raises_and_is_recorded() -> None:
    with pytest.raises(NetworkAccessInTests):
        socket.create_connection(("example.com", 443), timeout=1)
    assert _attempts, "the attempt must be recorded so a swallowed error still fails the test"
    _attempts.clear()


def test_loopback_is_allowed() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.create_connection(server.getsockname(), timeout=1)
    client.close()
    server.close()


def test_ddgs_http_client_is_blocked_and_recorded() -> None:
    """ddgs talks HTTP through primp (Rust), which opens its own sockets, not Python's."""
    from ddgs import DDGS
    from ddgs.exceptions import DDGSException

    with pytest.raises((NetworkAccessInTests, DDGSException)):
        DDGS(timeout=2).text("explicit react", max_results=1, backend="duckduckgo")
    assert any("primp" in attempt for attempt in _attempts), _attempts
    _attempts.clear()


def test_the_web_search_tool_reaches_no_network() -> None:
    from explicit_react.tools import WebSearchTool

    observation = WebSearchTool(timeout=1, retries=0).invoke("explicit react")
    assert observation.startswith("Error:")
    assert any("primp" in attempt for attempt in _attempts), _attempts
    _attempts.clear()


def test_a_native_client_that_slips_past_the_patches_fails_to_connect() -> None:
    """The proxy variables are the last line: the unpatched Rust client goes to a closed loopback
    port (connection refused), never to DNS or the remote host."""
    from primp.primp import Client as UnpatchedClient

    assert os.environ["HTTPS_PROXY"] == "http://127.0.0.1:9"
    with pytest.raises(primp.ConnectError, match="Connection refused"):
        UnpatchedClient(timeout=5).get("https://example.invalid/")
