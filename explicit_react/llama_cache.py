"""The prompt cache of a llama.cpp model: reuse cut to whole blocks, and the prompt start kept in a file.

- ``aligned_reuse``: how much of a new prompt may be taken from the cache of the previous one. A
  prompt read in other pieces gives slightly different numbers, so a reuse is cut back to a whole
  number of ``n_batch`` blocks of an earlier *prompt*; every block of the cache then holds exactly
  what a fresh read would compute, and the same messages give the same reply on a fresh or a used
  model object.
- ``AlignedLlama``: ``llama_cpp.Llama`` with that reuse, and optionally a state file that carries the
  prompt start (system prompt and tools) from one process to the next. The file ends with a
  checksum of the rest: one damaged, cut short or written by an older version is read as no file
  and replaced (llama.cpp's own checks let a file damaged inside its KV data through).
- ``state_file``: the name of that file, one per model file, llama.cpp build, CPU and settings.

``explicit_react.llama.ChatLlama`` builds its client from here; importing this module imports llama_cpp.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import itertools
import json
import logging
import os
import re
import struct
import tempfile
import threading
import time
import warnings
from collections.abc import Generator, Mapping, Sequence
from pathlib import Path
from typing import Any

import llama_cpp
from llama_cpp.llama_speculative import LlamaDraftModel

_TOKENS_ONLY = frozenset({"chat_handler", "chat_format", "tokenizer", "draft_model", "verbose"})
"""``Llama`` options that change which tokens are read, not the numbers computed for them."""
MAX_STATE_FILES = 16
"""The prompt states kept in a folder; the least recently used beyond these are deleted."""
_STATE_NAME = re.compile(r"[0-9a-f]{32}(?:-[0-9a-f]{16})?\.state\Z")  # before slots, no -{16}
_TEMPORARY_NAME = re.compile(r"\.[0-9a-f]{32}(?:-[0-9a-f]{16})?\.state\..+\.tmp\Z")
_ABANDONED_SECONDS = 600
"""A temporary file not written to for this long was left by a process that was killed."""

logger = logging.getLogger("explicit_react.llama")
"""The logger of ``explicit_react.llama``: a state file that cannot be loaded is noted there at DEBUG."""

_interrupt = threading.local()


class GenerationStopped(Exception):
    """The caller went away during a generation (``interrupted_by``)."""


@contextlib.contextmanager
def interrupted_by(event: threading.Event) -> Generator[None, None, None]:
    """Within this block, a generation on this thread stops once ``event`` is set (the caller went
    away: a cancelled ``ainvoke``), before it reads its prompt's next ``n_batch`` block or its reply's
    next token: ``GenerationStopped`` is raised to the caller that left."""
    outer = getattr(_interrupt, "event", None)
    _interrupt.event = event
    try:
        yield
    finally:
        _interrupt.event = outer


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
    _reading_prompt: bool = False
    """True while ``generate`` reads the prompt, False while it writes the reply."""
    _save_at: int = 0
    """While a prompt is read: how many of its leading tokens to save in ``state_file`` (0: none)."""
    prompt_tokens: int = 0
    """Prompt tokens of the last call (see ``usage``)."""
    completion_tokens: int = 0
    """Tokens the last call generated, its end-of-generation token not counted (see ``usage``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.draft_model is not None and len(self.scores) < self.n_ctx():
            # llama_cpp copies every drafted token's logits into `scores`, which has n_ctx rows only
            # with logits_all=True (2.5 GB for Qwen 1.5B at 4,096) and failed past its n_batch rows
            # ("could not broadcast"). Drafts are checked from the context's own logits instead
            # (``_decode``), so `scores` stays empty and llama_cpp is told to refuse logprobs; and
            # a draft is cut to one batch with the token before it (checked in two, the first
            # batch's logits were gone and llama.cpp aborted).
            self._logits_all = False
            self.draft_model = _CappedDraft(self.draft_model, self.n_batch - 1)

    def generate(
        self, tokens: Sequence[int], *args: Any, **kwargs: Any
    ) -> Generator[int, Sequence[int] | None, None]:
        tokens = list(tokens)
        restored, self._save_at = self._plan(tokens) if kwargs.get("reset", True) else (False, 0)
        self.prompt_tokens, self.completion_tokens = len(tokens), 0
        steps = super().generate(tokens, *args, **kwargs)
        self._reading_prompt = True
        restored_from = self.state_file  # a failed save while reading sets state_file to None
        try:
            first = next(steps, None)  # llama.cpp reads the whole prompt before the first token
        except RuntimeError:  # "llama_decode returned -1": the restored state does not fit its tokens
            if not restored:
                raise
            self._save_at = self._discard_state(tokens, restored_from)
            steps = super().generate(tokens, *args, **kwargs)
            first = next(steps, None)
        finally:
            self._save_at = 0  # saved by now, or the prompt was not read that far
            self._reading_prompt = False
        if first is None:
            return
        for token in itertools.chain([first], steps):
            if not llama_cpp.llama_vocab_is_eog(self._model.vocab, token):
                self.completion_tokens += 1
            yield token

    def eval(self, tokens: Sequence[int]) -> None:
        """``Llama.eval`` one ``n_batch`` block at a time (the blocks it reads anyway), each only while
        the caller is there (``interrupted_by``): a long prompt is not read for nobody. A reply's
        tokens come here one at a time, so they are checked too.

        The prompt start planned for the state file is saved as soon as its last block is read, while
        the cache holds it alone: the file then holds only what it names (saved after the whole
        prompt, it also held every later prompt token, twice the size or more)."""
        stop = getattr(_interrupt, "event", None)
        drafted = isinstance(self.draft_model, _CappedDraft)  # see __init__
        self._save_when_read()
        for start in range(0, len(tokens), self.n_batch):
            if stop is not None and stop.is_set():
                raise GenerationStopped("the caller went away; the generation stopped")
            if drafted:
                self._decode(tokens[start : start + self.n_batch], every_token=not self._reading_prompt)
            else:
                super().eval(tokens[start : start + self.n_batch])
            self._save_when_read()

    def _decode(self, block: Sequence[int], *, every_token: bool) -> None:
        """``Llama.eval`` of one block without its copy of the logits into ``scores``: the sampler
        reads them from the context. Every token's logits for a reply's drafted tokens (each is
        checked), the last one's for a prompt block (reading a prompt costs what it costs without
        a draft model, and computes the same numbers)."""
        past = self.n_tokens
        self._ctx.kv_cache_seq_rm(-1, past, -1)
        self._batch.set_batch(batch=block, n_past=past, logits_all=every_token)
        self._ctx.decode(self._batch)
        self.input_ids[past : past + len(block)] = block
        self.n_tokens += len(block)
        self._requires_eval = False

    def _save_when_read(self) -> None:
        """Save the planned prompt start once the cache holds exactly it (``eval`` first drops any
        restored blocks past ``n_tokens``, so a start shorter than a restored state is saved too)."""
        if self._save_at and self.n_tokens == self._save_at:
            self._ctx.kv_cache_seq_rm(-1, self.n_tokens, -1)
            self._save_at = 0
            self._save_state(self.input_ids[: self.n_tokens].tolist())

    def usage(self) -> dict[str, int]:
        """The last call's token counts, as llama-cpp-python reports them for a call that does not
        stream (its streamed chunks carry none): the end-of-generation token is not counted."""
        total = self.prompt_tokens + self.completion_tokens
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": total,
        }

    def _plan(self, tokens: list[int]) -> tuple[bool, int]:
        """Set up the cache for a new prompt: whether a saved state was restored, and how many of the
        prompt's leading tokens to save once it is read (0: none)."""
        first = not hasattr(self, "_last_prompt")
        if first and self.state_file is not None:
            self.state_file = state_slot(self.state_file, tokens[: self.n_batch])
        saved = self._restore_state() if first and self.state_file is not None else []
        # What is still cached of the last prompt (none after reset()), cut to whole blocks;
        # Llama.generate then reuses exactly the first n_tokens cached tokens, which match `tokens`.
        cached = getattr(self, "_last_prompt", saved)[: self.n_tokens]
        self.n_tokens = self.reused = aligned_reuse(cached, tokens, self.n_batch)
        self._last_prompt = tokens
        if first and self.state_file is not None and (not saved or self.reused < len(saved)):
            # Keep what this prompt shares with the saved one (the part every question starts
            # with), or, with nothing shared or saved, this prompt's own whole blocks.
            return bool(saved), self.reused or aligned_reuse(tokens, tokens, self.n_batch)
        return bool(saved), 0

    def _restore_state(self) -> list[int]:
        """Load the saved state, if any: the tokens it holds (their cache is now this object's).

        A file whose checksum (``_STATE_TRAILER``) does not match is read as no file, and replaced
        once the prompt is read: llama.cpp itself loaded a file damaged inside its KV data as valid,
        and the replies of every later process then came from the damaged cache."""
        assert self.state_file is not None
        data = _checked_state(self.state_file)
        header = struct.calcsize(_STATE_HEADER)
        if data is None or len(data) < header:
            logger.debug("the prompt state %s is missing, damaged or unfinished", self.state_file)
            return []
        magic, version, count = struct.unpack_from(_STATE_HEADER, data)
        start = header + count * ctypes.sizeof(llama_cpp.llama_token)
        expected = (llama_cpp.LLAMA_SESSION_MAGIC, llama_cpp.LLAMA_SESSION_VERSION)
        if (magic, version) != expected or count > self.n_ctx() or start > len(data):
            logger.debug("the prompt state %s is from another llama.cpp build", self.state_file)
            return []
        state = (ctypes.c_uint8 * (len(data) - start)).from_buffer(data, start)
        if llama_cpp.llama_state_set_data(self._ctx.ctx, state, len(state)) != len(state):
            logger.debug("could not load the prompt state %s", self.state_file)  # another model's
            self.reset()
            return []
        saved = list(struct.unpack_from(f"<{count}i", data, header))
        self.input_ids[: len(saved)] = saved
        self.n_tokens = len(saved)
        self._requires_eval = True
        with contextlib.suppress(OSError):  # used now: the last a pruning deletes (prune_states)
            os.utime(self.state_file)
        return saved

    def _discard_state(self, tokens: list[int], path: Path | None) -> int:
        """Delete the restored state ``path`` that llama.cpp could not go on from (and the copy of
        its start saved as the prompt was read), so that ``tokens`` are read afresh; how many of them
        to save in its place (their whole blocks; none if saving failed meanwhile)."""
        logger.debug("the prompt state %s did not decode; deleted, the prompt is read afresh", path)
        if path is not None:
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
        self.reset()
        self.reused = 0
        return aligned_reuse(tokens, tokens, self.n_batch) if self.state_file is not None else 0

    def _save_state(self, tokens: list[int]) -> None:
        """Save the context's state with ``tokens`` as what it holds; written whole or not at all.

        A folder that cannot be written (read-only, full) is warned about once and saving stops: the
        prompt is then read in every process, as without ``state_file``."""
        assert self.state_file is not None
        folder, partial = self.state_file.parent, None
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            # A unique name per writer: model objects in two threads may save the same state at once.
            # Private (mkstemp's 0600): the state holds the first prompt's tokens, a question included.
            handle, partial = tempfile.mkstemp(dir=folder, prefix=f".{self.state_file.name}.", suffix=".tmp")
            os.close(handle)
            array = (llama_cpp.llama_token * len(tokens))(*tokens)
            if not llama_cpp.llama_state_save_file(self._ctx.ctx, partial.encode(), array, len(tokens)):
                raise OSError(f"llama.cpp could not write {partial}")
            _append_checksum(Path(partial))
            os.replace(partial, self.state_file)
            prune_states(folder)
        except OSError as error:
            if partial is not None:
                Path(partial).unlink(missing_ok=True)
            warnings.warn(
                f"Could not save the prompt state in {folder} ({error}); the prompt start is not kept "
                "between processes",
                RuntimeWarning,
                stacklevel=2,
            )
            self.state_file = None


