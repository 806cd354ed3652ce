"""ScriptedChatModel: a real LangChain chat model that replies from a script, for tests and demos.

Unlike ``FakeListChatModel`` it never cycles: a call past the end of the script raises
``ScriptExhausted``, so a loop that runs too long fails loudly. Every call is recorded.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import PrivateAttr

Reply = str | AIMessage | BaseException


class ScriptExhausted(AssertionError):
    """The model was called more often than its script has replies."""


@dataclass(frozen=True)
class ScriptedCall:
    """One call the model received: the messages and the stop sequences."""

    messages: list[BaseMessage]
    stop: list[str] | None

    @property
    def prompt(self) -> str:
        """All message contents joined, for easy assertions."""
        return "\n".join(str(m.content) for m in self.messages)


class ScriptedChatModel(BaseChatModel):
    """Replies with ``replies`` in order; an ``Exception`` in the script is raised instead.

    - ``ignore_stop=True`` returns replies uncut even when stop sequences are given, as many
      real models do; otherwise a reply is cut at the first stop sequence, like a provider would.
    - ``report_usage=True`` attaches ``usage_metadata`` (one token per whitespace-separated word).
    - ``delay`` sleeps that many seconds per call (``asyncio.sleep`` in async calls).
    """

    replies: list[Any]
    ignore_stop: bool = False
    report_usage: bool = True
    delay: float = 0.0

    _bound_tools: list[Any] = PrivateAttr(default_factory=list)
    _index: int = PrivateAttr(default=0)
    _calls: list[ScriptedCall] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, replies: Iterable[Reply] | None = None, /, **kwargs: Any) -> None:
        if replies is not None:
            kwargs["replies"] = list(replies)
        super().__init__(**kwargs)

    @classmethod
    def from_file(cls, path: str | Path, **kwargs: Any) -> ScriptedChatModel:
        """Load replies from a file: a JSON list of strings, or text blocks separated by ``---`` lines."""
        text = Path(path).read_text(encoding="utf-8")
        if Path(path).suffix == ".json":
            replies = json.loads(text)
            if not isinstance(replies, list) or not all(isinstance(r, str) for r in replies):
                raise ValueError(f"{path}: expected a JSON list of strings")
        else:
            blocks: list[str] = []
            current: list[str] = []
            for line in text.splitlines():
                if line.strip() == "---":
                    blocks.append("\n".join(current).strip())
                    current = []
                else:
                    current.append(line)
            blocks.append("\n".join(current).strip())
            replies = [b for b in blocks if b]
        return cls(replies, **kwargs)

    @property
    def _llm_type(self) -> str:
        return "scripted-chat-model"

    @property
    def calls(self) -> list[ScriptedCall]:
        """Every call received so far, in order."""
        return list(self._calls)

    @property
    def bound_tools(self) -> list[Any]:
        """The tools passed to the last ``bind_tools`` call."""
        return list(self._bound_tools)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        """Accept tools for native tool calling; replies with ``tool_calls`` come from the script."""
        self._bound_tools = list(tools)
        return self

    @property
    def remaining(self) -> int:
        """How many scripted replies have not been used yet."""
        return len(self.replies) - self._index

    def assert_all_used(self) -> None:
        """Raise ``AssertionError`` unless every scripted reply was used."""
        if self.remaining:
            raise AssertionError(f"{self.remaining} scripted replies were never used")

    def _next(self, messages: Sequence[BaseMessage], stop: list[str] | None) -> ChatResult:
        with self._lock:
            self._calls.append(ScriptedCall(list(messages), stop))
            if self._index >= len(self.replies):
                raise ScriptExhausted(
                    f"ScriptedChatModel was called {self._index + 1} times but its script has "
                    f"{len(self.replies)} replies"
                )
            reply = self.replies[self._index]
            self._index += 1
        if isinstance(reply, BaseException):
            raise reply
        message = reply if isinstance(reply, AIMessage) else AIMessage(content=str(reply))
        if isinstance(message.content, str):
            content = message.content
            if stop and not self.ignore_stop:
                content = _cut_at_stop(content, stop)
            update: dict[str, Any] = {"content": content}
            if self.report_usage and message.usage_metadata is None:
                n_in = sum(len(str(m.content).split()) for m in messages)
                n_out = len(content.split())
                update["usage_metadata"] = {
                    "input_tokens": n_in,
                    "output_tokens": n_out,
                    "total_tokens": n_in + n_out,
                }
            message = message.model_copy(update=update)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.delay:
            time.sleep(self.delay)
        return self._next(messages, stop)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.delay:
            await asyncio.sleep(self.delay)
        return self._next(messages, stop)


def _cut_at_stop(text: str, stop: list[str]) -> str:
    cut = min((i for s in stop if s and (i := text.find(s)) >= 0), default=len(text))
    return text[:cut]
