"""Errors, sorted by who has to act on them.

- ``ParseError``: the *model* wrote something we cannot use. Its ``feedback`` is written for the
  model and becomes the next observation; the run goes on.
- ``ConfigurationError``: the *developer* set something up wrong (unknown tool type, bad option).
  Raised at construction time, never in the middle of a run.
- Nobody has to act when a run simply ends: that is an ``AgentResult`` with a ``StopReason``,
  not an exception.
"""

from __future__ import annotations


class ParseError(ValueError):
    """The model's reply could not be read as an action or a final answer.

    ``feedback`` tells the model what was wrong and shows the expected format; ``text`` is the
    reply that failed.
    """

    def __init__(self, feedback: str, text: str = "") -> None:
        super().__init__(feedback)
        self.feedback = feedback
        self.text = text


class ConfigurationError(ValueError):
    """The agent, a tool or a model was configured wrongly; the message says how to fix it."""


class ModelCallError(RuntimeError):
    """The model call failed after every retry, or timed out; ends the run with ``LLM_ERROR``."""


class PromptWarning(UserWarning):
    """A custom prompt leaves out something the model needs (the tools, the reply format)."""


_CALLBACK_DISPATCH = frozenset({"handle_event", "ahandle_event", "_ahandle_event_for_handler"})


def raised_by_callback_handler(error: BaseException) -> bool:
    """Whether ``error`` came out of a LangChain callback handler with ``raise_error=True``.

    Such an error stops the run, as it stops LangChain's own runs (a human-approval handler vetoes
    a tool call by raising in ``on_tool_start``); it is not a failed tool call for the model to
    read, nor a failed model call to retry. It is known by LangChain's event dispatch in its
    traceback."""
    trace = error.__traceback__
    while trace is not None:  # from the frame that caught it inwards
        code = trace.tb_frame.f_code
        if code.co_name in _CALLBACK_DISPATCH and code.co_filename.replace("\\", "/").endswith(
            "langchain_core/callbacks/manager.py"
        ):
            return True
        if code.co_name in _BODIES:  # raised inside the tool or the model: its own handlers, not ours
            return False
        trace = trace.tb_next
    return False


_BODIES = frozenset({"_run", "_arun", "_generate", "_agenerate", "_stream", "_astream", "_call", "_acall"})
"""The methods that hold a LangChain tool's or model's own work: a handler that raised below one was
the tool's own (a nested chain's), not one of the run's."""
