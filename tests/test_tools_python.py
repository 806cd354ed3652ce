"""The Python sandbox: a real child process with limits, a clean environment and a temporary cwd."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

import pytest

from explicit_react.tools import PythonREPLTool, _sandbox
from explicit_react.tools._child_pipes import Capture, last_line_text, reported_exit
from explicit_react.tools.python import RUNNER, sandbox_environment, signal_that_ended, strip_code_fence


def python_tool(**settings: Any) -> PythonREPLTool:
    """The tool, isolated where this machine allows it and unisolated elsewhere: these tests check
    what it does for every user (tests/test_security.py checks the isolation itself)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PythonREPLTool(allow_unisolated=True, **settings)


FAST = python_tool(timeout=5)


def running_with(marker: str, within: float = 3.0) -> list[int]:
    """PIDs (as this machine sees them) of processes whose command line holds ``marker``, once
    none is left or ``within`` seconds have passed; zombies waiting to be reaped do not count."""
    deadline = time.monotonic() + within
    while True:
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                alive = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] not in {"Z", "X"}
                if alive and marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def test_prints_stdout_and_the_final_expression() -> None:
    assert FAST.invoke("x = 6 * 7\nprint('x is', x)\nx + 1") == "x is 42\n43"


def test_a_call_leaves_no_pipe_open() -> None:
    """stdout and stderr of the child were left to the garbage collector: a ResourceWarning for
    each, on every sync call."""
    import gc

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert FAST.invoke("print('hi')") == "hi"
        assert asyncio.run(FAST.ainvoke("print('hi')")) == "hi"
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


def test_none_final_expression_prints_nothing_and_no_output_is_explained() -> None:
    assert FAST.invoke("None") == "(no output; print() the values you want to see)"


def test_code_fences_are_stripped() -> None:
    assert FAST.invoke({"code": "```python\nprint('fenced')\n```"}) == "fenced"
    assert strip_code_fence("```\n1 + 1\n```") == "1 + 1"
    assert strip_code_fence("```py\na = 1\n") == "a = 1"
    assert strip_code_fence("print('```')") == "print('```')"


def test_exception_gives_error_headline_then_stdout_then_traceback() -> None:
    observation = FAST.invoke("print('before')\n1 / 0")
    lines = observation.splitlines()
    assert lines[0] == "Error: ZeroDivisionError: division by zero"
    assert lines[1] == "before"
    assert lines[2] == "Traceback (most recent call last):"
    assert 'File "<code>", line 2, in <module>' in observation
    assert "_python_child" not in observation  # the runner's own frame is hidden


def test_syntax_error_and_stderr() -> None:
    assert FAST.invoke("def (").startswith("Error: SyntaxError")
    assert FAST.invoke("import sys\nprint('warn', file=sys.stderr)") == "stderr:\nwarn"
    assert FAST.invoke("import sys\nsys.exit(3)") == "Error: the code exited with status 3"


def test_runs_in_a_fresh_temporary_directory_that_is_removed() -> None:
    parent_cwd = os.getcwd()
    observation = FAST.invoke(
        "import os\nopen('made.txt', 'w').write('x')\nprint(os.getcwd())\nos.listdir('.')"
    )
    child_cwd, listing = observation.splitlines()
    assert child_cwd != parent_cwd
    assert "explicit_react_python_" in child_cwd
    assert listing == "['made.txt']"
    assert not Path(child_cwd).exists()
    assert os.getcwd() == parent_cwd
    assert not Path(parent_cwd, "made.txt").exists()


def test_secrets_do_not_reach_the_child(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-123456")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_faketoken")
    monkeypatch.setenv("DB_PASSWORD", "hunter2")
    monkeypatch.setenv("MY_SECRET_THING", "classified")
    monkeypatch.setenv("HARMLESS_BUT_UNNEEDED", "visible?")
    parent_env = dict(os.environ)
    tool = python_tool(timeout=5, extra_env={"GREETING": "hi", "EXTRA_TOKEN": "leak"})
    observation = tool.invoke("import os\nprint(dict(os.environ))")
    for secret in ("sk-fake-123456", "ghp_faketoken", "hunter2", "classified", "leak", "visible?"):
        assert secret not in observation
    assert "'GREETING': 'hi'" in observation
    assert dict(os.environ) == parent_env


