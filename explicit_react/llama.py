"""ChatLlama: a LangChain chat model over ``llama_cpp.Llama`` that gives the same reply to the same
messages, and keeps llama.cpp's log lines off the terminal.

Why our own class rather than langchain-community's ``ChatLlamaCpp``: that package is being sunset,
and three of its behaviours had to be patched around anyway (no ``usage_metadata``, ``stop`` dropped
when streaming, a prompt batch of 8 tokens). What this class owns beyond a thin call of
``Llama.create_chat_completion``:

- **Determinism.** llama.cpp reuses the part of the previous prompt that a new prompt starts with.
  A prompt read in other pieces gives slightly different numbers, so at temperature 0 the reply to
  the same messages depended on what the model object had read before. Here a reuse is cut back to
  a whole number of ``n_batch`` blocks of an earlier *prompt* (never of generated tokens, which were
  read one at a time), so every block of the cache holds exactly what a fresh read would compute:
  the same messages give the same reply on a fresh or a used model object, on every build.
- **Quiet.** llama.cpp's own log goes to the ``explicit_react.llama`` logger, printed only when the
  model is built with ``verbose=True``.

Importing this module imports llama_cpp; ``explicit_react.models`` imports it only to load a model.
"""

from __future__ import annotations

import ctypes
import logging
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Any, cast

import llama_cpp
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import ConfigDict, Field, PrivateAttr

from explicit_react.llm import message_text

logger = logging.getLogger("explicit_react.llama")
"""Where llama.cpp's own log lines go, all at level DEBUG."""

_echo_log = False  # set by a model built with verbose=True: llama.cpp's lines then reach stderr too


@llama_cpp.llama_log_callback
def _log_to_logger(_level: int, text: bytes, _user_data: ctypes.c_void_p) -> None:
    # Everything at DEBUG: llama.cpp logs routine lines as warnings, and a record at WARNING with no
    # handler configured would reach the terminal through logging's last-resort handler.
    if _echo_log:
        sys.stderr.write(text.decode("utf-8", errors="replace"))
    elif logger.isEnabledFor(logging.DEBUG):
        logger.debug(text.decode("utf-8", errors="replace").rstrip("\n"))


llama_cpp.llama_log_set(_log_to_logger, ctypes.c_void_p(0))  # replaces llama-cpp-python's printer


def aligned_reuse(previous_prompt: Sequence[int], prompt: Sequence[int], block: int) -> int:
    """How many leading tokens of ``prompt`` may be taken from the cache of ``previous_prompt``.

    The shared prefix, cut back to whole ``block``s, and at least one token left to read (the reply's
    first token is sampled from the last prompt token's logits).
    """
    shared = 0
    for a, b in zip(previous_prompt, prompt[:-1], strict=False):
        if a != b:
            break
        shared += 1
    return shared - shared % block


class _AlignedLlama(llama_cpp.Llama):
    """``llama_cpp.Llama`` whose prompt-cache reuse follows ``aligned_reuse``."""

    _last_prompt: list[int]

    def generate(self, tokens: Sequence[int], *args: Any, **kwargs: Any) -> Any:
        tokens = list(tokens)
        if kwargs.get("reset", True):
            # What is still cached of the last prompt (none after reset()), cut to whole blocks;
            # Llama.generate then reuses exactly the first n_tokens cached tokens, which match `tokens`.
            cached = getattr(self, "_last_prompt", [])[: self.n_tokens]
            self.n_tokens = aligned_reuse(cached, tokens, self.n_batch)
            self._last_prompt = tokens
        return super().generate(tokens, *args, **kwargs)


_LLAMA_ARGUMENTS = ("n_ctx", "n_threads", "n_batch", "seed", "verbose")
"""Fields of ChatLlama that are also ``llama_cpp.Llama`` constructor arguments."""


class ChatLlama(BaseChatModel):
    """A GGUF model run in this process by llama.cpp, as a LangChain chat model.

    Supports stop sequences, ``grammar`` (a ``llama_cpp.LlamaGrammar``, bound per call or set on the
    model), ``usage_metadata``, streaming, and async (LangChain runs the call in a worker thread;
    calls on one model object take turns). ``model_kwargs`` go to ``llama_cpp.Llama`` (for example
    ``chat_format`` or ``chat_handler``).
    """

    model_path: str
    n_ctx: int = 4096
    n_threads: int | None = None
    n_batch: int = 512
    max_tokens: int = 512
    temperature: float = 0.0
    top_p: float = 0.95
    top_k: int = 40
    repeat_penalty: float = 1.0
    seed: int = 0
    stop: list[str] | None = None
    grammar: Any = None
    """A ``llama_cpp.LlamaGrammar`` every reply is held to, or ``None``."""
    streaming: bool = False
    """``invoke`` streams internally when True (``stream()`` always streams)."""
    verbose: bool = False
    """Print llama.cpp's own log lines on stderr."""
    model_kwargs: dict[str, Any] = Field(default_factory=dict)
    client: Any = None
    """The ``llama_cpp.Llama`` object; built from the fields above when not given."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def model_post_init(self, context: Any, /) -> None:
        global _echo_log
        _echo_log = _echo_log or self.verbose
        if self.client is None:
            settings = {name: getattr(self, name) for name in _LLAMA_ARGUMENTS}
            self.client = _AlignedLlama(model_path=self.model_path, **settings, **self.model_kwargs)

    @property
    def _llm_type(self) -> str:
        return "llama.cpp"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_path": self.model_path, "temperature": self.temperature, "seed": self.seed}

    def _request(self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any) -> dict[str, Any]:
        request = {
            "messages": [_as_llama_message(m) for m in messages],
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k,
            "repeat_penalty": self.repeat_penalty,
            "seed": self.seed,
            "stop": stop if stop is not None else self.stop or [],
            "grammar": self.grammar,
        }
        request.update(kwargs)
        return request

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.streaming:
            text = "".join(chunk.text for chunk in self._stream(messages, stop, run_manager, **kwargs))
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])
        with self._lock:
            response = self.client.create_chat_completion(**self._request(messages, stop, **kwargs))
        choice = response["choices"][0]
        message = AIMessage(
            content=choice["message"].get("content") or "",
            usage_metadata=_usage(response.get("usage") or {}),
            response_metadata={"finish_reason": choice.get("finish_reason")},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        with self._lock:
            for part in self.client.create_chat_completion(
                **self._request(messages, stop, stream=True, **kwargs)
            ):
                text = part["choices"][0]["delta"].get("content") or ""
                if not text:
                    continue
                chunk = ChatGenerationChunk(message=AIMessageChunk(content=text))
                if run_manager:
                    run_manager.on_llm_new_token(text, chunk=chunk)
                yield chunk


def _as_llama_message(message: BaseMessage) -> dict[str, str]:
    role = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}.get(message.type, "user")
    return {"role": role, "content": message_text(message.content)}


def _usage(usage: dict[str, Any]) -> UsageMetadata | None:
    if not usage:
        return None
    return cast(
        UsageMetadata,
        {
            "input_tokens": int(usage.get("prompt_tokens", 0)),
            "output_tokens": int(usage.get("completion_tokens", 0)),
            "total_tokens": int(usage.get("total_tokens", 0)),
        },
    )
