"""The Python tool: runs code in a separate, resource-limited and isolated process, never in ours.

On Linux with bubblewrap (``_sandbox.py``) the child runs in its own namespaces: it cannot see,
signal or read the ``/proc`` of the agent or any other process, has no network unless
``allow_network=True``, sees only the system folders and its interpreter's (with a virtualenv's
packages), read-only, and its fresh working folder, runs as an unprivileged user, cannot use the
kernel's keyrings or create namespaces (a seccomp filter), and a cgroup bounds the memory and the
number of processes of everything it starts. Where that is not available the tool
says so when it is created, and refuses to run code unless ``allow_unisolated=True`` (then the child
runs as the agent's user, with only the limits below: treat that as no security boundary).

Always: a fresh interpreter per call (``python -I``), a wall-clock ``timeout``, memory, CPU and
file-size limits per process (``setrlimit``), an environment holding only what Python needs
(nothing named like a secret), output read through pipes the agent holds and cut to
``max_output_chars`` (``_child_pipes.py``), and at the end (or when the agent stops waiting) every
process the call started is killed and the working folder deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path
from typing import Any

import langchain_core
import pydantic
from langchain_core.callbacks import AsyncCallbackManagerForToolRun, CallbackManagerForToolRun
from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from explicit_react.deadline import abandoned
from explicit_react.tools import _sandbox, _seccomp
from explicit_react.tools._child_pipes import (
    Capture,
    awrite_all,
    head_text,
    in_thread,
    last_line_text,
    pump_in_thread,
    pump_pipe,
    reported_exit,
    tail_text,
    write_all,
)
from explicit_react.tools._errors import Text, tool_error, validation_error_observation

RUNNER = Path(__file__).with_name("_python_child.py")
EXIT_REPORT = ".explicit_react_exit_status"  # in the working folder: the runner's exit status
SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")  # as redaction.py
PASSED_ENVIRONMENT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")

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

    # Text, not FileText: the surrogates that stand for bytes that are not UTF-8 are no Python code
    # (the child could not compile it), so they are refused with the other lone surrogates.
    code: Text = Field(description="Python code to run; print() what you want to see")


class PythonREPLTool(BaseTool):
    """Runs Python code in a separate, isolated, resource-limited process and returns its output.

    Creating it probes the machine once (a few tens of milliseconds) and warns when code cannot be
    isolated; ``isolation`` says what is in effect."""

    name: str = "python_repl"
    description: str = (
        "Run Python code in a fresh process and return what it prints "
        "(the value of a final expression is shown too). Input: Python code."
    )
    args_schema: type[BaseModel] = PythonInput
    handle_tool_error: bool = True
    handle_validation_error: Any = validation_error_observation

    timeout: float = Field(default=10.0, gt=0, description="wall-clock seconds before the process is killed")
    memory_limit_mb: int = Field(
        default=512,
        ge=64,
        description="memory of the child: all its processes together when a cgroup is available",
    )
    max_processes: int = Field(
        default=32, ge=2, description="processes (and threads) the child may run at once"
    )
    max_file_size_mb: int = Field(
        default=16, ge=1, description="largest file (or output) the child may write"
    )
    max_output_chars: int = Field(
        default=4000, ge=100, description="the observation is never longer than this"
    )
    python_executable: str = sys.executable
    extra_env: dict[str, str] = Field(
        default_factory=dict, description="more variables (secrets still removed)"
    )
    allow_network: bool = Field(default=False, description="let isolated code use the network")
    site_packages: bool = Field(
        default=True,
        description="when python_executable is a virtualenv's, run isolated code in that virtualenv "
        "(its site-packages shown read-only)",
    )
    allow_unisolated: bool = Field(
        default=False, description="where isolation is unavailable, run code anyway (as the agent's user)"
    )

    def model_post_init(self, context: Any, /) -> None:
        """Probe the sandbox and say clearly, once per tool, when code cannot be isolated."""
        super().model_post_init(context)
        found = _sandbox.support(self.python_executable)
        if not found.isolated:
            consequence = (
                "code runs UNISOLATED as the agent's user (allow_unisolated=True)"
                if self.allow_unisolated
                else "calls are refused; pass allow_unisolated=True to run code without isolation"
            )
            warnings.warn(
                f"python_repl cannot isolate code: {found.description}; {consequence}",
                stacklevel=_caller_stacklevel(),
            )

    @property
    def isolation(self) -> str:
        """What isolation this tool's calls get, in one sentence."""
        found = _sandbox.support(self.python_executable)
        if found.isolated:
            venv = self._venv()
            shown = f"; the virtualenv {venv.config.parent} (its site-packages, read-only)" if venv else ""
            return found.description + shown
        return f"none ({found.description})" + ("" if self.allow_unisolated else "; calls are refused")

    def _venv(self) -> _sandbox.Virtualenv | None:
        return _sandbox.virtualenv(self.python_executable) if self.site_packages else None

    def _run(self, code: str, run_manager: CallbackManagerForToolRun | None = None) -> str:
        given_up = abandoned() or threading.Event()  # set when the agent stops waiting for this call
        with self._sandbox(code) as run:
            try:
                process = subprocess.Popen(run.command, **run.popen_options())
            except OSError as exc:
                raise tool_error(f"could not start Python: {exc}") from None
            pumps = [
                threading.Thread(target=write_all, args=(process.stdin, run.source), daemon=True),
                threading.Thread(target=pump_pipe, args=(process.stdout, run.stdout), daemon=True),
                threading.Thread(target=pump_pipe, args=(process.stderr, run.stderr), daemon=True),
            ]
            for pump in pumps:
                pump.start()
            try:
                deadline = time.monotonic() + self.timeout
                while process.poll() is None and not given_up.wait(0.02):
                    if time.monotonic() >= deadline:
                        run.timed_out = True
                        break
            finally:
                run.kill(process.pid)
                process.wait()
                for pump in pumps:
                    pump.join(1.0)
            return run.report(process.returncode)

    async def _arun(self, code: str, run_manager: AsyncCallbackManagerForToolRun | None = None) -> str:
        cleanups: list[Callable[[], None]] = []
        try:
            return await self._arun_in(code, cleanups)
        finally:  # off the event loop: deleting 270,000 files the code made stalled it for 27 s
            for cleanup in cleanups:
                await _to_completion(cleanup)

    async def _arun_in(self, code: str, cleanups: list[Callable[[], None]]) -> str:
        with self._sandbox(code, cleanups) as run:
            # stdout and stderr are read in threads, as _run reads them: an asyncio pipe would wake
            # the event loop for every line the child prints.
            (stdout, stdout_end), (stderr, stderr_end) = os.pipe(), os.pipe()
            try:
                process = await asyncio.create_subprocess_exec(
                    *run.command, **{**run.popen_options(), "stdout": stdout_end, "stderr": stderr_end}
                )
            except BaseException as exc:
                os.close(stdout)
                os.close(stderr)
                if isinstance(exc, OSError):
                    raise tool_error(f"could not start Python: {exc}") from None
                raise
            finally:
                os.close(stdout_end)
                os.close(stderr_end)
            assert process.stdin
            pumps = [
                asyncio.ensure_future(awrite_all(process.stdin, run.source)),
                pump_in_thread(stdout, run.stdout),
                pump_in_thread(stderr, run.stderr),
            ]
            try:
                await asyncio.wait_for(process.wait(), self.timeout)
            except asyncio.TimeoutError:
                run.timed_out = True
            finally:  # also on cancellation (the agent stopped waiting): nothing is left running
                run.kill(process.pid)
                await process.wait()
                await asyncio.wait(pumps, timeout=1.0)
                for pump in pumps:
                    pump.cancel()
            return run.report(process.returncode if process.returncode is not None else -signal.SIGKILL)

    @contextlib.contextmanager
    def _sandbox(self, code: str, deferred: list[Callable[[], None]] | None = None) -> Iterator[_SandboxRun]:
        """The call's working folder, cgroup and seccomp filter around its run; removed on leaving,
        or, given ``deferred``, handed to the caller to remove (an async call does it off the loop)."""
        code = strip_code_fence(code)
        if not code.strip():
            raise tool_error("no code given; send Python code to run")
        found = _sandbox.support(self.python_executable)
        if not found.isolated and not self.allow_unisolated:
            raise tool_error(
                f"python_repl is disabled: code cannot be isolated on this machine ({found.description}). "
                "Answer without running code."
            )
        scratch = Path(tempfile.mkdtemp(prefix="explicit_react_python_"))
        cgroup = None
        try:
            if found.isolated and found.cgroups:
                cgroup = _sandbox.Cgroup.create(self.memory_limit_mb * 1024 * 1024, self.max_processes)
            program = _seccomp.sandbox_filter() if found.seccomp else None
            with _seccomp.seccomp_pipe(program) as seccomp_fd:  # read by bubblewrap as it starts
                source = code.encode("utf-8", "surrogateescape")
                yield _SandboxRun(self, scratch, source, found, cgroup, seccomp_fd)
        finally:
            cleanup = partial(_clean_up, scratch, cgroup)
            if deferred is None:
                cleanup()
            else:
                deferred.append(cleanup)


