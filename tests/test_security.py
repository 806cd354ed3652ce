"""Attacks on the built-in tools, each checked to be held (docs/security.md has the table).

An attack that would harm this test process if it got through (kill it, hang it, freeze it in C
code holding the GIL) runs in a child process: a harness that plays the agent, under a timeout.
The attacks on the Python sandbox's isolation run where bubblewrap can isolate (skipped with the
reason elsewhere); the others run everywhere.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import tracemalloc
import uuid
import warnings
from pathlib import Path
from typing import Any

import pytest

from explicit_react import deadline
from explicit_react.executor import ToolExecutor
from explicit_react.tools import (
    KnowledgeBaseTool,
    PythonREPLTool,
    WebSearchTool,
    _file_io,
    _sandbox,
    calculator,
    file_tools,
)
from tests.test_tools_python import python_tool, running_with

ROOT = Path(__file__).resolve().parents[1]
SUPPORT = _sandbox.support(sys.executable)
needs_isolation = pytest.mark.skipif(not SUPPORT.isolated, reason=f"no isolation here: {SUPPORT.description}")
needs_cgroup = pytest.mark.skipif(not SUPPORT.cgroups, reason=f"no cgroup limits here: {SUPPORT.description}")
CANARY = f"canary-{uuid.uuid4().hex}"


def in_child(script: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``script`` in a fresh interpreter that imports this worktree, with a secret in its
    environment; a hang is a failure (the child is killed at ``timeout``), not a frozen suite."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "EXPLICIT_REACT_TEST_API_KEY": CANARY}
    try:
        return subprocess.run(
            [sys.executable, "-c", textwrap.dedent(script)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=environment,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the attack hung the agent process for {timeout:g} s")


def sandboxed(code: str, timeout: float = 60, **settings: Any) -> tuple[int, str]:
    """The agent (a child process) runs ``code`` with python_repl; its exit status and the observation."""
    script = f"""
        import json, warnings
        warnings.simplefilter("ignore")
        from explicit_react.tools import PythonREPLTool
        tool = PythonREPLTool(allow_unisolated=True, **{settings!r})
        print(json.dumps(tool.invoke({code!r})))
    """
    done = in_child(script, timeout)
    return done.returncode, json.loads(done.stdout) if done.returncode == 0 else done.stderr


# Python sandbox: isolation ------------------------------------------------------------------------
@needs_isolation
def test_the_agents_environment_cannot_be_read_through_proc() -> None:
    code = f"""
import glob
found = []
for path in glob.glob('/proc/*/environ') + ['/proc/{os.getpid()}/environ', '/proc/1/environ']:
    try:
        if {CANARY!r}.encode() in open(path, 'rb').read():
            found.append(path)
    except OSError:
        pass
print('found', found)
"""
    status, observation = sandboxed(code)
    assert status == 0 and observation == "found []"


@needs_isolation
def test_the_agents_memory_cannot_be_read() -> None:
    code = f"open('/proc/{os.getpid()}/mem', 'rb').read(1)\nopen('/proc/1/mem', 'rb').read(1)"
    observation = python_tool(timeout=10).invoke(code)
    assert observation.startswith(("Error: FileNotFoundError", "Error: PermissionError")), observation


@needs_isolation
def test_the_agent_cannot_be_killed() -> None:
    code = """
import os, signal
for pid in [os.getppid(), 1] + [int(p) for p in os.listdir('/proc') if p.isdigit()]:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
print('tried')
"""
    status, observation = sandboxed(code)
    assert status == 0, "the agent (harness) process was killed"
    assert "tried" in observation or observation.startswith("Error: the process was killed")


@needs_isolation
def test_the_agent_process_is_not_visible() -> None:
    observation = python_tool(timeout=10).invoke(
        "import os\nprint(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()), os.getuid())"
    )
    pids, uid = observation.rsplit(" ", 1)
    assert len(json.loads(pids)) <= 2  # the sandbox's init and the code
    assert int(uid) != 0


@needs_isolation
def test_no_network_unless_allowed() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    code = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\nprint('connected')"
    try:
        observation = python_tool(timeout=10).invoke(code)
        assert observation.startswith("Error: ConnectionRefusedError") or "unreachable" in observation
        assert python_tool(timeout=10, allow_network=True).invoke(code) == "connected"
    finally:
        server.close()


@needs_isolation
def test_a_host_services_unix_socket_cannot_be_reached() -> None:
    """A network namespace does not stop connect() to a socket file; the socket's folder must not be
    there at all. The socket is open to everyone (as D-Bus's or a database's often is)."""
    folder = Path(tempfile.mkdtemp(dir="/var/tmp"))
    folder.chmod(0o755)
    path = folder / "service.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    path.chmod(0o777)
    server.listen(1)
    server.settimeout(0.5)
    code = f"""
