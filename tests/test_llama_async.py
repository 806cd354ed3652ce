"""One ChatLlama shared by concurrent callers: calls take turns on the model's own thread, and a
caller waiting for its turn holds no thread of the event loop's executor.

ChatLlama held its lock across each ``yield`` of a streamed reply while LangChain ran each ``next()``
as a job of the loop's default executor: the waiting calls filled every executor thread and the
streaming call's next chunk found none. The scenarios run in a child process, so that a hang (and the
executor threads it leaves) fails the test instead of hanging pytest.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_cpp")

from langchain_core.messages import HumanMessage

from explicit_react import ExplicitReActAgent, StopReason
from explicit_react.llama import ChatLlama
from explicit_react.llm import has_native_async
from tests.test_llama import ScriptedLlama, StreamingLlama, joined

ROOT = Path(__file__).resolve().parents[1]

SCENARIO = textwrap.dedent(
    """
    import asyncio, concurrent.futures, sys
    from explicit_react.llama import ChatLlama

    class Client:
        def create_chat_completion(self, **request):
            parts = [{"delta": {"content": p}, "finish_reason": None} for p in ("a", "b", "c")]
            parts.append({"delta": {}, "finish_reason": "stop"})
            if request.get("stream"):
                return iter([{"choices": [p]} for p in parts])
            return {"choices": [{"message": {"content": "abc"}, "finish_reason": "stop"}]}

    async def main(which):
        loop = asyncio.get_running_loop()
        loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(2))  # as 2 cores give 6
        streams = {"streaming": True} if which == "streaming" else {}  # an explicit False: no astream
        model = ChatLlama(model_path="unused.gguf", client=Client(), **streams)
        if which == "streaming":  # N concurrent ainvoke that stream internally
            replies = await asyncio.gather(*(model.ainvoke("q") for _ in range(5)))
        else:  # one astream, and ainvoke calls arriving while it streams
            replies, others = [], []
            async for chunk in model.astream("q"):
                if not others:
                    others = [asyncio.ensure_future(model.ainvoke("q")) for _ in range(4)]
                    await asyncio.sleep(0.5)  # they wait for their turn while this reply streams
                replies.append(chunk)
            replies = [m.content for m in await asyncio.gather(*others)]
        print([getattr(r, "content", r) for r in replies])

    asyncio.run(main(sys.argv[1]))
    """
)


@pytest.mark.parametrize(
    ("which", "expected"),
    [("streaming", "['abc', 'abc', 'abc', 'abc', 'abc']"), ("astream", "['abc', 'abc', 'abc', 'abc']")],
)
def test_concurrent_async_calls_on_one_model_all_finish(which: str, expected: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCENARIO, which],
        capture_output=True,
        text=True,
        timeout=60,  # a hang guard: each scenario takes well under a second
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == expected


def test_a_paused_stream_does_not_block_another_caller() -> None:
    """A sync stream read one chunk and left: its reply is written on the model's thread, so another
    caller gets its turn (the paused generator held the lock until it was closed)."""
    model = ChatLlama(model_path="unused.gguf", client=StreamingLlama(["a", "b", "c"]))
    paused = model.stream("q")
    assert next(paused).content == "a"
    other: list[Any] = []
    thread = threading.Thread(target=lambda: other.append(model.invoke("q", stream=True)), daemon=True)
    thread.start()
    thread.join(60)  # a hang guard
    assert [m.content for m in other] == ["abc"]
    assert "".join(c.content for c in paused) == "bc"  # type: ignore[misc]


def test_a_chat_llama_is_natively_async_and_streams_in_order() -> None:
    model = ChatLlama(model_path="unused.gguf", client=StreamingLlama(["Thought: ", "I add", "."]))
    assert has_native_async(model)

    async def streamed() -> list[Any]:
        return [chunk async for chunk in model.astream([HumanMessage("q")])]

    chunks = asyncio.run(streamed())
    assert [chunk.content for chunk in chunks if chunk.content] == ["Thought: ", "I add", "."]
    assert joined(chunks).response_metadata["finish_reason"] == "stop"


def test_the_agent_runs_a_chat_llama_natively_async() -> None:
    client = ScriptedLlama(["Thought: I know it.\nFinal Answer: 4"])
    model = ChatLlama(model_path="unused.gguf", client=client)
    result = asyncio.run(ExplicitReActAgent(model, []).arun("2+2?"))
    assert (result.stop_reason, result.answer) == (StopReason.SUCCESS, "4")


def test_an_error_in_the_models_turn_reaches_the_caller() -> None:
    class FailingTwice(StreamingLlama):
        def create_chat_completion(self, **request: Any) -> Any:
            if len(self.requests) < 2:
                self.requests.append(request)
                raise RuntimeError("llama_decode returned -1")
            return super().create_chat_completion(**request)

    model = ChatLlama(model_path="unused.gguf", client=FailingTwice(["ok"]))
    with pytest.raises(RuntimeError, match="llama_decode"):
        list(model.stream("q"))
    with pytest.raises(RuntimeError, match="llama_decode"):
        asyncio.run(model.ainvoke("q", stream=True))
    assert model.invoke("q", stream=True).content == "ok"  # the model's turns go on


def test_a_job_whose_wait_is_cancelled_is_told_to_stop() -> None:
    from explicit_react.llama_worker import TurnTaker, in_turn

    turns = TurnTaker()
    started, seen = threading.Event(), threading.Event()

    def job(stopped: threading.Event) -> None:
        started.set()
        if stopped.wait(5):
            seen.set()

    async def main() -> None:
        task = asyncio.ensure_future(in_turn(turns, job))
        while not started.is_set():
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert seen.wait(5)  # the running job saw its stop signal, not its 5 s wait run out