class _CappedDraft(LlamaDraftModel):
    """A draft model whose drafts are cut to ``most`` tokens."""

    def __init__(self, draft: LlamaDraftModel, most: int) -> None:
        self.draft, self.most = draft, most

    def __call__(self, input_ids: Any, /, **kwargs: Any) -> Any:
        return self.draft(input_ids, **kwargs)[: self.most]


def state_slot(keyed: Path, first_block: Sequence[int]) -> Path:
    """The state file of the prompts that start with ``first_block`` (their first ``n_batch``
    tokens: the system prompt and the tools' list): one per tool set, so two tool sets used in turn
    each keep theirs (with one file per model and settings, each process overwrote the other's)."""
    block = hashlib.sha256(struct.pack(f"<{len(first_block)}i", *first_block)).hexdigest()[:16]
    return keyed.with_name(f"{keyed.stem}-{block}.state")


def prune_states(folder: Path, keep: int = MAX_STATE_FILES) -> None:
    """Delete all but the ``keep`` most recently used state files of ``folder`` (a restore marks a
    file used), and temporary files a killed process left: a state is keyed by the model file, the
    build and the settings, so every change of them left one more file, 15 MB or more each."""
    now = time.time()
    used: list[tuple[float, Path]] = []
    for path in folder.iterdir():  # only the files this module writes: the folder may be the user's
        with contextlib.suppress(OSError):
            if _STATE_NAME.match(path.name):
                used.append((path.stat().st_mtime, path))
            elif _TEMPORARY_NAME.match(path.name) and now - path.stat().st_mtime > _ABANDONED_SECONDS:
                path.unlink(missing_ok=True)
    for _, path in sorted(used, reverse=True)[keep:]:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)


