"""Built-in tools, each a LangChain BaseTool whose failures are observations starting with ``Error:``.

Importing this package is cheap and has no side effects: ddgs and rank_bm25 are imported only
when a search runs.
"""

from langchain_core.tools import BaseTool

from explicit_react.tools.calculator import CalculatorTool, calculator
from explicit_react.tools.files import file_tools
from explicit_react.tools.knowledge import KnowledgeBaseTool
from explicit_react.tools.mock import MockSearchTool, mock_search
from explicit_react.tools.python import PythonREPLTool
from explicit_react.tools.search import WebSearchTool


def default_tools() -> list[BaseTool]:
    """The toolset an agent gets when it is given ``tools=None``: web search and a Python REPL."""
    return [WebSearchTool(), PythonREPLTool()]


__all__ = [
    "CalculatorTool",
    "KnowledgeBaseTool",
    "MockSearchTool",
    "PythonREPLTool",
    "WebSearchTool",
    "calculator",
    "default_tools",
    "file_tools",
    "mock_search",
]
