"""The Python tool: runs code in a separate, resource-limited Python process, never in ours.

What the sandbox does: a fresh child interpreter per call (``python -I``), its own process group
(killed as a whole at the end, so forked children die too), a wall-clock ``timeout``, memory, CPU
and file-size limits (``setrlimit``), a fresh temporary working directory that is deleted
afterwards, an environment holding only what Python needs (nothing named like a secret), and output
cut to ``max_output_chars``.

What it does NOT do: it is not a security boundary against a determined attacker. The code runs
as the same user as the agent, can read and write any file that user can (the working directory
is only where it starts), can use the network, can start a process in a new session that escapes
the process-group kill, and is not limited in the number of processes it starts. Run the agent in
a container or VM if the code may be hostile.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForToolRun, CallbackManagerForToolRun
from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from explicit_react.tools._errors import tool_error, validation_error_observation

RUNNER = Path(__file__).with_name("_python_child.py")
SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
PASSED_ENVIRONMENT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
TRACEBACK_LINES = 12

_FENCE = re.compile(r"^\s*```[ \t]*(?:python3?|py)?[ \t]*\n(?P<code>.*?)(?:\n?```\s*)?$", re.DOTALL)


def strip_code_fence(code: str) -> str:
    """Remove a surrounding ``` / ```python fence (a missing closing fence is tolerated)."""
    match = _FENCE.match(code)
    return match.group("code") if match else code


def is_secret_name(name: str) -> bool:
    """True for environment variable names that look like credentials."""
    upper = name.upper()
    return any(marker in upper for marker in SECRET_MARKERS)


def sandbox_environment(home: str, extra: Mapping[str, str] = {}) -> dict[str, str]:
    """The child's environment: a few harmless variables, ``extra``, and no secret-looking names."""
    environment = {name: os.environ[name] for name in PASSED_ENVIRONMENT if name in os.environ}
    environment.update(extra)
    environment.update(HOME=home, TMPDIR=home)
    return {name: value for name, value in environment.items() if not is_secret_name(name)}


class PythonInput(BaseModel):
    """Arguments of the Python tool."""

    code: str = Field(description="Python code to run; print() what you want to see")


class PythonREPLTool(BaseTool):
    """Runs Python code in a separate, resource-limited process and returns its output."""

    name: str = "python_repl"
    description: str = (
        "Run Python code in a fresh process and return what it prints "
        "(the value of a final expression is shown too). Input: Python code."
    )
    args_schema: type[BaseModel] = PythonInput
    handle_tool_error: bool = True
    handle_validation_error: Any = validation_error_observation

    timeout: float = Field(default=10.0, gt=0, description="wall-clock seconds before the process is killed")
    memory_limit_mb: int = Field(default=512, ge=64, description="address-space limit of the child")
    max_file_size_mb: int = Field(
        default=16, ge=1, description="largest file (or output) the child may write"
    )
    max_output_chars: int = Field(default=4000, ge=100, description="output longer than this is cut")
    python_executable: str = sys.executable
    extra_env: dict[str, str] = Field(
        default_factory=dict, description="more variables (secrets still removed)"
    )

    def _run(self, code: str, run_manager: CallbackManagerForToolRun | None = None) -> str:
        with self._sandbox(code) as (run, source):
            try:
                process = subprocess.Popen(run.command, **run.popen_options())
            except OSError as exc:
                raise tool_error(f"could not start Python: {exc}") from None
            try:
                process.communicate(source, timeout=self.timeout)
            except subprocess.TimeoutExpired:
                run.timed_out = True
            finally:
                _kill_process_group(process.pid)
                process.wait()
            return run.report(process.returncode)

    async def _arun(self, code: str, run_manager: AsyncCallbackManagerForToolRun | None = None) -> str:
        with self._sandbox(code) as (run, source):
            try:
                process = await asyncio.create_subprocess_exec(*run.command, **run.popen_options())
            except OSError as exc:
                raise tool_error(f"could not start Python: {exc}") from None
            try:
                await asyncio.wait_for(process.communicate(source), self.timeout)
            except asyncio.TimeoutError:
                run.timed_out = True
            finally:  # also on cancellation: never leave the process group running
                _kill_process_group(process.pid)
                await process.wait()
            return run.report(process.returncode if process.returncode is not None else -signal.SIGKILL)

    @contextlib.contextmanager
    def _sandbox(self, code: str) -> Iterator[tuple[_SandboxRun, bytes]]:
        code = strip_code_fence(code)
        if not code.strip():
            raise tool_error("no code given; send Python code to run")
        scratch = tempfile.mkdtemp(prefix="explicit_react_python_")
        try:
            yield _SandboxRun(tool=self, scratch=Path(scratch)), code.encode("utf-8", "surrogateescape")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


