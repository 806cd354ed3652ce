"""Checks the agent's constructor options, each against its allowed values, before anything is built.

Every check raises ``ConfigurationError`` naming the option, what it allows and what it got, so a
mistake (``tool_timeout="5"``, ``allowed_tools="search"``, one tool instead of a list) fails at
construction instead of turning every tool call into an error later.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from typing import Any, TypeVar

from explicit_react.errors import ConfigurationError

T = TypeVar("T")


def _got(value: Any) -> str:
    return f"got {value!r} ({type(value).__name__})"


class OptionError(ConfigurationError):
    """A number option out of its range: ``name`` (the constructor's argument), what it ``allows``,
    what ``None`` means for it (``none_means``, if it may be ``None``) and the ``value`` given. The
    ``explicit-react`` command words it with its own flag (``--max-iterations must be ...``)."""

    def __init__(self, name: str, allows: str, value: Any, none_means: str | None = None) -> None:
        self.name, self.allows, self.value, self.none_means = name, allows, value, none_means
        also = f", or None for {none_means}" if none_means is not None else ""
        super().__init__(f"{name} must be {allows}{also}; {_got(value)}")

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with its fields (an error raised in a worker process reaches its caller)."""
        return type(self), (self.name, self.allows, self.value, self.none_means)


def seconds(name: str, value: Any) -> float | None:
    """A duration in seconds greater than 0, or ``None`` for no limit; infinity means no limit too
    (``0`` and ``-1`` are refused: they do not mean "no limit" here)."""
    if value is None or (isinstance(value, float) and value == math.inf):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise OptionError(name, "a number of seconds greater than 0", value, "no limit")
    return float(value)


def count(name: str, value: Any, *, minimum: int, none_means: str | None = None) -> int | None:
    """A whole number of at least ``minimum``; ``None`` too when ``none_means`` says what it means."""
    if value is None and none_means is not None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise OptionError(name, f"a whole number of at least {minimum}", value, none_means)
    return value


def number(name: str, value: Any, *, minimum: float) -> float:
    """A number of at least ``minimum``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < minimum
    ):
        raise OptionError(name, f"a finite number of at least {minimum}", value)
    return float(value)


def choice(name: str, value: T, allowed: Collection[T]) -> T:
    """One of ``allowed``."""
    if value not in allowed:
        raise ConfigurationError(f"{name} must be one of {', '.join(map(repr, allowed))}; {_got(value)}")
    return value


def instance(name: str, value: Any, kinds: type | tuple[type, ...], what: str) -> Any:
    """``None`` or an instance of ``kinds``, which ``what`` describes to the developer."""
    if value is not None and not isinstance(value, kinds):
        raise ConfigurationError(f"{name} must be {what}, or None; {_got(value)}")
    return value


def flag(name: str, value: Any) -> bool:
    """``True`` or ``False``."""
    if not isinstance(value, bool):
        raise ConfigurationError(f"{name} must be True or False; {_got(value)}")
    return value


def tool_names(name: str, value: Any) -> frozenset[str] | None:
    """A collection of tool names (a set or list of strings), or ``None``; one string is refused,
    since it would be read as its characters."""
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Iterable) or isinstance(value, Mapping):
        hint = f" (write {name}=[{value!r}] for one tool)" if isinstance(value, str) else ""
        raise ConfigurationError(f"{name} must be a list or set of tool names, or None{hint}; {_got(value)}")
    names = list(value)
    if not all(isinstance(n, str) for n in names):
        raise ConfigurationError(f"{name} must hold tool names (strings); got {names!r}")
    return frozenset(names)


def tool_list(value: Any) -> list[Any]:
    """The ``tools`` argument as a list: any collection of tools (a list, a tuple, a toolkit's
    ``get_tools()``); one tool alone is refused with a message that says to wrap it in a list (a
    ``BaseTool`` is itself iterable, over its fields, so it must be caught first)."""
    from langchain_core.tools import BaseTool

    if isinstance(value, BaseTool) or (callable(value) and not isinstance(value, Iterable)):
        label = getattr(value, "name", None) or getattr(value, "__name__", type(value).__name__)
        raise ConfigurationError(
            f"tools must be a list of tools; got one tool, {label!r}: pass tools=[{label}]"
        )
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise ConfigurationError(
            f"tools must be a list of LangChain tools or functions, or None; {_got(value)}"
        )
    return list(value)


_LISTENER_METHODS = ("on_turn_start", "on_action", "on_step", "on_result")


def listeners(name: str, value: Any) -> list[Any]:
    """A list of run listeners, each with at least one of their methods; one listener alone is
    refused with a hint, as one tool is (``list()`` of it raised a bare TypeError, and a string
    was taken as its characters)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ConfigurationError(
            f"{name} must be a list of listeners (write {name}=[it] for one); {_got(value)}"
        )
    given = list(value)
    for listener in given:
        if not any(callable(getattr(listener, method, None)) for method in _LISTENER_METHODS):
            raise ConfigurationError(
                f"{name} must hold objects with any of {', '.join(_LISTENER_METHODS)}; {_got(listener)}"
            )
    return given
