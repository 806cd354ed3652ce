"""explicit_react: an explicit, readable ReAct agent over LangChain models and tools."""