@dataclass
class _SandboxRun:
    """One run's scratch space (working directory and output files) and how to read the outcome."""

    tool: PythonREPLTool
    scratch: Path
    timed_out: bool = False
    _files: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.workdir.mkdir()

    @property
    def workdir(self) -> Path:
        return self.scratch / "work"

    @property
    def command(self) -> list[str]:
        cpu_seconds = math.ceil(self.tool.timeout) + 1
        return [
            self.tool.python_executable,
            "-I",  # isolated: ignore PYTHON* variables and the user's site-packages
            "-X",
            "utf8",
            str(RUNNER),
            str(self.tool.memory_limit_mb * 1024 * 1024),
            str(cpu_seconds),
            str(self.tool.max_file_size_mb * 1024 * 1024),
        ]

    def popen_options(self) -> dict[str, Any]:
        """Options shared by subprocess.Popen and asyncio.create_subprocess_exec."""
        stdout = open(self.scratch / "stdout", "wb")  # noqa: SIM115 - closed in report()
        stderr = open(self.scratch / "stderr", "wb")  # noqa: SIM115
        self._files = [stdout, stderr]
        return {
            "stdin": subprocess.PIPE,
            "stdout": stdout,
            "stderr": stderr,
            "cwd": self.workdir,
            "env": sandbox_environment(str(self.workdir), self.tool.extra_env),
            "start_new_session": True,  # its own process group, so one kill reaches its children
            "close_fds": True,
        }

    def report(self, returncode: int) -> str:
        """Error headline (if any), then stdout, then the last lines of stderr."""
        for handle in self._files:
            handle.close()
        stdout = _read_head(self.scratch / "stdout", self.tool.max_output_chars)
        stderr = _read_tail(self.scratch / "stderr", self.tool.max_output_chars // 2)
        headline = self._failure(returncode, stderr)
        parts = []
        if headline:
            parts.append(f"Error: {headline}")
        if stdout:
            parts.append(stdout)
        if stderr and not (headline and stderr.strip() == headline):
            parts.append(stderr if stderr.startswith("Traceback") else f"stderr:\n{stderr}")
        return "\n".join(parts) if parts else "(no output; print() the values you want to see)"

    def _failure(self, returncode: int, stderr: str) -> str | None:
        tool = self.tool
        if self.timed_out:
            return f"timed out after {tool.timeout:g}s; the process and its children were killed"
        if returncode < 0:
            name = _signal_name(-returncode)
            if name == "SIGXCPU":
                return "CPU time limit exceeded; the process was killed"
            if name == "SIGKILL":
                return "the process was killed (SIGKILL), probably by the memory or CPU limit"
            return f"the process was killed by {name}"
        if returncode == 0:
            return None
        lines = stderr.strip().splitlines()
        last = lines[-1] if lines else f"the code exited with status {returncode}"
        if last.startswith("MemoryError"):
            last += f" (the memory limit is {tool.memory_limit_mb} MB)"
        return last


def _kill_process_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _read_head(path: Path, max_chars: int) -> str:
    with open(path, "rb") as handle:
        data = handle.read(max_chars * 4 + 4)
        size = os.fstat(handle.fileno()).st_size
    text = data.decode("utf-8", "replace")
    if len(text) > max_chars or size > len(data):
        return text[:max_chars] + f"\n[... output cut at {max_chars} characters of {size} bytes]"
    return text.rstrip("\n")


def _read_tail(path: Path, max_chars: int) -> str:
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        handle.seek(max(0, size - max_chars * 4))
        text = handle.read().decode("utf-8", "replace")
    lines = text.rstrip("\n").splitlines()[-TRACEBACK_LINES:]
    return "\n".join(lines)[-max_chars:]
