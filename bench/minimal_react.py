"""A minimal ReAct loop: a BASELINE for the evaluations, not part of explicit_react.

About sixty lines with its own short prompt and no guardrails: no grammar, no loop detection, no
check of where a number came from, no answer at the limit, no retries. The reply is cut at
"Observation:"; a Final Answer ends the run; an Action runs its tool and the result is appended; a
reply with neither is taken as the answer. It shows what the model does on its own, so a
framework's score can be read against it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool

PROMPT = """Answer the question. You can use these tools:
{tools}

Use this format:
Thought: think about what to do
Action: the tool to use, one of [{names}]
Action Input: the input for the tool
Observation: the tool's result
(Thought, Action, Action Input and Observation can repeat)
Thought: I know the answer
Final Answer: the answer

Question: {question}
"""
_ACTION = re.compile(r"Action:\s*(?P<tool>[^\n]+?)\s*\nAction Input:\s*(?P<input>[^\n]*)")
_FINAL = re.compile(r"Final Answer:\s*(?P<answer>.*)", re.DOTALL)


def run_minimal(
    model: Any, tools: Sequence[BaseTool], question: str, max_iterations: int = 6, config: Any = None
) -> dict[str, Any]:
    """Answer ``question``: ``{"answer", "stop_reason", "steps"}``; each step a dict with ``log``,
    ``action``, ``input`` and ``observation``. ``config`` goes to every model call (callbacks)."""
    by_name = {tool.name: tool for tool in tools}
    descriptions = "\n".join(f"{tool.name}: {tool.description}" for tool in tools)
    transcript = PROMPT.format(tools=descriptions, names=", ".join(by_name), question=question)
    steps: list[dict[str, Any]] = []
    for _ in range(max_iterations):
        reply = model.invoke([HumanMessage(transcript)], stop=["\nObservation:"], config=config)
        text = str(reply.content).split("\nObservation:")[0].strip()
        action, final = _ACTION.search(text), _FINAL.search(text)
        if final and (action is None or final.start() < action.start()):
            return {"answer": final["answer"].strip(), "stop_reason": "success", "steps": steps}
        if action is None:
            return {"answer": text, "stop_reason": "no_action", "steps": steps}
        name, tool_input = action["tool"].strip(), action["input"].strip().strip('"')
        if name in by_name:
            try:
                observation = str(by_name[name].invoke(tool_input))
            except Exception as exc:  # a baseline: any tool failure becomes the observation
                observation = f"Error: {exc}"
        else:
            observation = f"Unknown tool {name!r}. Use one of: {', '.join(by_name)}."
        steps.append({"log": text, "action": name, "input": tool_input, "observation": observation})
        transcript += f"{text}\nObservation: {observation}\n"
    return {"answer": "", "stop_reason": "max_iterations", "steps": steps}