async def _to_completion(fn: Callable[[], None]) -> None:
    """Run ``fn`` in a thread that is not a daemon, and wait for it: cancelled (Ctrl-C, an outer
    timeout), the wait ends but ``fn`` does not, and the process waits for it as it exits (a daemon
    thread was killed there halfway, and the working folder was left behind)."""
    await asyncio.shield(in_thread(fn, daemon=False))


def _clean_up(scratch: Path, cgroup: _sandbox.Cgroup | None) -> None:
    """Remove a call's cgroup and working folder, once every process of it has been killed."""
    if cgroup is not None:
        cgroup.remove()
    if not _sandbox.remove_folder(scratch):
        warnings.warn(f"python_repl could not delete its working folder {scratch}", stacklevel=2)


_LIBRARY_FOLDERS = tuple(
    os.path.dirname(module.__file__ or "") + os.sep for module in (pydantic, langchain_core)
)


def _caller_stacklevel() -> int:
    """The ``stacklevel`` that makes the warning of the function calling this one name the code that
    created the tool, past this module's, pydantic's and LangChain's frames (pydantic calls
    ``model_post_init`` from its own). ``skip_file_prefixes`` would do it from Python 3.12 on."""
    level, frame = 1, sys._getframe(1)
    while frame.f_back is not None and (
        frame.f_code.co_filename == __file__ or frame.f_code.co_filename.startswith(_LIBRARY_FOLDERS)
    ):
        level, frame = level + 1, frame.f_back
    return level


