"""The seed demo: France and Paris populations with a mock search and a calculator, offline.

The scripted model makes two classic mistakes on the way: it calls a tool that does not exist
(``google_search``) and it writes a JSON action that breaks off mid-object. Each mistake comes
back as an ``Error:`` observation, and the model recovers. Run: python examples/seed_demo.py
"""

from rich.console import Console

from explicit_react import ExplicitReActAgent
from explicit_react.display import TracePrinter
from explicit_react.testing import ScriptedChatModel
from explicit_react.tools import calculator, mock_search

QUESTION = "How many people in France live outside Paris?"

REPLIES = [
    # Mistake 1: a tool name the model made up.
    "Thought: I should look up the population of France.\n"
    "Action: google_search\n"
    "Action Input: population of France",
    "Thought: That tool does not exist; the search tool is called search.\n"
    "Action: search\n"
    "Action Input: population of France",
    "Thought: Now the population of Paris.\nAction: search\nAction Input: population of Paris",
    # Mistake 2: a JSON action that breaks off in the middle.
    'Thought: Now I subtract.\n{"action": "calculator", "action_input": {"expression": "68000000 -',
    "Thought: My last reply was cut off. I will use the labelled format.\n"
    "Action: calculator\n"
    'Action Input: {"expression": "68000000 - 2100000"}',
    "Thought: I now know the final answer.\n"
    "Final Answer: About 65,900,000 people in France live outside Paris (68.0 million - 2.1 million).",
]

model = ScriptedChatModel(REPLIES)
agent = ExplicitReActAgent(
    model,
    [mock_search, calculator],
    max_iterations=8,
    listeners=[TracePrinter(Console(highlight=False, soft_wrap=True))],  # the trace, on stdout
)
result = agent.run(QUESTION)

print(f"Stop reason: {result.stop_reason.value}")
print(f"Steps: {len(result.steps)}, errors recovered from: {sum(1 for s in result.steps if s.error)}")
print(f"Answer: {result.answer}")
model.assert_all_used()