import socket
client = socket.socket(socket.AF_UNIX)
try:
    client.connect({str(path)!r})
    client.sendall(b'GET /secrets')
    print('connected')
except OSError as error:
    print(type(error).__name__)
"""
    try:
        observation = python_tool(timeout=10).invoke(code)
        assert observation == "FileNotFoundError"
        with pytest.raises(TimeoutError):
            server.accept()
    finally:
        server.close()
        shutil.rmtree(folder)


@needs_isolation
def test_only_the_system_folders_are_visible(tmp_path: Path) -> None:
    folder = Path(tempfile.mkdtemp(dir="/var/tmp"))
    folder.chmod(0o755)
    secret = folder / "settings.env"
    secret.write_text(f"API_KEY={CANARY}\n")
    secret.chmod(0o644)
    code = f"""
import os
found = []
for path in [{str(secret)!r}, {str(ROOT / "README.md")!r}, '/home', '/var', '/run', '/srv', '/opt', '/mnt']:
    found.append(os.path.exists(path))
print(found, os.path.exists('/usr/lib'), os.path.exists('/etc/passwd'))
"""
    try:
        observation = python_tool(timeout=10).invoke(code)
        assert observation == f"{[False] * 8} True True"
        assert CANARY not in observation
    finally:
        shutil.rmtree(folder)


@needs_isolation
def test_files_outside_the_working_folder_are_read_only(tmp_path: Path) -> None:
    target = tmp_path / "open"
    target.mkdir(mode=0o777)
    target.chmod(0o777)
    code = f"""
import os
results = []
for path in [{str(target / "planted.txt")!r}, {str(ROOT / "planted.txt")!r}, '/etc/planted']:
    try:
        open(path, 'w').write('x')
        results.append('wrote')
    except OSError as error:
        results.append(type(error).__name__)
open('mine.txt', 'w').write('ok')
print(results, open('mine.txt').read())
"""
    observation = python_tool(timeout=10).invoke(code)
    assert observation.endswith(" ok")
    assert not (target / "planted.txt").exists() and not (ROOT / "planted.txt").exists()
    assert not Path("/etc/planted").exists()


@needs_isolation
def test_a_new_session_or_process_group_does_not_escape_the_kill() -> None:
    marker = f"escaper-{uuid.uuid4().hex}"
    code = f"""
