"""Quickstart: one question, answered step by step.

With GOOGLE_API_KEY (or GEMINI_API_KEY) set, Gemini answers with real web search; without a key the
example runs offline with a scripted model and a mock search tool. Run: python examples/quickstart.py
"""

import os
import sys

from explicit_react import ExplicitReActAgent
from explicit_react.testing import ScriptedChatModel
from explicit_react.tools import WebSearchTool, calculator, mock_search

QUESTION = "What is the population of Paris divided by 1000?"

OFFLINE_REPLIES = [
    "Thought: I need the population of Paris.\nAction: search\nAction Input: population of Paris",
    "Thought: Now I divide it by 1000.\nAction: calculator\nAction Input: 2100000 / 1000",
    "Thought: I now know the final answer.\nFinal Answer: About 2100 (Paris has about 2,100,000 people).",
]


def pick_model_and_tools() -> tuple[object, list]:
    """Gemini and web search when a key is set, else the offline script and the mock search."""
    if os.environ.get("GOOGLE_API_KEY") or os.environ.get("GEMINI_API_KEY"):
        from explicit_react.models import load_model

        return load_model("gemini-2.5-flash"), [WebSearchTool(), calculator]
    print("No GOOGLE_API_KEY or GEMINI_API_KEY: using an offline scripted model.", file=sys.stderr)
    return ScriptedChatModel(OFFLINE_REPLIES), [mock_search, calculator]


llm, tools = pick_model_and_tools()
agent = ExplicitReActAgent(llm, tools, max_iterations=6, verbose=True)  # verbose: the trace on stderr
result = agent.run(QUESTION)

for number, step in enumerate(result.steps, 1):
    print(f"{number}. {step.action}({step.action_input!r}) -> {step.observation}")
print(f"Stop reason: {result.stop_reason.value}")
print(f"Answer: {result.answer}")
sys.exit(0 if result.success else 1)
