"""Checks a GBNF grammar with llama.cpp's own parser before any generation uses it.

llama-cpp-python 0.3's ``LlamaGrammar.from_string`` only stores the text. llama.cpp parses it when
sampling starts, and a grammar it rejects there gives a NULL sampler that is put into the sampler
chain anyway: the process dies (SIGSEGV) at the first token, with nothing to say why. So every
grammar ``ChatLlama`` uses (its tool-call grammar at ``bind_tools``, a ``grammar`` set on the model or
given to a call) is parsed here first by that same llama.cpp function, and a grammar it rejects is a
``ConfigurationError`` carrying llama.cpp's own reason.

Importing this module does not import llama_cpp.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import tempfile
import threading
from collections.abc import Callable
from functools import lru_cache
from typing import Any, TypeVar

from explicit_react.errors import ConfigurationError

__all__ = ["checked_grammar", "compiled_grammar", "grammar_problem", "hear"]

T = TypeVar("T")
_stderr_lock = threading.Lock()


class _Heard(threading.local):
    """The llama.cpp log lines written while this thread checks a grammar (``None``: not checking)."""

    lines: list[str] | None = None


_heard = _Heard()


def hear(text: str) -> bool:
    """Keep a llama.cpp log line written while this thread checks a grammar; True when it was kept.

    Some reasons (a left-recursive rule, no ``root`` rule) come through llama.cpp's log rather than
    its standard error; ``explicit_react.llama``'s log callback hands each line here first."""
    if _heard.lines is None:
        return False
    _heard.lines.append(text)
    return True


def grammar_problem(text: str, vocab: Any = None, root: str = "root") -> str | None:
    """Why llama.cpp rejects the grammar ``text``, or ``None`` when it accepts it.

    ``vocab``: the model's ``llama_vocab`` pointer, needed only by grammars that name tokens
    (``<think>``); without one llama.cpp checks everything else."""
    address = getattr(vocab, "value", vocab) or 0
    return _problem(text, root, int(address))


@lru_cache(maxsize=256)
def _problem(text: str, root: str, vocab: int) -> str | None:
    import llama_cpp

    def parse() -> Any:
        pointer = ctypes.c_void_p(vocab) if vocab else None
        return llama_cpp.llama_sampler_init_grammar(pointer, text.encode("utf-8"), root.encode("utf-8"))

    sampler, said = _with_stderr(parse)
    said = _given_back(said, text)
    if sampler:
        llama_cpp.llama_sampler_free(sampler)
        return None
    return _reason(said)


def _with_stderr(call: Callable[[], T]) -> tuple[T, str]:
    """``call()`` and what it wrote on the process's standard error (file descriptor 2).

    llama.cpp writes why it rejects a grammar there with ``fprintf``, not through its log callback;
    for the instant of the check, that descriptor is a temporary file (a file, not a pipe, which a
    long grammar echoed back would fill)."""
    with _stderr_lock, tempfile.TemporaryFile() as captured:
        if sys.stderr is not None:
            sys.stderr.flush()
        try:
            saved = os.dup(2)
        except OSError:  # no standard error at all (a daemon): nothing to read the reason from
            return call(), ""
        os.dup2(captured.fileno(), 2)
        _heard.lines = []
        try:
            result = call()
            logged = "".join(_heard.lines)
        finally:
            _heard.lines = None
            os.dup2(saved, 2)
            os.close(saved)
        captured.seek(0)
        return result, captured.read().decode("utf-8", errors="replace") + logged


def _given_back(captured: str, grammar: str) -> str:
    """llama.cpp's own lines of what was captured (its ``parse:`` error, the grammar it echoes, its
    ``failed to parse grammar``); any other line (another thread wrote to standard error during the
    check) is written to standard error after all, not lost and not taken for the reason."""
    echoed = {line.strip() for line in grammar.splitlines()}
    ours: list[str] = []
    others: list[str] = []
    for line in captured.splitlines(keepends=True):
        bare = line.strip()
        own = not bare or bare in echoed or bare.startswith(("parse: ", "failed to parse grammar", "llama_"))
        (ours if own else others).append(line)
    if others:
        with contextlib.suppress(OSError):
            os.write(2, "".join(others).encode("utf-8", errors="replace"))
    return "".join(ours)


def _reason(log: str) -> str:
    """llama.cpp's complaint, on one line: its error line, and where in the grammar it stopped."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line]
    if not errors:
        return lines[0] if lines else "llama.cpp could not parse it"
    first = errors[0].removeprefix("parse: ").removeprefix("error parsing grammar: ")
    following = lines[lines.index(errors[0]) + 1 :]
    where = next((line for line in following if "failed to parse" not in line), "")
    reason = f"{first} (in {where[:120]!r})" if where and where not in first else first
    return reason[:400]


def checked_grammar(grammar: Any, what: str, vocab: Any = None) -> Any:
    """``grammar`` (a ``llama_cpp.LlamaGrammar`` or GBNF text) as a ``LlamaGrammar`` that llama.cpp
    accepts; ``ConfigurationError`` naming ``what`` (for example "the grammar given to this call")
    and llama.cpp's reason otherwise."""
    from llama_cpp import LlamaGrammar

    text = grammar if isinstance(grammar, str) else getattr(grammar, "_grammar", None)
    if not isinstance(text, str):
        raise ConfigurationError(
            f"{what} is a {type(grammar).__name__}, not GBNF text or a llama_cpp.LlamaGrammar"
        )
    root = str(getattr(grammar, "_root", "root"))
    problem = grammar_problem(text, vocab, root)
    if problem is not None:
        raise ConfigurationError(f"llama.cpp rejects {what}: {problem}")
    return grammar if isinstance(grammar, LlamaGrammar) else LlamaGrammar.from_string(text, verbose=False)


@lru_cache(maxsize=64)
def compiled_grammar(gbnf: str) -> Any:
    """``gbnf`` as a ``llama_cpp.LlamaGrammar``, checked by llama.cpp once per distinct text (a grammar
    that names no tokens, as the tool-call grammars do); ``ConfigurationError`` when it is rejected."""
    return checked_grammar(gbnf, "the grammar")
