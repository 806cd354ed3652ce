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

__all__ = ["echo_to_stderr", "logger", "raise_interrupt"]

logger = logging.getLogger("explicit_react.llama")
"""Where llama.cpp's own log lines go, all at level DEBUG."""

_echo = False


def echo_to_stderr() -> None:
    """From now on, llama.cpp's log lines reach stderr too (a model built with ``verbose=True``)."""
    global _echo
    _echo = True


_interrupt: KeyboardInterrupt | None = None
"""A Ctrl-C that came while llama.cpp was calling ``_log_to_logger`` (see ``raise_interrupt``)."""


def raise_interrupt() -> None:
    """Raise the Ctrl-C that came while llama.cpp was logging, if one did. ctypes drops an exception
    raised in a callback, and a model load logs hundreds of lines: a Ctrl-C that landed in one of
    them was lost, and the load, then the whole run, went on (``explicit-react`` exited 0)."""
    global _interrupt
    interrupt, _interrupt = _interrupt, None
    if interrupt is not None:
        raise interrupt


@llama_cpp.llama_log_callback
def _log_to_logger(_level: int, text: bytes, _user_data: ctypes.c_void_p) -> None:
    # Everything at DEBUG: llama.cpp logs routine lines as warnings, and a record at WARNING with no
    # handler configured would reach the terminal through logging's last-resort handler.
    global _interrupt
    try:
        line = text.decode("utf-8", errors="replace")
        if hear(line):  # why a grammar being checked is rejected
            return
        if _echo:
            sys.stderr.write(line)
        elif logger.isEnabledFor(logging.DEBUG):
            logger.debug(line.rstrip("\n"))
    except KeyboardInterrupt as interrupt:  # raised when llama.cpp's call returns (``raise_interrupt``)
        _interrupt = interrupt


llama_cpp.llama_log_set(_log_to_logger, ctypes.c_void_p(0))  # replaces llama-cpp-python's printer
