"""An existing LangChain ReAct app, switched to explicit_react by changing one import.

    - from langchain_classic.agents import AgentExecutor, create_react_agent
    + from explicit_react import AgentExecutor, create_react_agent

Offline by default (a scripted model); `python examples/langchain_swap.py gemini-2.5-flash`
or `... local` runs the same app on a real model.
"""

import sys

from langchain_core.prompts import PromptTemplate
from langchain_core.tools import tool

from explicit_react import AgentExecutor, create_react_agent  # the only line that changed

PROMPT = PromptTemplate.from_template("""Answer the following questions as best you can. \
You have access to the following tools:

{tools}

Use the following format:

Question: the input question you must answer
Thought: you should always think about what to do
Action: the action to take, should be one of [{tool_names}]
Action Input: the input to the action
Observation: the result of the action
... (this Thought/Action/Action Input/Observation can repeat N times)
Thought: I now know the final answer
Final Answer: the final answer to the original input question

Begin!

Question: {input}
Thought:{agent_scratchpad}""")


@tool
def search(query: str) -> str:
    """Look up a fact, e.g. 'capital of France'."""
    return {"capital of france": "Paris"}.get(query.strip().lower(), "no result")


def model():  # the app's model; a scripted one keeps the example offline
    from explicit_react.models import ConfigurationError, load_model
    from explicit_react.testing import ScriptedChatModel

    replies = ["I should look it up.\nAction: search\nAction Input: capital of France", "Final Answer: Paris"]
    try:
        return load_model(sys.argv[1]) if len(sys.argv) > 1 else ScriptedChatModel(replies)
    except ConfigurationError as error:  # no key, no such model: one line, no traceback
        sys.exit(str(error))


agent = create_react_agent(model(), [search], PROMPT)
executor = AgentExecutor(agent=agent, tools=[search], handle_parsing_errors=True, max_iterations=5)
print(executor.invoke({"input": "What is the capital of France?"})["output"])
