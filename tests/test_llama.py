"""ChatLlama's parts that need no model file: the prompt-cache reuse rule and the request it sends.

The real model (determinism, quiet logs, grammar, streaming) is tested in test_local_model.py.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("llama_cpp")

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from explicit_react.llama import ChatLlama, aligned_reuse


@pytest.mark.parametrize(
    ("previous", "prompt", "block", "expected"),
    [
        ([], [1, 2, 3], 2, 0),  # nothing cached
        ([1, 2, 3, 4, 5], [1, 2, 3, 4, 9, 9], 2, 4),  # shared 4: two whole blocks
        ([1, 2, 3, 4, 5], [1, 2, 3, 9, 9, 9], 2, 2),  # shared 3: cut back to one block
        ([1, 2, 3, 4], [1, 2, 3, 4], 2, 2),  # same prompt: one token must be read again
        ([1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6, 7], 4, 4),
        ([9, 2, 3], [1, 2, 3], 1, 0),  # differs at the first token
    ],
)
def test_reuse_is_the_shared_prefix_in_whole_blocks(
    previous: list[int], prompt: list[int], block: int, expected: int
) -> None:
    reused = aligned_reuse(previous, prompt, block)
    assert reused == expected
    assert reused % block == 0
    assert reused < len(prompt)


class RecordingLlama:
    """Stands in for llama_cpp.Llama: records create_chat_completion's arguments."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def create_chat_completion(self, **request: Any) -> Any:
        self.requests.append(request)
        if request.get("stream"):
            return iter([{"choices": [{"delta": {"content": part}}]} for part in ("Thought: ", "", "hi")])
        return {
            "choices": [{"message": {"content": "Final Answer: 4"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
        }


def test_a_call_sends_roles_settings_and_stop_and_reads_usage() -> None:
    client = RecordingLlama()
    model = ChatLlama(model_path="unused.gguf", client=client, max_tokens=32)

    reply = model.invoke(
        [SystemMessage("be brief"), HumanMessage("2+2?"), AIMessage("Thought: add")], stop=["\nObs"]
    )

    request = client.requests[-1]
    assert [m["role"] for m in request["messages"]] == ["system", "user", "assistant"]
    assert request["stop"] == ["\nObs"]
    assert (request["max_tokens"], request["temperature"], request["grammar"]) == (32, 0.0, None)
    assert reply.content == "Final Answer: 4"
    assert reply.usage_metadata == {"input_tokens": 11, "output_tokens": 3, "total_tokens": 14}


def test_bound_arguments_reach_llama_cpp() -> None:
    client = RecordingLlama()
    model = ChatLlama(model_path="unused.gguf", client=client)
    model.bind(grammar="G", stop=["X"]).invoke("hi")
    assert (client.requests[-1]["grammar"], client.requests[-1]["stop"]) == ("G", ["X"])


def test_streaming_yields_the_text_pieces() -> None:
    client = RecordingLlama()
    model = ChatLlama(model_path="unused.gguf", client=client)
    assert [chunk.content for chunk in model.stream("hi") if chunk.content] == ["Thought: ", "hi"]
    assert client.requests[-1]["stream"] is True
    streaming = ChatLlama(model_path="unused.gguf", client=client, streaming=True)
    assert streaming.invoke("hi").content == "Thought: hi"
