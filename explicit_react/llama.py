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
  model is built with ``verbose=True`` (``explicit_react.llama_log``).
- **Safe grammars.** llama.cpp crashes the process on a grammar it rejects, so every grammar is
  checked before use (``llama_grammar_check``), and a tool's schema is written as a grammar it
  accepts (``llama_schema``).

Importing this module imports llama_cpp; ``explicit_react.models`` imports it only to load a model.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any, cast

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import InvalidToolCall, ToolCall
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field, PrivateAttr

from explicit_react.llama_cache import AlignedLlama, aligned_reuse, interrupted_by, state_file
from explicit_react.llama_grammar_check import checked_grammar
from explicit_react.llama_log import echo_to_stderr, logger, raise_interrupt
from explicit_react.llama_reply import as_chunk, call_arguments, usage_record
from explicit_react.llama_tools import (
    ToolRequest,
    compiled_grammar,
    llama_messages,
    read_reply,
    template_renders_tools,
    with_tools_text,
)
from explicit_react.llama_worker import TurnTaker, astream_in_turn, in_turn, stream_in_turn

__all__ = ["ChatLlama", "aligned_reuse", "logger"]

_LLAMA_ARGUMENTS = ("n_ctx", "n_threads", "n_batch", "seed", "verbose")
"""Fields of ChatLlama that are also ``llama_cpp.Llama`` constructor arguments."""
_IDENTIFYING: tuple[str, ...] = ("model_path", "n_ctx", "n_batch", "max_tokens", "temperature", "top_p")
_IDENTIFYING += ("top_k", "repeat_penalty", "seed", "chat_template")
"""The fields that change a reply (with ``stop``, the grammar's text and the scalar ``model_kwargs``)."""


