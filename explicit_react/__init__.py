"""explicit_react: an explicit, readable ReAct agent (Think → Act → Observe) over LangChain models and tools."""

from explicit_react.agent import ExplicitReActAgent
from explicit_react.compat import AgentExecutor, ReActOutputParser, create_react_agent
from explicit_react.errors import ConfigurationError, ParseError
from explicit_react.parser import parse
from explicit_react.qa import GeneralQAAgent
from explicit_react.types import Action, AgentResult, FinalAnswer, Step, StopReason, TokenUsage

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
