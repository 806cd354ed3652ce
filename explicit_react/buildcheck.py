"""Checks once per llama.cpp build, CPU and model file, in a child process, that llama.cpp can generate.

A llama.cpp build made for another CPU (or one whose AMX path crashes on a virtualised Sapphire Rapids
host) dies in native code at the first generation, taking the Python process with it and printing
nothing useful. So before the first local generation in a process, ``check_llama_build`` loads the model
in a child process and generates a few tokens. The verdict is cached in the cache folder under a key
made of everything that could change it (llama-cpp-python's version and library file, the build's
feature string, the CPU model and flags, the model file), so later runs pay a few stat calls and one
small file read. A crash becomes a ``ConfigurationError`` naming the signal and the command that
installs a portable build.

Run as ``python -m explicit_react.buildcheck MODEL.gguf``: the child's side of the check.
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from explicit_react.assembly import write_cache_file
from explicit_react.errors import ConfigurationError

PORTABLE_CMAKE_ARGS = "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
"""llama.cpp build flags for any x86-64 CPU with AVX2 (the README's install command uses them)."""

PROBE_TIMEOUT = 300.0
"""Seconds the child may take to load the model and generate (a slow disk and a busy CPU included)."""

CRASH_SIGNALS = frozenset({"SIGSEGV", "SIGILL", "SIGBUS", "SIGFPE", "SIGABRT"})
"""The signals that mean llama.cpp itself crashed: only these verdicts are cached. A child killed by
another (the OOM killer's SIGKILL, a supervisor's SIGTERM) says nothing about the build."""

_PROBE_TOKENS = 4
_OUT_OF_MEMORY = re.compile(
    r"std::bad_alloc|failed to allocate|out of memory|mem_buffer != NULL|cannot allocate memory",
    re.IGNORECASE,
)
"""What llama.cpp writes before it aborts for want of memory (``GGML_ASSERT(ctx->mem_buffer != NULL)``,
``std::bad_alloc``): an abort that says nothing about the build, and is not cached."""


def reinstall_command(version: str) -> str:
    """The shell command that rebuilds llama-cpp-python ``version`` portably, bypassing pip's wheel cache."""
    return (
        f'CMAKE_ARGS="{PORTABLE_CMAKE_ARGS}" pip install --force-reinstall --no-cache-dir '
        f'--no-deps "llama-cpp-python=={version}"'
    )


def build_identity(model_path: Path) -> dict[str, Any]:
    """What the verdict depends on: the llama.cpp build, this CPU, the model file."""
    import llama_cpp

    library = Path(llama_cpp.__file__).parent / "lib"
    libraries = sorted(library.glob("*.so*")) if library.is_dir() else []
    model = model_path.stat()
    return {
        "llama_cpp": llama_cpp.__version__,
        "libraries": [[p.name, p.stat().st_size, p.stat().st_mtime_ns] for p in libraries],
        "system_info": llama_cpp.llama_print_system_info().decode(errors="replace"),
        "cpu": _cpu_description(),
        "machine": platform.machine(),
        "model": [str(model_path.resolve()), model.st_size, model.st_mtime_ns],
    }


def _cpu_description(cpuinfo: Path = Path("/proc/cpuinfo")) -> list[str]:
    """The CPU's model name and feature flags (from the first processor), or the platform's name."""
    try:
        lines = cpuinfo.read_text(errors="replace").split("\n\n", 1)[0].splitlines()
    except OSError:
        return [platform.processor()]
    keys = ("model name", "flags", "Features", "CPU implementer", "CPU part")
    return [line.strip() for line in lines if line.split(":", 1)[0].strip() in keys]


def verdict_path(identity: Mapping[str, Any], cache: Path) -> Path:
    """The file holding the verdict for ``identity``."""
    key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:32]
    return cache / "llama-build-checks" / f"{key}.json"


def check_llama_build(
    model_path: str | Path,
    *,
    cache: Path | None = None,
    probe: Sequence[str] | None = None,
    timeout: float = PROBE_TIMEOUT,
) -> None:
    """Raise ``ConfigurationError`` if this llama.cpp build cannot generate with ``model_path`` here.

    The first call for a build, CPU and model runs ``probe`` (default: this module as a child process)
    and caches the verdict; later calls read it. A child that fails for another reason than a crash
    (an unreadable file, say) is not cached: loading the model reports that error properly.
    """
    from explicit_react.models import cache_dir

    model = Path(model_path)
    identity = build_identity(model)
    path = verdict_path(identity, cache or cache_dir())
    verdict = _cached_verdict(path)
    if verdict is None:
        verdict = _run_probe(list(probe or [sys.executable, "-m", __name__, str(model)]), identity, timeout)
        if verdict is None:
            return
        write_cache_file(path, json.dumps(verdict, indent=1).encode())
    if not verdict["ok"]:
        raise ConfigurationError(
            f"{verdict['message']} (this verdict is kept in {path}: delete it to check again)"
        )


def _cached_verdict(path: Path) -> dict[str, Any] | None:
    """The verdict cached in ``path``, or ``None`` when there is none or it cannot be trusted (a
    damaged file, or a crash verdict for a signal that says nothing about the build): checked again."""
    try:
        verdict = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # missing, unreadable, or not JSON
        return None
    if not isinstance(verdict, dict) or not isinstance(verdict.get("ok"), bool):
        return None
    if verdict["ok"]:
        return verdict
    crashed = verdict.get("signal") in CRASH_SIGNALS
    return verdict if crashed and isinstance(verdict.get("message"), str) else None


def _run_probe(command: list[str], identity: Mapping[str, Any], timeout: float) -> dict[str, Any] | None:
    """Run the child; the verdict to cache, or ``None`` when the child failed without crashing."""
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired as error:
        raise ConfigurationError(
            f"llama.cpp did not finish a {_PROBE_TOKENS}-token test generation in {timeout:.0f} s; "
            "the machine may be overloaded (nothing was cached: the next run checks again)"
        ) from error
    if done.returncode == 0:
        return {"ok": True, "identity": dict(identity)}
    if done.returncode > 0:
        return None
    name = _signal_name(-done.returncode)
    said = " | ".join(line.strip() for line in done.stderr.strip().splitlines()[-3:])[-600:]
    if name == "SIGABRT" and _OUT_OF_MEMORY.search(done.stderr):
        raise ConfigurationError(
            f"The llama.cpp test generation aborted for lack of memory ({said}); nothing was cached: "
            "the next run checks again"
        )
    if name not in CRASH_SIGNALS:
        raise ConfigurationError(
            f"The llama.cpp test generation was killed ({name}) before it finished, perhaps for lack of "
            "memory (nothing was cached: the next run checks again)"
        )
    message = (
        f"The installed llama.cpp build crashed ({name}) generating {_PROBE_TOKENS} test tokens on this "
        f"CPU: it was probably built for another CPU. Reinstall a portable build: "
        f"{reinstall_command(str(identity['llama_cpp']))}"
    )
    if said:
        message += f" (it said: {said})"
    return {"ok": False, "message": message, "signal": name, "identity": dict(identity)}


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _probe(model_path: str) -> None:
    """The child's side: load the model and generate a few tokens (a crash kills only this process)."""
    import llama_cpp

    llama = llama_cpp.Llama(model_path=model_path, n_ctx=128, n_batch=32, verbose=False)
    llama.create_completion("The", max_tokens=_PROBE_TOKENS, temperature=0.0)


if __name__ == "__main__":
    import faulthandler

    faulthandler.disable()  # the parent reports a crash; a native traceback would only be noise
    _probe(sys.argv[1])
