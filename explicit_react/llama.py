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
  the same messages give the same reply on a fresh or a used model object, on every build. That
  cache, and the state file that carries a prompt start between processes, live in
  ``explicit_react.llama_cache`` (``aligned_reuse`` is re-exported here).
- **Quiet.** llama.cpp's own log goes to the ``explicit_react.llama`` logger, printed only when the
  model is built with ``verbose=True``.

Importing this module imports llama_cpp; ``explicit_react.models`` imports it only to load a model.
"""

from __future__ import annotations

import ctypes
import logging
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import llama_cpp
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.messages.tool import InvalidToolCall, ToolCall
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field, PrivateAttr

from explicit_react.llama_cache import AlignedLlama, aligned_reuse, state_file
from explicit_react.llama_tools import (
    ToolRequest,
    compiled_grammar,
    llama_messages,
    read_reply,
    template_renders_tools,
    with_tools_text,
)

__all__ = ["ChatLlama", "aligned_reuse", "logger"]

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


_LLAMA_ARGUMENTS = ("n_ctx", "n_threads", "n_batch", "seed", "verbose")
"""Fields of ChatLlama that are also ``llama_cpp.Llama`` constructor arguments."""


class ChatLlama(BaseChatModel):
    """A GGUF model run in this process by llama.cpp, as a LangChain chat model.

    Supports native function calling (``bind_tools``), stop sequences, ``grammar`` (a
    ``llama_cpp.LlamaGrammar``, bound per call or set on the model), ``usage_metadata``, streaming,
    and async (LangChain runs the call in a worker thread; calls on one model object take turns).
    ``model_kwargs`` go to ``llama_cpp.Llama`` (for example ``chat_format`` or ``chat_handler``).
    """

    model_path: str
    n_ctx: int = 4096
    n_threads: int | None = None
    n_batch: int = 128
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
    """``invoke`` streams internally when True (LangChain joins ``_stream``'s chunks); ``stream()``
    always streams."""
    verbose: bool = False
    """Print llama.cpp's own log lines on stderr."""
    prompt_state_dir: str | None = None
    """A folder where the model keeps the state of the prompt start it read (the system prompt and
    tools), so that a new process does not read it again; one file per model file, llama.cpp build,
    CPU and settings. ``None``: nothing is kept between processes."""
    chat_template: str | None = None
    """A Jinja chat template for continuing a reply (below); ``None``: the GGUF file's own."""
    model_kwargs: dict[str, Any] = Field(default_factory=dict)
    client: Any = None
    """The ``llama_cpp.Llama`` object; built from the fields above when not given."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _formatted: tuple[str, Any] | None = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        global _echo_log
        _echo_log = _echo_log or self.verbose
        if self.client is None:
            settings = {name: getattr(self, name) for name in _LLAMA_ARGUMENTS}
            self.client = AlignedLlama(model_path=self.model_path, **settings, **self.model_kwargs)
            if self.prompt_state_dir is not None:
                folder = Path(self.prompt_state_dir)
                self.client.state_file = state_file(folder, self.model_path, settings, self.model_kwargs)

    @property
    def _llm_type(self) -> str:
        return "llama.cpp"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_path": self.model_path, "temperature": self.temperature, "seed": self.seed}

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | dict[str, Any] | bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """The model with ``tools`` bound for native function calling (``explicit_react.llama_tools``).

        Each reply is one tool call, held to the tool's JSON schema by a grammar, or (``tool_choice``
        ``None``/``"auto"``) plain text with no ``<``, or such text and then one call; ``"required"``/
        ``"any"`` forces a call, a tool's name a call to that tool, ``"none"`` no call. The tools are rendered by the GGUF file's chat template
        when it renders tools (Qwen2.5), else written into the system message in the same format.
        """
        specs = [convert_to_openai_tool(t) for t in tools]
        request = ToolRequest.pop({"tools": specs, "tool_choice": tool_choice})  # a bad tool_choice raises
        if request is not None and self.grammar is None:
            compiled_grammar(request.grammar())  # a schema llama.cpp cannot follow raises here, not in a run
        return self.bind(tools=specs, tool_choice=tool_choice, **kwargs)

    def _request(
        self, messages: list[BaseMessage], stop: list[str] | None, tools: ToolRequest | None, **kwargs: Any
    ) -> dict[str, Any]:
        native = template_renders_tools(self.client)
        chat = llama_messages(messages, native)
        grammar = self.grammar
        if tools is not None:
            chat = chat if native else with_tools_text(chat, tools)
            grammar = grammar if grammar is not None else compiled_grammar(tools.grammar())
        request = {
            "messages": chat,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k,
            "repeat_penalty": self.repeat_penalty,
            "seed": self.seed,
            "stop": stop if stop is not None else self.stop or [],
            "grammar": grammar,
        }
        if tools is not None and native:
            request["tools"] = list(tools.tools)  # rendered by the file's template
        request.update(kwargs)
        return request

    @property
    def continues_replies(self) -> bool:
        """True when a last assistant message is continued, not answered (a chat template is known)."""
        return self._template() is not None

    def _template(self) -> str | None:
        if self.chat_template is not None:
            return self.chat_template
        if "chat_handler" in self.model_kwargs or "chat_format" in self.model_kwargs:
            return None
        metadata = getattr(self.client, "metadata", None) or {}
        return cast("str | None", metadata.get("tokenizer.chat_template"))

    def _continuation(self, messages: list[BaseMessage]) -> str | None:
        """The prompt text that ends inside the last (assistant) message, or ``None`` when the
        messages do not end with one or the chat template is unknown.

        A list ending with an ``AIMessage`` asks the model to go on writing that message (as the
        prefill of Anthropic's API does): the chat template renders the conversation with that
        message as written so far, and the prompt stops where its text stops."""
        last = messages[-1] if messages else None
        template = self._template()
        if last is None or last.type != "ai" or getattr(last, "tool_calls", None) or template is None:
            return None
        formatter = self._formatter(template)
        mark = "\x00continue-here\x00"
        rendered = llama_messages(messages, native=False)
        rendered[-1]["content"] += mark
        prompt = formatter(messages=cast(Any, rendered)).prompt
        return prompt[: prompt.index(mark)] if mark in prompt else None

    def _tokens(self, prompt: str) -> list[int]:
        """A rendered prompt's tokens, with the model's BOS token added only when the chat template did
        not write one (as llama-cpp-python's chat path does; adding it again gave Gemma two)."""
        model = self.client._model
        bos = model.token_get_text(model.token_bos())
        written = bool(bos) and prompt.startswith(bos)
        return list(self.client.tokenize(prompt.encode("utf-8"), add_bos=not written, special=True))

    def _formatter(self, template: str) -> Any:
        """The template compiled once per model object (not once per step)."""
        if self._formatted is None or self._formatted[0] != template:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            model = self.client._model
            eos, bos = model.token_get_text(model.token_eos()), model.token_get_text(model.token_bos())
            self._formatted = (template, Jinja2ChatFormatter(template, eos_token=eos, bos_token=bos))
        return self._formatted[1]

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        kwargs.pop("stream", None)  # LangChain's switch between _generate and _stream, not llama.cpp's
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages, stop, kwargs))])

    def _reply(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> AIMessage:
        """One llama.cpp call, the whole reply: a continuation, tool calls, or an answer."""
        tools = ToolRequest.pop(kwargs)
        prompt = self._continuation(messages) if tools is None else None
        if prompt is not None:
            request = self._request(messages, stop, None, **kwargs)
            del request["messages"]
            with self._lock:
                response = self.client.create_completion(prompt=self._tokens(prompt), **request)
            choice = response["choices"][0]
            return AIMessage(
                content=choice.get("text") or "",
                usage_metadata=_usage(response.get("usage") or {}, cached=getattr(self.client, "reused", 0)),
                response_metadata={"finish_reason": choice.get("finish_reason"), "continued": True},
            )
        with self._lock:
            response = self.client.create_chat_completion(**self._request(messages, stop, tools, **kwargs))
        choice = response["choices"][0]
        text = choice["message"].get("content") or ""
        calls: list[ToolCall] = []
        invalid: list[InvalidToolCall] = []
        if tools is not None:
            text, calls, invalid = read_reply(text)
        return AIMessage(
            content=text,
            tool_calls=calls,
            invalid_tool_calls=invalid,
            usage_metadata=_usage(response.get("usage") or {}, cached=getattr(self.client, "reused", 0)),
            response_metadata={"finish_reason": choice.get("finish_reason")},
        )

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """The reply's text as llama.cpp writes it, then a last chunk with the usage and finish reason
        (the one chunk of an empty reply): joined, the chunks are the message ``invoke`` returns.

        With tools bound the reply is one chunk, sent once the whole reply is read: only then is a
        call known to be whole, or cut off at ``max_tokens`` (an invalid call, as ``invoke`` has it;
        ``_as_chunk`` keeps it invalid when LangChain joins the chunks)."""
        kwargs.pop("stream", None)  # stream(..., stream=True): LangChain's switch, set here anyway
        if ToolRequest.pop(dict(kwargs)) is not None:  # a call is read from the whole reply: one chunk
            yield ChatGenerationChunk(message=_as_chunk(self._reply(messages, stop, kwargs)))
            return
        ToolRequest.pop(kwargs)  # tool_choice="none": no tools
        prompt = self._continuation(messages)
        request = self._request(messages, stop, None, stream=True, **kwargs)
        finish = None
        with self._lock:
            for text, finish_reason in self._pieces(prompt, request):
                finish = finish_reason or finish
                if text:
                    chunk = ChatGenerationChunk(message=AIMessageChunk(content=text))
                    if run_manager:
                        run_manager.on_llm_new_token(text, chunk=chunk)
                    yield chunk
            usage = self.client.usage() if isinstance(self.client, AlignedLlama) else {}
        metadata = {"finish_reason": finish, **({"continued": True} if prompt is not None else {})}
        last = AIMessageChunk(
            content="",
            usage_metadata=_usage(usage, cached=getattr(self.client, "reused", 0)),
            response_metadata=metadata,
        )
        yield ChatGenerationChunk(message=last)

    def _pieces(self, prompt: str | None, request: dict[str, Any]) -> Iterator[tuple[str, str | None]]:
        """The streamed reply as (text, finish reason) pairs: a chat reply, or with ``prompt`` (from
        ``_continuation``) the continuation of the last message."""
        if prompt is None:
            for part in self.client.create_chat_completion(**request):
                choice = part["choices"][0]
                yield choice["delta"].get("content") or "", choice.get("finish_reason")
            return
        del request["messages"]
        for part in self.client.create_completion(prompt=self._tokens(prompt), **request):
            choice = part["choices"][0]
            yield choice.get("text") or "", choice.get("finish_reason")


def _as_chunk(reply: AIMessage) -> AIMessageChunk:
    """``reply`` as the one chunk of a streamed reply with tools bound.

    LangChain keeps only a chunk's ``tool_call_chunks`` when it joins chunks (``stream()`` joined by
    hand, ``streaming=True``, ``astream_events``' end event) and reads each back with a partial-JSON
    parser: a call whose text parses is a call, any other an invalid call (with no ``error``). So a
    malformed call's ``args`` is text no such parser reads (``read_reply``), and the joined message
    has the calls and invalid calls ``invoke`` gives."""
    return AIMessageChunk(
        content=reply.content,
        tool_calls=reply.tool_calls,
        invalid_tool_calls=reply.invalid_tool_calls,
        usage_metadata=reply.usage_metadata,
        response_metadata=reply.response_metadata,
    )


def _usage(usage: dict[str, Any], cached: int = 0) -> UsageMetadata | None:
    """LangChain's usage record; ``input_token_details["cache_read"]`` counts the prompt tokens taken
    from the cache, so ``input_tokens - cache_read`` is what the model actually read."""
    if not usage:
        return None
    record: dict[str, Any] = {
        "input_tokens": int(usage.get("prompt_tokens", 0)),
        "output_tokens": int(usage.get("completion_tokens", 0)),
        "total_tokens": int(usage.get("total_tokens", 0)),
    }
    if cached:
        record["input_token_details"] = {"cache_read": cached}
    return cast(UsageMetadata, record)
