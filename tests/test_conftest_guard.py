"""The network guard itself: an attempt fails loudly even when the caller swallows the error."""

from __future__ import annotations

import socket

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