def test_sandbox_environment_keeps_only_what_python_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    environment = sandbox_environment("/tmp/home")
    assert environment["PATH"] == "/usr/bin"
    assert environment["HOME"] == environment["TMPDIR"] == "/tmp/home"
    assert "AWS_SECRET_ACCESS_KEY" not in environment
    assert set(environment) <= {"PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "HOME", "TMPDIR"}


def test_infinite_loop_is_killed_at_the_timeout() -> None:
    started = time.monotonic()
    observation = python_tool(timeout=1).invoke("print('started', flush=True)\nwhile True:\n    pass")
    assert observation.startswith("Error: timed out after 1s; the process and its children were killed")
    assert "started" in observation
    assert time.monotonic() - started < 3


def test_output_printed_before_a_timeout_is_kept() -> None:
    """Output is not left in the child's buffer when the child is killed (no flush=True needed)."""
    tool = python_tool(timeout=1)
    observation = tool.invoke("print('step 1 done: 42')\nwhile True:\n    pass")
    assert observation.splitlines()[:2] == [
        "Error: timed out after 1s; the process and its children were killed",
        "step 1 done: 42",
    ]
    slept = asyncio.run(tool.ainvoke("import time\nprint('answer so far: 42')\ntime.sleep(30)"))
    assert slept.splitlines()[1:2] == ["answer so far: 42"]


def test_output_printed_before_a_crash_is_kept() -> None:
    observation = FAST.invoke("print('before crash')\nimport ctypes\nctypes.string_at(0)")
    assert observation == "Error: the process was killed by SIGSEGV\nbefore crash"


def test_code_the_parser_cannot_hold_is_named_without_the_runners_frames() -> None:
    observation = FAST.invoke("-" * 200_000 + "1")  # CPython's parser runs out of memory on this
    assert observation.startswith(
        "Error: MemoryError: the code is too long or too deeply nested to compile (the memory limit is"
    )
    assert "Traceback" not in observation and "<string>" not in observation
    assert observation.count("too deeply nested") == 1  # the headline, not again as stderr


def test_memory_bomb_is_stopped_by_the_limit() -> None:
    tool = python_tool(timeout=5, memory_limit_mb=200)
    observation = tool.invoke("chunks = []\nwhile True:\n    chunks.append(bytearray(50 * 1024 * 1024))")
    assert observation.startswith("Error: MemoryError (the memory limit is 200 MB)")


def sleepers(marker: str) -> str:
    """Code that starts a child process and a forked copy, both sleeping, named by ``marker``."""
    return (
        "import os, subprocess, sys, time\n"
        f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', '{marker}'],\n"
        "                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "if os.fork() == 0:\n"
        f"    os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(60)', '{marker}'])\n"
        "time.sleep(0.5)\n"
        "print('started', flush=True)\n"
    )


def test_children_are_killed_on_timeout() -> None:
    marker = f"sleeper-{uuid.uuid4().hex}"
    observation = python_tool(timeout=1.5).invoke(sleepers(marker) + "time.sleep(60)\n")
    assert observation.startswith("Error: timed out")
    assert "started" in observation
    assert running_with(marker) == []


def test_background_children_do_not_outlive_a_successful_run() -> None:
    marker = f"sleeper-{uuid.uuid4().hex}"
    assert FAST.invoke(sleepers(marker)) == "started"
    assert running_with(marker) == []


def test_output_is_cut_to_the_maximum_size() -> None:
    observation = python_tool(timeout=5, max_output_chars=200).invoke("print('x' * 100_000)")
    assert observation.startswith("x" * 150)
    assert observation.endswith("\n[... output cut: 100,001 bytes in all]")
    assert len(observation) == 200


@pytest.mark.parametrize("limit", [100, 150, 400])
def test_no_observation_is_longer_than_the_maximum(limit: int) -> None:
    code = "import sys\nprint('o' * 10_000)\nprint('e' * 10_000, file=sys.stderr)\nraise ValueError('v' * 10_000)"
    observation = python_tool(timeout=5, max_output_chars=limit).invoke(code)
    assert observation.startswith("Error: ValueError")
    assert len(observation) <= limit


def test_input_reads_end_of_file_instead_of_hanging() -> None:
    assert FAST.invoke("input()").startswith("Error: EOFError")


def test_the_parent_process_is_untouched(tmp_path: Path) -> None:
    sentinel = tmp_path / "sentinel.txt"
    sentinel.write_text("keep")
    parent_cwd, parent_env, parent_pid = os.getcwd(), dict(os.environ), os.getpid()
    FAST.invoke(
        f"import os\nos.chdir('/')\nos.environ['INJECTED'] = '1'\nprint(os.getpid())\nopen({str(sentinel)!r}).read()"
    )
    assert os.getcwd() == parent_cwd
    assert dict(os.environ) == parent_env
    assert os.getpid() == parent_pid
    assert sentinel.read_text() == "keep"


def test_async_run_and_async_timeout() -> None:
    async def scenario() -> tuple[str, str]:
        ok = await FAST.ainvoke({"code": "print(sum(range(10)))"})
        slow = await python_tool(timeout=0.5).ainvoke("import time\ntime.sleep(30)")
        return ok, slow

    ok, slow = asyncio.run(scenario())
    assert ok == "45"
    assert slow.startswith("Error: timed out after 0.5s")


def test_async_output_is_cut_and_stderr_kept() -> None:
    code = "import sys\nprint('x' * 100_000)\nprint('warn', file=sys.stderr)"
    observation = asyncio.run(python_tool(timeout=5, max_output_chars=200).ainvoke(code))
    assert observation.startswith("x" * 100)
    assert observation.endswith("\n[... output cut: 100,001 bytes in all]\nstderr:\nwarn")
    assert len(observation) <= 200


@pytest.mark.parametrize("run", ["sync", "async"])
def test_the_agent_does_not_wake_up_for_every_line_printed(run: str) -> None:
    """The child's output is line-buffered: the agent reads it in batches, not a line at a time."""
    tool, code = python_tool(timeout=30), "for i in range(10**6):\n    print(i)"
    started = time.process_time()  # the CPU time of this process (the agent), all its threads
    observation = tool.invoke(code) if run == "sync" else asyncio.run(tool.ainvoke(code))
    assert observation.endswith("[... output cut: 6,888,890 bytes in all]")
    assert time.process_time() - started < 0.3  # about 0.02 s; 0.5 to 1 s when woken for each line


def test_empty_code_and_bad_arguments() -> None:
    assert FAST.invoke("```python\n```").startswith("Error: no code given")
    assert FAST.invoke({"source": "1"}).startswith("Error: invalid tool arguments")


@pytest.mark.parametrize("surrogate", ["\ud800", "\udc80", "\udcff"])
def test_code_that_is_not_valid_unicode_is_refused_by_the_argument_check(surrogate: str) -> None:
    """Even the surrogates that stand for bytes (kept in file paths and contents) are no Python code:
    the runner could not compile it."""
    observation = FAST.invoke({"code": f"print('a{surrogate}b')"})
    assert observation.startswith("Error: invalid tool arguments (code: Value error, position 8 holds")
    assert "lone surrogate" in observation
    assert "Traceback" not in observation


@pytest.mark.parametrize("allow_unisolated", [False, True])
def test_the_isolation_warning_points_at_the_line_that_creates_the_tool(
    monkeypatch: pytest.MonkeyPatch, allow_unisolated: bool
) -> None:
    missing = _sandbox.Support(False, "bubblewrap (bwrap) is not installed")
    monkeypatch.setattr(_sandbox, "support", lambda python: missing)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        PythonREPLTool(allow_unisolated=allow_unisolated)
    assert [str(warning.message).split(":")[0] for warning in caught] == ["python_repl cannot isolate code"]
    assert caught[0].filename == __file__


def test_an_error_message_longer_than_the_kept_stderr_still_names_the_exception() -> None:
    """The traceback's last line is 110 KB long: more than the stderr tail the tool keeps (64 KB),
    so the tail no longer holds the start of the line, which names the exception."""
    observation = FAST.invoke("rows = list(range(20000))\nraise ValueError('bad rows: ' + repr(rows))")
    assert observation.startswith("Error: ValueError: bad rows: [0, 1, 2, 3, 4, ")
    assert len(observation.splitlines()[0]) == 4000 // 3
    assert len(observation) <= 4000


@pytest.mark.parametrize("piece", [1, 7, 4096, 65536])
def test_stderr_keeps_the_start_of_its_last_line_that_is_not_blank(piece: int) -> None:
    output = b"Traceback (most recent call last):\n  ...\nValueError: " + b"9, " * 40_000 + b"\n\n  \n"
    capture = Capture(100, 1000, line_head=50)
    for start in range(0, len(output), piece):
        capture.add(output[start : start + piece])
    assert capture.last_line == b"ValueError: " + b"9, " * 12 + b"9,"  # its first 50 bytes
    assert last_line_text(capture, 20) == "ValueError: 9, 9, 9,"
    capture.add(b"unfinished")  # a line not ended yet counts once it is not blank
    assert capture.last_line == b"unfinished"


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("import sys\nsys.exit(137)", "Error: the code exited with status 137"),
        ("import sys\nsys.exit(130)", "Error: the code exited with status 130"),
        ("raise SystemExit(129)", "Error: the code exited with status 129"),
        ("import os\nos._exit(137)", "Error: the code exited with status 137"),
        (
            "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
            "Error: the process was killed (SIGKILL), probably by the memory or CPU limit",
        ),
        (
            "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)",
            "Error: the process was killed by SIGTERM",
        ),
        (  # a forked process that exits with 137 speaks not for the code, which was then killed
            "import os, signal\nif os.fork() == 0:\n    os._exit(137)\nos.wait()\nos.kill(os.getpid(), signal.SIGKILL)",
            "Error: the process was killed (SIGKILL), probably by the memory or CPU limit",
        ),
    ],
)
def test_an_exit_status_above_128_is_told_from_a_signal(code: str, expected: str) -> None:
    """In the sandbox bubblewrap reports a child killed by signal N as the status 128 + N, which
    sys.exit(128 + N) gives too: sys.exit(137) read as "killed (SIGKILL) by the memory limit"."""
    assert FAST.invoke(code) == expected


