"""The agent over HTTP with FastAPI: ``POST /invoke`` answers, ``POST /stream`` sends each step as it happens.

Request body: ``{"input": "...", "context": "", "max_iterations": 3, "max_seconds": 20, "allowed_tools": [...]}``;
everything but ``input`` is optional. A request may ask for a smaller budget than the server's caps
and a narrower tool allowlist than the server's tools, never for more: budgets above the cap are
cut to it, a tool the server does not have is a 422. ``/invoke`` returns ``AgentResult.to_dict()``
(a model that failed is a ``502`` when the agent is set to raise, ``on_llm_error="raise"``);
``/stream`` is a ``text/event-stream`` of ``step`` events (``Step.to_dict()``) and one ``result``
event (``AgentResult.to_dict()``), or an ``error`` event if the run raised.

Each request builds its own ``ExplicitReActAgent`` around the shared model and tools (cheap: the
budgets and the allowlist live in the agent) and runs it with ``arun``/``astream``, so one worker
process serves many requests at once while they wait on the model.

    python examples/http_service.py                 # offline demo: scripted model, FastAPI's TestClient, no port
    python examples/http_service.py --serve [--model NAME] [--port 8000]   # uvicorn on 127.0.0.1

Needs ``pip install explicit-react[serve]`` (FastAPI >= 0.135 for its server-sent events; uvicorn to serve).
"""

import argparse
import json
import sys
from collections.abc import AsyncIterator, Sequence
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException
from fastapi.sse import EventSourceResponse, ServerSentEvent
from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from explicit_react import ConfigurationError, ExplicitReActAgent, Step
from explicit_react.errors import ModelCallError
from explicit_react.redaction import error_message
from explicit_react.tools import calculator


class Ask(BaseModel):
    """One request: the question, its context, and the budget and tools it asks for."""

    input: str = Field(min_length=1, max_length=20_000, pattern=r"\S")  # some text, not only spaces
    context: str = Field(default="", max_length=200_000)
    max_iterations: int | None = Field(default=None, ge=1)
    max_seconds: float | None = Field(default=None, gt=0)
    allowed_tools: list[str] | None = None


def create_app(
    llm: Any,
    tools: Sequence[BaseTool],
    *,
    max_iterations: int = 6,
    max_seconds: float = 60.0,
    **agent_options: Any,
) -> FastAPI:
    """A FastAPI app that answers with an agent over ``llm`` and ``tools``, under these caps;
    ``agent_options`` go to every ``ExplicitReActAgent`` (e.g. ``llm_timeout``, ``trace_path``)."""
    app = FastAPI(title="explicit_react agent")

    def agent_for(ask: Ask) -> ExplicitReActAgent:
        try:
            return ExplicitReActAgent(
                llm,
                tools,
                max_iterations=min(ask.max_iterations or max_iterations, max_iterations),
                max_seconds=min(ask.max_seconds or max_seconds, max_seconds),
                allowed_tools=ask.allowed_tools,
                **agent_options,
            )
        except ConfigurationError as exc:  # e.g. a tool this server does not have
            raise HTTPException(status_code=422, detail=str(exc)) from None

    @app.post("/invoke")
    async def invoke(ask: Ask, agent: Annotated[ExplicitReActAgent, Depends(agent_for)]) -> dict[str, Any]:
        """Answer the question; the whole result, steps included."""
        try:
            result = await agent.arun(ask.input, ask.context)
        except ConfigurationError as exc:  # a request the agent refuses before it starts
            raise HTTPException(status_code=422, detail=str(exc)) from None
        except ModelCallError as exc:  # only with on_llm_error="raise"; else the result says llm_error
            raise HTTPException(status_code=502, detail=error_message(exc)) from None
        return result.to_dict()

    @app.post("/stream", response_class=EventSourceResponse)
    async def stream(
        ask: Ask, agent: Annotated[ExplicitReActAgent, Depends(agent_for)]
    ) -> AsyncIterator[ServerSentEvent]:
        """Each step as a ``step`` event as soon as its observation is in, then the ``result``."""
        try:
            async for item in agent.astream({"input": ask.input, "context": ask.context}):
                kind = "step" if isinstance(item, Step) else "result"
                yield ServerSentEvent(event=kind, data=item.to_dict())
        except Exception as exc:  # the response has started: the failure becomes the last event
            yield ServerSentEvent(
                event="error", data={"error": f"{type(exc).__name__}: {error_message(exc)}"}
            )

    return app


DEMO_REPLIES = [
    # POST /invoke
    "Thought: I multiply.\nAction: calculator\nAction Input: 3 * 49.90",
    "Thought: I have the product.\nFinal Answer: 3 keyboards cost 149.70 EUR.",
    # POST /stream
    "Thought: First the subtotal.\nAction: calculator\nAction Input: 2 * 19.99",
    "Thought: Now add shipping.\nAction: calculator\nAction Input: 39.98 + 7.50",
    "Thought: Done.\nFinal Answer: 47.48 EUR with shipping.",
]


def demo() -> None:
    """Offline: the app around a scripted model, called through FastAPI's TestClient (no port bound)."""
    from fastapi.testclient import TestClient

    from explicit_react.testing import ScriptedChatModel

    client = TestClient(create_app(ScriptedChatModel(DEMO_REPLIES), [calculator], max_iterations=4))

    reply = client.post("/invoke", json={"input": "What do 3 keyboards at 49.90 EUR cost?"})
    result = reply.json()
    print(f"POST /invoke -> {reply.status_code}: {result['answer']!r} after {len(result['steps'])} step(s)")

    print("POST /stream ->")
    body = {"input": "Two mice at 19.99 EUR plus 7.50 EUR shipping?", "max_iterations": 50}
    with client.stream("POST", "/stream", json=body) as events:
        for line in events.iter_lines():
            if line.startswith("event:"):
                print(f"  {line}")
            elif line.startswith("data:"):
                data = json.loads(line.removeprefix("data:"))
                print(f"    {data.get('observation', data.get('answer'))!r}")

    refused = client.post("/invoke", json={"input": "Rm -rf?", "allowed_tools": ["shell"]})
    print(f"POST /invoke with allowed_tools=['shell'] -> {refused.status_code}: {refused.json()['detail']}")


def serve(model: str | None, port: int) -> None:
    """Serve on 127.0.0.1 with uvicorn, the model ``load_model`` picks, the calculator and web search."""
    try:
        import uvicorn
    except ImportError:
        sys.exit('--serve needs uvicorn: pip install -e ".[serve]" (the demo without --serve does not)')

    from explicit_react.models import load_model
    from explicit_react.tools import WebSearchTool

    uvicorn.run(create_app(load_model(model), [calculator, WebSearchTool()]), host="127.0.0.1", port=port)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", action="store_true", help="bind a port with uvicorn instead of the demo")
    parser.add_argument("--model", default=None, help="model name for --serve (see explicit-react --help)")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    if args.serve:
        serve(args.model, args.port)
    else:
        demo()


if __name__ == "__main__":
    main()
