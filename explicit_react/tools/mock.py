"""A deterministic offline search tool (tool name ``search``) for demos and tests."""

from __future__ import annotations

import re
from typing import Any

from langchain_core.callbacks import CallbackManagerForToolRun
from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from explicit_react.tools._errors import Text, tool_error, validation_error_observation

# (words that must all appear in the query, the answer). The first match wins, so the more
# specific entries come first ("population of Paris, France" is about Paris).
FACTS: tuple[tuple[frozenset[str], str], ...] = tuple(
    (frozenset(words.split()), answer)
    for words, answer in (
        ("capital france", "Paris is the capital of France and is known for the Eiffel Tower."),
        ("population paris", "The population of Paris is about 2100000."),
        ("population france", "The population of France is about 68000000."),
        ("capital germany", "Berlin is the capital of Germany."),
        ("capital japan", "Tokyo is the capital of Japan."),
        ("eiffel tower", "The Eiffel Tower in Paris is about 330 metres tall and was completed in 1889."),
        ("speed light", "The speed of light in vacuum is 299792458 metres per second."),
        ("boiling water", "Water boils at 100 degrees Celsius at sea level."),
        (
            "react",
            "ReAct (Reason + Act, Yao et al., 2022) is a prompting pattern in which a language model "
            "interleaves reasoning (Thought) with tool use (Action) and reads each result (Observation).",
        ),
        (
            "langchain",
            "LangChain is an open-source framework for building applications with language models, "
            "including agents that call tools.",
        ),
    )
)


def lookup(query: str) -> str:
    """Answer a query from the fixed fact table, or say there are no results."""
    words = set(re.findall(r"[a-z0-9]+", query.lower()))
    for keywords, answer in FACTS:
        if keywords <= words:
            return answer
    return f"No results for {query.strip()!r}."


class SearchQuery(BaseModel):
    """Arguments of a search tool."""

    query: Text = Field(description="what to search for")


class MockSearchTool(BaseTool):
    """Answers a handful of fixed questions (capital and population of France, ReAct ...) offline."""

    name: str = "search"
    description: str = "Search for facts about a topic. Input: a search query."
    args_schema: type[BaseModel] = SearchQuery
    handle_tool_error: bool = True
    handle_validation_error: Any = validation_error_observation

    def _run(self, query: str, run_manager: CallbackManagerForToolRun | None = None) -> str:
        if not query.strip():
            raise tool_error("empty query; say what to search for")
        return lookup(query)


mock_search = MockSearchTool()
"""A ready deterministic search tool instance (tool name ``search``)."""