_STATE_HEADER = "<III"
"""The start of llama.cpp's state file: magic, version, token count (then the tokens, then the state)."""
_STATE_TRAILER = b"explicit_react-sha256:"
"""Appended to a saved state file, then the SHA-256 of all that precedes it."""


def _append_checksum(path: Path) -> None:
    """Append the trailer and checksum to the state llama.cpp wrote in ``path`` (not yet in place)."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    with path.open("ab") as file:
        file.write(_STATE_TRAILER + digest.digest())


def _checked_state(path: Path) -> bytearray | None:
    """The content of the state file ``path`` without its trailer, or ``None`` when there is no
    file, no trailer (a file from before checksums), or the checksum does not match."""
    try:
        data = bytearray(path.read_bytes())
    except OSError:
        return None
    end = len(data) - len(_STATE_TRAILER) - hashlib.sha256().digest_size
    if end < 0 or data[end : end + len(_STATE_TRAILER)] != _STATE_TRAILER:
        return None
    checksum = bytes(data[end + len(_STATE_TRAILER) :])
    del data[end:]
    return data if hashlib.sha256(data).digest() == checksum else None


def state_file(
    folder: Path, model_path: str, settings: Mapping[str, Any], model_kwargs: Mapping[str, Any]
) -> Path:
    """The prompt-state file in ``folder`` for this model file, llama.cpp build, CPU and context
    settings: a state is only ever loaded by the build and settings that computed it. The first
    prompt picks its slot of it (``state_slot``)."""
    from explicit_react.buildcheck import build_identity

    identity = {
        **build_identity(Path(model_path)),
        "settings": {k: v for k, v in settings.items() if k not in ("verbose", "n_threads")},
        # Every llama.cpp option may change the numbers (flash_attn, type_k, kv_overrides: a state
        # saved with another rope base gave another model's answers); an object without a stable
        # text (its repr names its address) gives a key no other process shares, so no state is
        # reused rather than a wrong one. Only what changes which tokens are read is left out: the
        # file names its tokens.
        "model_kwargs": {k: v for k, v in model_kwargs.items() if k not in _TOKENS_ONLY},
    }
    key = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:32]
    return folder / f"{key}.state"