import subprocess, sys, time
sleep = [sys.executable, '-c', 'import time; time.sleep(60)', '{marker}']
subprocess.Popen(sleep, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
subprocess.Popen(sleep, process_group=0, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
subprocess.Popen(['setsid', '-f'] + sleep, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(0.5)
print('started')
"""
    assert python_tool(timeout=10).invoke(code) == "started"
    assert running_with(marker) == []


@needs_cgroup
def test_memory_is_limited_for_all_processes_together() -> None:
    # Five processes each hold 100 MB at once under a 200 MB limit: unisolated, all five survive.
    code = """
import os, time
children = []
for _ in range(5):
    pid = os.fork()
    if pid == 0:
        block = bytearray(b'x') * (100 * 1024 * 1024)
        time.sleep(2)
        os._exit(0)
    children.append(pid)
survived = sum(os.waitpid(pid, 0)[1] == 0 for pid in children)
print('survived', survived)
"""
    observation = python_tool(timeout=20, memory_limit_mb=200).invoke(code)
    survived = int(observation.rsplit(" ", 1)[1]) if observation.startswith("survived") else 0
    assert survived <= 1, observation


FORKS_SIXTY = """
import os, time
started = 0
for _ in range(60):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(3)
        os._exit(0)
    started += 1
print('started', started)
"""
"""Code that starts up to 60 processes that each live 3 s, and prints how many it started."""


@needs_isolation
def test_the_number_of_processes_is_limited() -> None:
    code = FORKS_SIXTY
    observation = python_tool(timeout=20, max_processes=10).invoke(code)
    assert observation.startswith("started ")
    assert int(observation.split()[1]) < 10


# Python sandbox: what the parent trusts ----------------------------------------------------------
def test_output_files_swapped_for_a_fifo_or_a_folder_do_not_hang_the_agent() -> None:
    code = """
import os
for name in ('../stdout', '../stderr', '../work/../stdout'):
    try:
        if os.path.lexists(name):
            os.remove(name)
        os.mkfifo(name)
    except OSError:
        pass
try:
    os.mkdir('../stderr.d')
except OSError:
    pass
print('swapped')
"""
    assert python_tool(timeout=10).invoke(code) == "swapped"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_call_the_agent_gave_up_on_leaves_nothing_behind(mode: str) -> None:
    marker = f"sleeper-{uuid.uuid4().hex}"
    code = (
        "import os, subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', '{marker}'])\n"
        f"open('{marker}.txt', 'w').write(os.getcwd())\n"
        "print(os.getcwd(), flush=True)\n"
        "time.sleep(60)\n"
    )
    executor = ToolExecutor([python_tool(timeout=60)])
    started = time.monotonic()
    if mode == "sync":
        outcome = executor.execute("python_repl", code, timeout=2)
    else:
        outcome = asyncio.run(executor.aexecute("python_repl", code, timeout=2))
    assert outcome.error == "tool_timeout"
    assert time.monotonic() - started < 10
    assert running_with(marker, within=5) == []
    deadline = time.monotonic() + 5
    while (
        list(Path("/tmp").glob(f"explicit_react_python_*/work/{marker}.txt")) and time.monotonic() < deadline
    ):
        time.sleep(0.05)
    assert not list(Path("/tmp").glob(f"explicit_react_python_*/work/{marker}.txt"))


def test_unavailable_isolation_is_said_at_creation_and_refused_unless_allowed(monkeypatch: Any) -> None:
    missing = _sandbox.Support(False, "bubblewrap (bwrap) is not installed")
    monkeypatch.setattr(_sandbox, "support", lambda python: missing)
    with pytest.warns(UserWarning, match="cannot isolate code: bubblewrap .* calls are refused"):
        refusing = PythonREPLTool()
    assert refusing.invoke("print(1)").startswith("Error: python_repl is disabled: code cannot be isolated")
    assert refusing.isolation.startswith("none (")
    with pytest.warns(UserWarning, match="UNISOLATED"):
        unisolated = PythonREPLTool(allow_unisolated=True)
    assert unisolated.invoke("print(1)") == "1"


def test_isolation_is_reported() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tool = PythonREPLTool()
    assert tool.isolation.startswith("bubblewrap" if SUPPORT.isolated else "none (")


# Nothing a tool computes outruns its timeout ------------------------------------------------------
def test_no_calculator_function_freezes_the_process_on_extreme_arguments() -> None:
    script = """
        import itertools
        from explicit_react.tools import calculator
        from explicit_react.tools.calculator import FUNCTIONS, CalculationError, evaluate
        extremes = ["0", "-1", "2", "0.5", "10**1200", "-10**1200", "1e308", "-10**9", "10**9", "2**3999"]
        tried = 0
        for name in FUNCTIONS:
            for count in (1, 2, 3):
                for arguments in itertools.product(extremes, repeat=count):
                    try:
                        evaluate(f"{name}({', '.join(arguments)})")
                    except CalculationError:
                        pass
                    tried += 1
        for left, right in itertools.product(extremes, repeat=2):
            for operator in ("+", "-", "*", "/", "//", "%", "**"):
                try:
                    evaluate(f"({left}) {operator} ({right})")
                except CalculationError:
                    pass
                tried += 1
        print(tried)
        for expression in ["round(1, -10**9)", "round(1, 10**9)", "round(2.5, -10**6)"]:
            print(calculator.invoke(expression))
    """
    done = in_child(script, timeout=60)
    assert done.returncode == 0, done.stderr
    tried, *rounds = done.stdout.splitlines()
    assert int(tried) > 10_000
    assert rounds == ["Error: round() to more than 1,300 digits is not supported"] * 3


def test_catastrophic_regex_does_not_freeze_grep(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("Title\n" + "=" * 5000 + "\n" * 3 + "=" * 30 + "\n")
    script = f"""
        from explicit_react.tools import file_tools
        grep = file_tools({str(tmp_path)!r}, read_only=True)[1]
        print(grep.invoke({{"pattern": "(=+)+#", "is_regex": True}}))
        print(grep.invoke({{"pattern": "(a)\\\\1", "is_regex": True}}))
    """
    done = in_child(script, timeout=30)
    lines = done.stdout.splitlines()
    assert lines[0] == "No matches for '(=+)+#' in the workspace root."
    assert lines[1].startswith("Error: invalid regular expression") and "backreferences" in lines[1]


# File tools never damage a file -------------------------------------------------------------------
def tools(root: Path) -> dict[str, Any]:
    return {tool.name: tool for tool in file_tools(root)}


def test_an_edit_keeps_text_that_is_not_utf8_byte_for_byte(tmp_path: Path) -> None:
    original = "caf\xe9 = 1\nname = 'old'\r\n".encode("latin-1")
    (tmp_path / "legacy.py").write_bytes(original)
    observation = tools(tmp_path)["edit_file"].invoke({"path": "legacy.py", "old": "'old'", "new": "'new'"})
    assert observation == "Edited legacy.py (1 replacement)."
    assert (tmp_path / "legacy.py").read_bytes() == original.replace(b"'old'", b"'new'")


def test_a_binary_file_with_a_long_text_prefix_is_refused(tmp_path: Path) -> None:
    data = b"# header\n" * 2000 + b"\x00\x01\x02binary tail"
    (tmp_path / "blob.dat").write_bytes(data)
    by_name = tools(tmp_path)
    assert (
        by_name["edit_file"]
        .invoke({"path": "blob.dat", "old": "header", "new": "x"})
        .endswith("is a binary file")
    )
    assert by_name["read_file"].invoke({"path": "blob.dat", "start": 1990}).endswith("is a binary file")
    assert (tmp_path / "blob.dat").read_bytes() == data


def test_fifos_are_refused_without_blocking(tmp_path: Path) -> None:
    # A regression blocks in open(), a system call pytest-timeout's alarm interrupts: a failure, not a hang.
    os.mkfifo(tmp_path / "pipe")
    by_name = tools(tmp_path)
    observations = [
        by_name["write_file"].invoke({"path": "pipe", "content": "x"}),
        by_name["read_file"].invoke({"path": "pipe"}),
        by_name["edit_file"].invoke({"path": "pipe", "old": "a", "new": "b"}),
        by_name["grep"].invoke({"pattern": "x"}),
    ]
    refused = "Error: 'pipe' is not a regular file (a FIFO, a device or a socket)"
    assert observations[:3] == [refused] * 3  # read_file and edit_file said "is not a file"
    assert observations[3].startswith("No matches")


def test_a_symlink_loop_is_an_error_naming_only_relative_paths(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    (tmp_path / "notes.txt").write_text("needle\n")
    by_name = tools(tmp_path)
    for observation in (
        by_name["read_file"].invoke({"path": "a"}),
        by_name["write_file"].invoke({"path": "a/x.txt", "content": "x"}),
    ):
        assert observation.startswith("Error:") and "symlink loop" in observation
        assert str(tmp_path) not in observation
    assert by_name["grep"].invoke({"pattern": "needle"}) == "notes.txt:1: needle"
    assert by_name["search_files"].invoke({"glob": "*.txt"}) == "notes.txt"


LONE = "\ud800"  # what the JSON escape \\ud800 in an Action Input becomes: no character, not encodable


def builtin_tool_calls(root: Path) -> list[tuple[Any, dict[str, Any]]]:
    """Each built-in tool with each of its text arguments holding a lone surrogate."""
    files = tools(root)
    return [
        (files["read_file"], {"path": f"notes{LONE}.txt"}),
        (files["grep"], {"pattern": LONE}),
        (files["grep"], {"pattern": "x", "path": LONE}),
        (files["search_files"], {"glob": LONE}),
        (files["search_files"], {"dir": LONE}),
        (files["write_file"], {"path": f"a{LONE}", "content": "x"}),
        (files["write_file"], {"path": "a.txt", "content": LONE}),
        (files["edit_file"], {"path": f"a{LONE}", "old": "a", "new": "b"}),
        (files["edit_file"], {"path": "a.txt", "old": LONE, "new": "b"}),
        (files["edit_file"], {"path": "a.txt", "old": "a", "new": LONE}),
        (calculator, {"expression": f"1 + {LONE}"}),
        (WebSearchTool(), {"query": LONE}),
        (KnowledgeBaseTool(["Some text."]), {"query": LONE}),
        (PythonREPLTool(allow_unisolated=True), {"code": f"print('{LONE}')"}),
    ]


def test_a_lone_surrogate_in_any_text_argument_is_an_error_observation(tmp_path: Path) -> None:
    """Used directly (as a plain LangChain agent would), no built-in tool raises for it."""
    (tmp_path / "a.txt").write_text("a\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # python_repl warns where it cannot isolate
        calls = builtin_tool_calls(tmp_path)
    for tool, arguments in calls:
        observation = tool.invoke(arguments)
        assert observation.startswith("Error: invalid tool arguments ("), (tool.name, arguments, observation)
        assert "lone surrogate" in observation
    assert (tmp_path / "a.txt").read_text() == "a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_a_file_name_of_bytes_that_are_not_utf8_still_works(tmp_path: Path) -> None:
    """The surrogates that stand for such bytes (as Python reads the name) are not lone ones."""
    name = b"caf\xe9.txt".decode("utf-8", "surrogateescape")
    observation = tools(tmp_path)["write_file"].invoke({"path": name, "content": "x"})
    assert observation.startswith("Wrote 1 characters")
    assert (tmp_path / name).read_bytes() == b"x"


def test_written_files_are_not_executable(tmp_path: Path) -> None:
    before = os.umask(0)
    try:
        tools(tmp_path)["write_file"].invoke({"path": "run.sh", "content": "#!/bin/sh\necho hi\n"})
    finally:
        os.umask(before)
    assert (tmp_path / "run.sh").stat().st_mode & 0o777 == 0o666


def test_a_binary_file_is_read_only_up_to_its_first_nul(tmp_path: Path) -> None:
    with open(tmp_path / "image.bin", "wb") as handle:
        handle.write(b"\x00")
        handle.truncate(2 * 1024**3)  # 2 GB, sparse, no newline
    handle = open(tmp_path / "image.bin", "rb")  # noqa: SIM115
    with handle:
        lines = list(_file_io.numbered_lines(handle))
        assert lines[0][0] == 1 and b"\x00" in lines[0][1] and len(lines) == 1
        assert handle.tell() <= _file_io.LINE_READ_BYTES
    for arguments in ({"path": "image.bin"}, {"path": "image.bin", "start": 5}):
        assert tools(tmp_path)["read_file"].invoke(arguments) == "Error: 'image.bin' is a binary file"


def test_a_read_stops_when_the_agent_gives_up_on_the_call(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_bytes(b"line\n" * 100_000)
    given_up = threading.Event()
    token = deadline._abandoned.set(given_up)
    try:
        with open(tmp_path / "big.txt", "rb") as handle:
            read = 0
            for number, _ in _file_io.numbered_lines(handle):
                read = number
                if number == 10:
                    given_up.set()
    finally:
        deadline._abandoned.reset(token)
    assert read == 10


def test_reading_one_huge_line_takes_little_memory(tmp_path: Path) -> None:
    with open(tmp_path / "one_line.txt", "wb") as handle:
        for _ in range(60):
            handle.write(b"a" * 1_000_000)  # 60 MB, no newline
    read = tools(tmp_path)["read_file"]
    tracemalloc.start()
    try:
        observation = read.invoke({"path": "one_line.txt"})
        peak_mb = tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()
    assert observation.split()[0] == "1" and len(observation) < 600
    assert peak_mb < 5, f"read_file of a 60 MB line allocated {peak_mb:.0f} MB at its peak"


def test_inputs_have_size_caps(tmp_path: Path) -> None:
    by_name = tools(tmp_path)
    assert by_name["grep"].invoke({"pattern": "x" * 5000}).startswith("Error: pattern too long")
    assert (
        by_name["write_file"]
        .invoke({"path": "big.txt", "content": "x" * 10_000_001})
        .startswith("Error: content too long")
    )
    (tmp_path / "big.log").write_bytes(b"line\n" * 2_100_000)
    assert "too large to edit" in by_name["edit_file"].invoke({"path": "big.log", "old": "line", "new": "l"})


# Search -------------------------------------------------------------------------------------------
def test_search_queries_have_a_length_cap() -> None:
    calls: list[str] = []
    web = WebSearchTool(backend=lambda query, k: calls.append(query) or [])
    assert web.invoke("x" * 1_200_000).startswith("Error: query too long (1,200,000 characters, at most 500)")
    knowledge = KnowledgeBaseTool(["The office is closed on public holidays."])
    assert knowledge.invoke("holiday " * 150_000).startswith("Error: query too long")
    assert calls == []


@pytest.mark.parametrize("junk", [None, "text", 42, [None], ["a string"], [1, 2], {"title": "t"}])
def test_a_search_backend_returning_junk_is_an_error_observation(junk: Any) -> None:
    observation = WebSearchTool(backend=lambda query, k: junk, retries=0).invoke("q")
    assert observation.startswith("Error: web search failed: the search backend returned")


def test_control_characters_from_a_tool_are_shown_not_obeyed_by_the_terminal(tmp_path: Path) -> None:
    import io

    from langchain_core.tools import tool
    from rich.console import Console

    from explicit_react import ExplicitReActAgent
    from explicit_react.display import TracePrinter
    from explicit_react.testing import ScriptedChatModel
    from tests.helpers import action, final

    page = "Welcome\x1b[2J\x1b]0;pwned\x07 \x1b]8;;https://evil.example\x1b\\bank\x1b]8;;\x1b\\ \x9b31m\r\u202eok"

    @tool
    def browse(url: str) -> str:
        """Fetch a page."""
        return page

    buffer = io.StringIO()
    printer = TracePrinter(Console(file=buffer, width=200, force_terminal=True, color_system=None))
    model = ScriptedChatModel([action("browse", "x"), final("Done\x1b[8m hidden")])
    ExplicitReActAgent(model, [browse], listeners=[printer]).run("q")
    shown = buffer.getvalue()
    for raw in ("\x1b[2J", "\x1b]0;", "\x1b]8;;", "\x9b", "\r", "\u202e", "\x1b[8m"):
        assert raw not in shown
    assert (
        "Welcome\\x1b[2J\\x1b]0;pwned\\x07" in shown
        and "\\u202eok" in shown
        and "Done\\x1b[8m hidden" in shown
    )


def test_the_command_prints_an_answers_control_characters_visibly_on_a_terminal(
    monkeypatch: Any, capsys: Any
) -> None:
    import sys

    from explicit_react import cli_output
    from explicit_react.types import AgentResult, StopReason

    result = AgentResult(answer="42\x1b[2J", stop_reason=StopReason.SUCCESS, steps=[])
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    cli_output.print_result(result, as_json=False)
    assert capsys.readouterr().out == "42\\x1b[2J\n"
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)  # piped: the answer as it is
    cli_output.print_result(result, as_json=False)
    assert capsys.readouterr().out == "42\x1b[2J\n"


def test_the_commands_json_on_a_terminal_escapes_every_control_character(
    monkeypatch: Any, capsys: Any
) -> None:
    import sys

    from explicit_react import cli_output
    from explicit_react.types import AgentResult, StopReason

    result = AgentResult(answer="42\u202e\x9b2J", stop_reason=StopReason.SUCCESS, steps=[])
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)  # JSON alone left these two raw
    cli_output.print_result(result, as_json=True, indent=None)
    out = capsys.readouterr().out
    assert "\u202e" not in out and "\x9b" not in out and json.loads(out)["answer"] == "42\u202e\x9b2J"
