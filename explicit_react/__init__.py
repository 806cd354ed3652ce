"""explicit_react: an explicit, readable ReAct agent (Think → Act → Observe) over LangChain models and tools.

The public names are loaded on first use, so ``import explicit_react`` (and ``explicit-react --help``)
does not pay for LangChain until an agent is needed.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from explicit_react.agent import ExplicitReActAgent
    from explicit_react.compat import AgentExecutor, ReActOutputParser, create_react_agent
    from explicit_react.errors import ConfigurationError, ParseError
    from explicit_react.parser import parse
    from explicit_react.qa import GeneralQAAgent
    from explicit_react.types import Action, AgentResult, FinalAnswer, Step, StopReason, TokenUsage

_HOMES = {
    "Action": "types",
    "AgentExecutor": "compat",
    "AgentResult": "types",
    "ConfigurationError": "errors",
    "ExplicitReActAgent": "agent",
    "FinalAnswer": "types",
    "GeneralQAAgent": "qa",
    "ParseError": "errors",
    "ReActOutputParser": "compat",
    "Step": "types",
    "StopReason": "types",
    "TokenUsage": "types",
    "create_react_agent": "compat",
    "parse": "parser",
}

__all__ = [
    "Action",
    "AgentExecutor",
    "AgentResult",
    "ConfigurationError",
    "ExplicitReActAgent",
    "FinalAnswer",
    "GeneralQAAgent",
    "ParseError",
    "ReActOutputParser",
    "Step",
    "StopReason",
    "TokenUsage",
    "create_react_agent",
    "parse",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'explicit_react' has no attribute {name!r}")
    value = getattr(import_module(f"explicit_react.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