def test_only_a_status_the_runner_did_not_report_is_read_as_a_signal() -> None:
    """The parent's side of that distinction, checked also on machines without bubblewrap."""
    assert signal_that_ended(137, isolated=True, reported_exit=None) == signal.SIGKILL
    assert signal_that_ended(137, isolated=True, reported_exit=137) is None  # sys.exit(137)
    assert signal_that_ended(137, isolated=True, reported_exit=0) == signal.SIGKILL  # killed after
    assert signal_that_ended(137, isolated=False, reported_exit=None) is None  # unisolated: an exit
    assert signal_that_ended(-signal.SIGSEGV, isolated=False, reported_exit=None) == signal.SIGSEGV
    assert signal_that_ended(3, isolated=True, reported_exit=None) is None
    assert signal_that_ended(200, isolated=True, reported_exit=None) is None  # no such signal


@pytest.mark.parametrize(
    ("code", "reported"),
    [
        ("print('ok')", 0),
        ("import sys\nsys.exit(137)", 137),
        ("import sys\nsys.exit(-1)", 255),
        ("import sys\nsys.exit('bye')", 1),
        ("1 / 0", 1),
        ("import os\nos._exit(140)", 140),
        ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", None),
        (
            "import os, signal\nif os.fork() == 0:\n    os._exit(7)\nos.wait()\nos.kill(os.getpid(), signal.SIGKILL)",
            None,
        ),
    ],
)
def test_the_runner_reports_each_exit_it_makes_and_no_signal(
    tmp_path: Path, code: str, reported: int | None
) -> None:
    """The runner itself, without a sandbox: what it writes to the report file it is given."""
    subprocess.run(
        [sys.executable, "-I", "-c", RUNNER.read_text(), "0", "0", "0", "0", "0", "", "status"],
        input=code.encode(),
        capture_output=True,
        cwd=tmp_path,
        timeout=30,
    )
    assert reported_exit(tmp_path / "status") == reported


def test_a_report_file_the_code_replaced_is_no_report(tmp_path: Path) -> None:
    """The working folder belongs to the code: a symlink or a FIFO there is not read."""
    (tmp_path / "target").write_text("137\n")
    (tmp_path / "link").symlink_to(tmp_path / "target")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "words").write_text("exited 137\n")
    assert reported_exit(tmp_path / "target") == 137
    for name in ("link", "fifo", "words", "missing"):
        assert reported_exit(tmp_path / name) is None
