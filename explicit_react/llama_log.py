"""llama.cpp's own log lines: to the ``explicit_react.llama`` logger at DEBUG, also to stderr once a
model is built with ``verbose=True``, and first to a grammar check that is listening (llama.cpp says
there why it rejects a grammar).

Importing this module imports llama_cpp and installs that log callback in place of llama-cpp-python's
printer; ``explicit_react.llama`` imports it.
"""

from __future__ import annotations

import ctypes
import logging
import sys

import llama_cpp

from explicit_react.llama_grammar_check import hear

__all__ = ["echo_to_stderr", "logger"]

logger = logging.getLogger("explicit_react.llama")
"""Where llama.cpp's own log lines go, all at level DEBUG."""

_echo = False


def echo_to_stderr() -> None:
    """From now on, llama.cpp's log lines reach stderr too (a model built with ``verbose=True``)."""
    global _echo
    _echo = True


@llama_cpp.llama_log_callback
def _log_to_logger(_level: int, text: bytes, _user_data: ctypes.c_void_p) -> None:
    # Everything at DEBUG: llama.cpp logs routine lines as warnings, and a record at WARNING with no
    # handler configured would reach the terminal through logging's last-resort handler.
    line = text.decode("utf-8", errors="replace")
    if hear(line):  # why a grammar being checked is rejected
        return
    if _echo:
        sys.stderr.write(line)
    elif logger.isEnabledFor(logging.DEBUG):
        logger.debug(line.rstrip("\n"))


llama_cpp.llama_log_set(_log_to_logger, ctypes.c_void_p(0))  # replaces llama-cpp-python's printer
