"""A model that continues a last assistant message (a local ChatLlama) gets the steps so far as its
own reply, and the question alone as the user message; every other model gets the usual layout."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from explicit_react import ExplicitReActAgent
from explicit_react.testing import ScriptedChatModel
from explicit_react.tools import calculator

REPLIES = [
    "Thought: I multiply.\nAction: calculator\nAction Input: 6 * 7",
    "Thought: I now know the final answer.\nFinal Answer: 42",
]


class ContinuingModel(ScriptedChatModel):
    """A scripted model that says it continues a last assistant message, as ChatLlama does."""

    @property
    def continues_replies(self) -> bool:
        return True


def test_the_steps_so_far_are_the_assistants_reply_to_continue() -> None:
    model = ContinuingModel(REPLIES)
    result = ExplicitReActAgent(model, [calculator]).run("What is 6 * 7?")
    assert result.answer == "42"
    first, second = (call.messages for call in model.calls)
    assert [type(m) for m in first] == [SystemMessage, HumanMessage]
    assert [type(m) for m in second] == [SystemMessage, HumanMessage, AIMessage]
    assert second[1].content == first[1].content  # the user message does not change between steps
    assert second[2].content == (
        "Thought: I multiply.\nAction: calculator\nAction Input: 6 * 7\nObservation: 42\n"
    )


def test_a_model_that_answers_messages_gets_the_scratchpad_in_the_user_message() -> None:
    model = ScriptedChatModel(REPLIES)
    ExplicitReActAgent(model, [calculator]).run("What is 6 * 7?")
    second = model.calls[1].messages
    assert [type(m) for m in second] == [SystemMessage, HumanMessage]
    assert "Observation: 42" in str(second[1].content)
