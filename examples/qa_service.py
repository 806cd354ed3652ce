"""A question-answering service: GeneralQAAgent.answer(query, context) returns a JSON-ready dict.

The context documents go into the prompt; the model reads them, computes with the calculator and
answers. Offline with a scripted model. Run: python examples/qa_service.py
"""

import json

from explicit_react import GeneralQAAgent
from explicit_react.testing import ScriptedChatModel
from explicit_react.tools import calculator

CONTEXT = [
    {"content": "Order #1042 contains 3 keyboards at 49.90 EUR each.", "source": "orders.csv"},
    {"content": "Shipping is free for orders above 100 EUR, otherwise 7.50 EUR.", "source": "shipping.md"},
]

REPLIES = [
    "Thought: Document 1 says 3 keyboards at 49.90 EUR. I compute the subtotal.\n"
    "Action: calculator\n"
    "Action Input: 3 * 49.90",
    "Thought: 149.70 EUR is above 100 EUR, so shipping is free (document 2).\n"
    "Final Answer: Order #1042 costs 149.70 EUR in total: 3 x 49.90 EUR, and shipping is free above 100 EUR.",
]

service = GeneralQAAgent(ScriptedChatModel(REPLIES), tools=[calculator], max_iterations=4)
response = service.answer("What does order #1042 cost in total, shipping included?", context=CONTEXT)
print(json.dumps(response, indent=2))
