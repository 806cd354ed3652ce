"""The prompt cache of a llama.cpp model: reuse cut to whole blocks, and the prompt start kept in a file.

- ``aligned_reuse``: how much of a new prompt may be taken from the cache of the previous one. A
  prompt read in other pieces gives slightly different numbers, so a reuse is cut back to a whole
  number of ``n_batch`` blocks of an earlier *prompt*; every block of the cache then holds exactly
  what a fresh read would compute, and the same messages give the same reply on a fresh or a used
  model object.
- ``AlignedLlama``: ``llama_cpp.Llama`` with that reuse, and optionally a state file that carries the
  prompt start (system prompt and tools) from one process to the next.
- ``state_file``: the name of that file, one per model file, llama.cpp build, CPU and settings.

``explicit_react.llama.ChatLlama`` builds its client from here; importing this module imports llama_cpp.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import logging
import os
from collections.abc import Generator, Mapping, Sequence
from pathlib import Path
from typing import Any

import llama_cpp

logger = logging.getLogger("explicit_react.llama")
"""The logger of ``explicit_react.llama``: a state file that cannot be loaded is noted there at DEBUG."""


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


class AlignedLlama(llama_cpp.Llama):
    """``llama_cpp.Llama`` whose prompt-cache reuse follows ``aligned_reuse``.

    With ``state_file`` set, the first prompt this object reads may start from a state an earlier
    process saved there, and this object then saves the blocks that prompt shares with it (or, the
    first time, its own whole blocks): the system prompt and tool list, the same for every question,
    are read once per model file and settings, not once per process.
    """

    _last_prompt: list[int]
    state_file: Path | None = None
    reused: int = 0
    """Prompt tokens of the last call taken from the cache rather than read."""

    def generate(
        self, tokens: Sequence[int], *args: Any, **kwargs: Any
    ) -> Generator[int, Sequence[int] | None, None]:
        tokens = list(tokens)
        save = 0
        if kwargs.get("reset", True):
            first = not hasattr(self, "_last_prompt")
            saved = self._restore_state() if first and self.state_file is not None else []
            # What is still cached of the last prompt (none after reset()), cut to whole blocks;
            # Llama.generate then reuses exactly the first n_tokens cached tokens, which match `tokens`.
            cached = getattr(self, "_last_prompt", saved)[: self.n_tokens]
            self.n_tokens = self.reused = aligned_reuse(cached, tokens, self.n_batch)
            self._last_prompt = tokens
            if first and self.state_file is not None and (not saved or self.reused < len(saved)):
                # Keep what this prompt shares with the saved one (the part every question starts
                # with), or, with nothing shared or saved, this prompt's own whole blocks.
                save = self.reused or aligned_reuse(tokens, tokens, self.n_batch)
        try:
            yield from super().generate(tokens, *args, **kwargs)
        finally:
            if save:
                self._save_state(tokens[:save])

    def _restore_state(self) -> list[int]:
        """Load the saved state, if any: the tokens it holds (their cache is now this object's)."""
        assert self.state_file is not None
        if not self.state_file.is_file():
            return []
        capacity = self.n_ctx()
        tokens = (llama_cpp.llama_token * capacity)()
        count = ctypes.c_size_t(0)
        loaded = llama_cpp.llama_state_load_file(
            self._ctx.ctx, str(self.state_file).encode(), tokens, capacity, ctypes.byref(count)
        )
        if not loaded:  # another build's or a damaged file: read the prompt as if there were none
            logger.debug("could not load the prompt state %s", self.state_file)
            self.reset()
            return []
        saved = list(tokens[: count.value])
        self.input_ids[: len(saved)] = saved
        self.n_tokens = len(saved)
        self._requires_eval = True
        return saved

    def _save_state(self, tokens: list[int]) -> None:
        """Save the context's state with ``tokens`` as what it holds; written whole or not at all."""
        assert self.state_file is not None
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        partial = self.state_file.with_name(f"{self.state_file.name}.{os.getpid()}.tmp")
        array = (llama_cpp.llama_token * len(tokens))(*tokens)
        if llama_cpp.llama_state_save_file(self._ctx.ctx, str(partial).encode(), array, len(tokens)):
            os.replace(partial, self.state_file)
        else:
            partial.unlink(missing_ok=True)


def state_file(
    folder: Path, model_path: str, settings: Mapping[str, Any], model_kwargs: Mapping[str, Any]
) -> Path:
    """The prompt-state file in ``folder`` for this model file, llama.cpp build, CPU and context
    settings: a state is only ever loaded by the build and settings that computed it."""
    from explicit_react.buildcheck import build_identity

    identity = {
        **build_identity(Path(model_path)),
        "settings": {k: v for k, v in settings.items() if k not in ("verbose", "n_threads")},
        # Scalar llama.cpp options (flash_attn, type_k, rope...) change the numbers; a chat
        # handler only changes which tokens are read, and the file names its tokens.
        "model_kwargs": {k: v for k, v in model_kwargs.items() if isinstance(v, str | int | float | bool)},
    }
    key = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:32]
    return folder / f"{key}.state"