class ChatLlama(BaseChatModel):
    """A GGUF model run in this process by llama.cpp, as a LangChain chat model.

    Supports native function calling (``bind_tools``), stop sequences, ``grammar`` (a
    ``llama_cpp.LlamaGrammar``, bound per call or set on the model), ``usage_metadata``, streaming,
    and async (calls on one model object take turns on a thread of its own, ``llama_worker``).
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
    """A ``llama_cpp.LlamaGrammar`` (or GBNF text) every reply is held to, or ``None``; llama.cpp
    checks it when the model is built (``llama_grammar_check``)."""
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
    _turns: TurnTaker = PrivateAttr(default_factory=TurnTaker)
    _formatted: tuple[str, Any] | None = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        # The client is built after pydantic's validation, not in model_post_init: pydantic turned
        # llama.cpp's one-line "Failed to load model from file" into a multi-line validation dump.
        super().__init__(**data)
        if self.verbose:
            echo_to_stderr()
        if self.client is None:
            settings = {name: getattr(self, name) for name in _LLAMA_ARGUMENTS}
            try:
                self.client = AlignedLlama(model_path=self.model_path, **settings, **self.model_kwargs)
            finally:
                raise_interrupt()  # a Ctrl-C during the load, which llama.cpp's logging took in
            if self.prompt_state_dir is not None:
                folder = Path(self.prompt_state_dir)
                self.client.state_file = state_file(folder, self.model_path, settings, self.model_kwargs)
        if self.grammar is not None:
            self.grammar = checked_grammar(self.grammar, "the model's grammar", self._vocab())

    @property
    def _llm_type(self) -> str:
        return "llama.cpp"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        """Every setting that changes a reply: LangChain's LLM cache keys replies by these."""
        params = {name: getattr(self, name) for name in _IDENTIFYING}
        params["model_stop"] = self.stop  # "stop" is the call's own: LangChain writes it over this
        params["grammar"] = getattr(self.grammar, "_grammar", self.grammar)
        params["model_kwargs"] = {
            key: value
            for key, value in self.model_kwargs.items()
            if isinstance(value, str | int | float | bool)
        }
        return params

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | dict[str, Any] | bool | None = None,
        strict: bool | None = None,
        parallel_tool_calls: bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """The model with ``tools`` bound for native function calling (``explicit_react.llama_tools``).

        Each reply is one tool call, held to the tool's JSON schema by a grammar, or (``tool_choice``
        ``None``/``"auto"``) plain text with no ``<``, or such text and then one call; ``"required"``/
        ``"any"`` forces a call, a tool's name a call to that tool, ``"none"`` no call. The tools are
        rendered by the GGUF file's chat template when it renders tools (Qwen2.5), else written into
        the system message in the same format. LangChain's ``strict`` and ``parallel_tool_calls`` are
        accepted and change nothing: the grammar always holds a call to its schema (what the grammar
        cannot express is checked when the call is read), and a reply holds at most one call.
        """
        specs = [convert_to_openai_tool(t) for t in tools]
        request = ToolRequest.pop({"tools": specs, "tool_choice": tool_choice})  # a bad tool_choice raises
        if request is not None and self.grammar is None:
            request.check_grammar(self._vocab())  # a schema llama.cpp cannot follow raises here, not in a run
        return self.bind(tools=specs, tool_choice=tool_choice, **kwargs)

    def _vocab(self) -> Any:
        """The model's ``llama_vocab`` pointer, or ``None`` for a client that loaded no model."""
        return getattr(getattr(self.client, "_model", None), "vocab", None)

    def _request(
        self, messages: list[BaseMessage], stop: list[str] | None, tools: ToolRequest | None, **kwargs: Any
    ) -> dict[str, Any]:
        native = template_renders_tools(self.client)
        chat = llama_messages(messages, native)
        grammar = kwargs.pop("grammar", self.grammar)
        if tools is not None:
            chat = chat if native else with_tools_text(chat, tools)
            grammar = grammar if grammar is not None else compiled_grammar(tools.grammar())
        if grammar is not None:  # llama.cpp would crash on a grammar it rejects: checked first
            grammar = checked_grammar(grammar, "the grammar given to this call", self._vocab())
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

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        """``_generate`` in this model's turn (``llama_worker``): waiting holds no executor thread.
        Cancelled, the generation stops before its prompt's next block or its reply's next token (a
        client built by ``load_model``)."""

        def generate(stopped: threading.Event) -> ChatResult:
            with interrupted_by(stopped):
                return self._generate(messages, stop, None, **kwargs)

        return await in_turn(self._turns, generate)

    def _reply(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> AIMessage:
        """One llama.cpp call, the whole reply: a continuation, tool calls, or an answer."""
        tools = ToolRequest.pop(kwargs)
        prompt = self._continuation(messages) if tools is None else None
        if prompt is not None:
            request = self._request(messages, stop, None, **kwargs)
            del request["messages"]
            request = call_arguments(self.client.create_completion, request)
            with self._lock:
                response = self.client.create_completion(prompt=self._tokens(prompt), **request)
            choice = response["choices"][0]
            return AIMessage(
                content=choice.get("text") or "",
                usage_metadata=usage_record(
                    response.get("usage") or {}, cached=getattr(self.client, "reused", 0)
                ),
                response_metadata={"finish_reason": choice.get("finish_reason"), "continued": True},
            )
        request = self._request(messages, stop, tools, **kwargs)
        request = call_arguments(self.client.create_chat_completion, request)
        with self._lock:
            response = self.client.create_chat_completion(**request)
        choice = response["choices"][0]
        text = choice["message"].get("content") or ""
        calls: list[ToolCall] = []
        invalid: list[InvalidToolCall] = []
        if tools is not None:
            text, calls, invalid = read_reply(text, tools.argument_problem)
        return AIMessage(
            content=text,
            tool_calls=calls,
            invalid_tool_calls=invalid,
            usage_metadata=usage_record(
                response.get("usage") or {}, cached=getattr(self.client, "reused", 0)
            ),
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
        ``as_chunk`` keeps it invalid when LangChain joins the chunks). The reply is written in this
        model's turn on its own thread (``llama_worker``); the chunks come here through a queue."""
        for chunk in stream_in_turn(self._turns, partial(self._produce, messages, stop, kwargs)):
            if run_manager and chunk.text:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        """``_stream`` for a coroutine: waiting for the turn or a chunk holds no executor thread."""
        async for chunk in astream_in_turn(self._turns, partial(self._produce, messages, stop, kwargs)):
            if run_manager and chunk.text:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    def _produce(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None,
        kwargs: dict[str, Any],
        emit: Callable[[ChatGenerationChunk], None],
        stopped: threading.Event,
    ) -> None:
        """The streamed reply's chunks, each handed to ``emit`` as it is written; ends early once
        ``stopped`` is set (the reader went away). Runs in this model's turn (``_stream``)."""
        kwargs = dict(kwargs)
        kwargs.pop("stream", None)  # stream(..., stream=True): LangChain's switch, set here anyway
        if ToolRequest.pop(dict(kwargs)) is not None:  # a call is read from the whole reply: one chunk
            with interrupted_by(stopped):
                emit(ChatGenerationChunk(message=as_chunk(self._reply(messages, stop, kwargs))))
            return
        ToolRequest.pop(kwargs)  # tool_choice="none": no tools
        prompt = self._continuation(messages)
        request = self._request(messages, stop, None, stream=True, **kwargs)
        finish = None
        with self._lock:
            pieces = self._pieces(prompt, request)
            for text, finish_reason in pieces:
                finish = finish_reason or finish
                if text:
                    emit(ChatGenerationChunk(message=AIMessageChunk(content=text)))
                if stopped.is_set():
                    pieces.close()  # llama.cpp stops generating
                    return
            usage = self.client.usage() if isinstance(self.client, AlignedLlama) else {}
        metadata = {"finish_reason": finish, **({"continued": True} if prompt is not None else {})}
        last = AIMessageChunk(
            content="",
            usage_metadata=usage_record(usage, cached=getattr(self.client, "reused", 0)),
            response_metadata=metadata,
        )
        emit(ChatGenerationChunk(message=last))

    def _pieces(
        self, prompt: str | None, request: dict[str, Any]
    ) -> Generator[tuple[str, str | None], None, None]:
        """The streamed reply as (text, finish reason) pairs: a chat reply, or with ``prompt`` (from
        ``_continuation``) the continuation of the last message."""
        if prompt is None:
            request = call_arguments(self.client.create_chat_completion, request)
            for part in self.client.create_chat_completion(**request):
                choice = part["choices"][0]
                yield choice["delta"].get("content") or "", choice.get("finish_reason")
            return
        del request["messages"]
        request = call_arguments(self.client.create_completion, request)
        for part in self.client.create_completion(prompt=self._tokens(prompt), **request):
            choice = part["choices"][0]
            yield choice.get("text") or "", choice.get("finish_reason")