@cache
def _runner_source() -> str:
    return RUNNER.read_text(encoding="utf-8")


@dataclass
class _SandboxRun:
    """One call: its scratch folder, its command, its captured output and how to end it."""

    tool: PythonREPLTool
    scratch: Path
    source: bytes
    support: _sandbox.Support
    cgroup: _sandbox.Cgroup | None
    seccomp_fd: int | None = None
    timed_out: bool = False
    stdout: Capture = field(init=False)
    stderr: Capture = field(init=False)
    workdir: Path = field(init=False)
    exit_report: Path = field(init=False)  # the file the runner writes its exit status to

    @property
    def isolated(self) -> bool:
        return self.support.isolated

    def __post_init__(self) -> None:
        limit = self.tool.max_output_chars * 4 + 4
        # stderr keeps a longer tail, and the start of its last line: the error line the headline
        # shows may itself be long, longer even than the tail.
        self.stdout, self.stderr = Capture(limit, limit), Capture(limit, max(limit, 65536), line_head=limit)
        self.workdir = _sandbox.prepare_workdir(self.scratch) if self.isolated else self.scratch / "work"
        self.workdir.mkdir(exist_ok=True)
        self.exit_report = self.workdir / EXIT_REPORT

    @property
    def command(self) -> list[str]:
        tool = self.tool
        cpu_seconds = math.ceil(tool.timeout) + 1
        # RLIMIT_NPROC counts the processes of a user: as root the child is 'nobody'; otherwise it
        # counts those of the call's own user namespace on Linux 5.14+ (support.nproc), and without
        # that it would count every process of the agent's user, so it is not set.
        nproc = tool.max_processes if self.isolated and self.support.nproc and self.cgroup is None else 0
        limits = [str(tool.memory_limit_mb * 1024 * 1024), str(cpu_seconds)]
        limits += [str(tool.max_file_size_mb * 1024 * 1024), str(nproc)]
        # The child leaves the agent's session keyring; unisolated, it installs the keyring filter
        # itself (in the sandbox bubblewrap did, before the child started).
        arch = _seccomp.architecture()
        program = None if self.isolated else _seccomp.sandbox_filter()
        limits += [str(arch.keyctl if arch else 0), program.hex() if program else ""]
        python = ["-I", "-X", "utf8", "-c", _runner_source(), *limits, EXIT_REPORT]
        if not self.isolated:
            return [tool.python_executable, *python]
        bwrap = _sandbox.bwrap_command(
            self.workdir,
            tool.python_executable,
            allow_network=tool.allow_network,
            seccomp_fd=self.seccomp_fd,
            venv=tool._venv(),
        )
        command = [*bwrap, *python]
        return self.cgroup.join_command(command) if self.cgroup else command

    def popen_options(self) -> dict[str, Any]:
        """Options shared by subprocess.Popen and asyncio.create_subprocess_exec."""
        return {
            "stdin": subprocess.PIPE,
            "stdout": subprocess.PIPE,
            "stderr": subprocess.PIPE,
            "cwd": self.workdir,
            "env": sandbox_environment(str(self.workdir), self.tool.extra_env),
            "start_new_session": True,  # its own process group, so one kill reaches its children
            "close_fds": True,
            "pass_fds": () if self.seccomp_fd is None else (self.seccomp_fd,),
        }

    def kill(self, pid: int) -> None:
        """End the call: every process it started (the whole PID namespace, the cgroup, the group)."""
        if self.cgroup is not None:
            self.cgroup.kill()
        _kill_process_group(pid)  # bwrap dies, and with it the namespace's init and everything in it

    def report(self, returncode: int) -> str:
        """Error headline (if any), then stdout, then the last lines of stderr; never longer than
        ``max_output_chars``."""
        limit = self.tool.max_output_chars
        stderr = tail_text(self.stderr, limit // 3)
        headline = self._failure(returncode)
        parts = []
        if headline:
            parts.append(f"Error: {headline}"[: limit // 3])
        if stderr and not (headline and headline.startswith(stderr.strip())):  # not one line already shown
            parts.append(stderr if stderr.startswith("Traceback") else f"stderr:\n{stderr}")
        room = limit - sum(len(part) + 1 for part in parts)
        stdout = head_text(self.stdout, room)
        if stdout:
            parts.insert(1 if headline else 0, stdout)
        observation = "\n".join(parts) if parts else "(no output; print() the values you want to see)"
        return observation[:limit]

    def _failure(self, returncode: int) -> str | None:
        tool = self.tool
        if self.timed_out:
            return f"timed out after {tool.timeout:g}s; the process and its children were killed"
        # Only a sandboxed status above 128 could be a signal: the runner's report is read for it alone.
        reported = reported_exit(self.exit_report) if self.isolated and returncode > 128 else None
        number = signal_that_ended(returncode, isolated=self.isolated, reported_exit=reported)
        if number is not None:
            name = _signal_name(number)
            if name == "SIGXCPU":
                return "CPU time limit exceeded; the process was killed"
            if name == "SIGKILL":
                if self.cgroup is not None and self.cgroup.out_of_memory():
                    return f"the memory limit ({tool.memory_limit_mb} MB for all processes) was reached; the process was killed"
                return "the process was killed (SIGKILL), probably by the memory or CPU limit"
            return f"the process was killed by {name}"
        if returncode == 0:
            return None
        # The start of the last line, not the tail's: a message longer than the tail lost its start.
        last = last_line_text(self.stderr, tool.max_output_chars)
        last = last or f"the code exited with status {returncode}"
        if last.startswith("MemoryError"):
            last += f" (the memory limit is {tool.memory_limit_mb} MB)"
        return last


def signal_that_ended(returncode: int, *, isolated: bool, reported_exit: int | None) -> int | None:
    """The number of the signal that killed the child, or ``None`` when it exited.

    Unisolated, Python gives a signal as a negative ``returncode``. In the sandbox bubblewrap exits
    with 128 + N when the child was killed by signal N, and ``sys.exit(137)`` gives 137 too: the
    runner reports the status of each exit it makes (``reported_exit``), so a status it reported is
    an exit, and only a status above 128 it did not report is a signal."""
    if returncode < 0:
        return -returncode
    if isolated and 128 < returncode <= 128 + 64 and reported_exit != returncode:
        return returncode - 128
    return None


def _kill_process_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
