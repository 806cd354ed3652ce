"""Defects a review of python_repl's sandbox found, each with the code that showed it.

1. ``/dev`` was bubblewrap's own tmpfs, writable by an agent that is not root and with no size:
   640 MB went into ``/dev/shm`` past a 512 MB memory limit. Now ``/dev`` is read-only and
   ``/dev/shm`` a capped tmpfs.
2. "No network" still let the code open ``AF_VSOCK`` sockets, which reach a virtual machine's host
   whatever the network namespace.
3. System V shared memory got round the memory limit without a cgroup (four 300 MB segments).
4. Under ``ainvoke`` the working folder was deleted on the event loop: 27 s of stall for a folder
   of 270,000 files.
5. On cgroup v1 a kill by the memory limit was not seen (only ``memory.failcnt`` was read).
6. The cgroup's process limit counted bubblewrap's own two processes: ``max_processes=2`` could not
   start Python at all.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from explicit_react.tools import _sandbox
from tests.test_tools_python import python_tool

ROOT = Path(__file__).resolve().parents[1]
SUPPORT = _sandbox.support(sys.executable)
needs_isolation = pytest.mark.skipif(not SUPPORT.isolated, reason=f"no isolation here: {SUPPORT.description}")
needs_filter = pytest.mark.skipif(
    not (SUPPORT.isolated and SUPPORT.seccomp), reason="no seccomp filter on this machine"
)


@needs_isolation
def test_dev_is_read_only_and_dev_shm_is_capped() -> None:
    code = """
import errno
try:
    open('/dev/x', 'w')
except OSError as error:
    print('dev', errno.errorcode[error.errno])
with open('/dev/null', 'w') as sink:
    sink.write('still works')
with open('/dev/shm/small', 'wb') as small:
    small.write(b'x' * 1_000_000)
try:  # files of 8 MB each, under the file size limit (16 MB): the folder's size stops them
    for n in range(5):
        with open(f'/dev/shm/big{n}', 'wb') as big:
            big.write(b'x' * 8_000_000)
    print('shm unbounded')
except OSError as error:
    print('shm', errno.errorcode[error.errno])
"""
    assert python_tool(timeout=20).invoke(code).split() == ["dev", "EROFS", "shm", "ENOSPC"]


@needs_filter
def test_vsock_sockets_cannot_be_made() -> None:
    code = """
import socket, errno
try:
    socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
    print('made')
except OSError as error:
    print(errno.errorcode[error.errno])
socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()
socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
print('others fine')
"""
    assert python_tool(timeout=20).invoke(code).split() == ["EAFNOSUPPORT", "others", "fine"]


@needs_filter
def test_system_v_shared_memory_is_refused() -> None:
    code = """
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
print(libc.shmget(0, 1 << 20, 0o1600), errno.errorcode[ctypes.get_errno()])
"""
    assert python_tool(timeout=20).invoke(code).split() == ["-1", "EPERM"]


def test_the_working_folder_is_deleted_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    remove = _sandbox.remove_folder

    def slow_remove(folder: Path) -> bool:
        time.sleep(1.0)  # as deleting 270,000 files did
        return remove(folder)

    monkeypatch.setattr(_sandbox, "remove_folder", slow_remove)
    tool = python_tool(timeout=10)

    async def main() -> tuple[str, float]:
        gaps: list[float] = []
        running = True

        async def heartbeat() -> None:
            last = time.monotonic()
            while running:
                await asyncio.sleep(0.01)
                now = time.monotonic()
                gaps.append(now - last)
                last = now

        beat = asyncio.ensure_future(heartbeat())
        result = await tool.ainvoke("print(6 * 7)")
        running = False
        await beat
        return result, max(gaps)

    result, longest = asyncio.run(main())
    assert result.strip() == "42"
    assert longest < 0.5  # before: the loop stood still for the whole second


def test_a_cgroup_v1_memory_kill_is_seen(tmp_path: Path) -> None:
    (tmp_path / "memory.failcnt").write_text("0\n")
    (tmp_path / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")
    cgroup = _sandbox.Cgroup([tmp_path], 1)
    assert cgroup.out_of_memory()
    (tmp_path / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 0\n")
    assert not cgroup.out_of_memory()


def test_the_process_limit_leaves_room_for_bubblewraps_own(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[dict[str, int]] = []
    monkeypatch.setattr(_sandbox, "_own_cgroups", lambda: {"memory": "/", "pids": "/"})
    monkeypatch.setattr(
        _sandbox.Cgroup, "_make", classmethod(lambda cls, dirs, limits, v: made.append(limits))
    )
    _sandbox.Cgroup.create(1 << 29, 5)
    assert made[0]["pids.max"] == 7


@needs_isolation
def test_the_smallest_process_limit_runs_python() -> None:
    if not SUPPORT.cgroups:
        pytest.skip("no cgroup here: the limit is RLIMIT_NPROC's")
    assert python_tool(timeout=20, max_processes=2).invoke("print('ran')").strip() == "ran"


def test_a_sync_run_still_deletes_its_folder_before_it_returns(monkeypatch: pytest.MonkeyPatch) -> None:
    removed: list[Any] = []
    remove = _sandbox.remove_folder
    monkeypatch.setattr(_sandbox, "remove_folder", lambda folder: removed.append(folder) or remove(folder))
    assert python_tool(timeout=10).invoke("print(1)").strip() == "1"
    assert len(removed) == 1 and not removed[0].exists()


@needs_filter
def test_io_uring_and_memfd_are_refused() -> None:
    code = """
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)
print(libc.syscall(425, 4, params), errno.errorcode[ctypes.get_errno()])
try:
    os.memfd_create('x')
except OSError as error:
    print(errno.errorcode[error.errno])
"""
    assert python_tool(timeout=20).invoke(code).split() == ["-1", "EPERM", "EPERM"]


CANCELLED_MID_CLEANUP = """
import asyncio, sys, time
from pathlib import Path
from explicit_react.tools import _sandbox
from tests.test_tools_python import python_tool

remove = _sandbox.remove_folder
def slow_remove(folder):
    print(folder, flush=True)
    time.sleep(1.0)  # as a folder of many files takes
    return remove(folder)
_sandbox.remove_folder = slow_remove

async def main():
    task = asyncio.ensure_future(python_tool(timeout=10).ainvoke("print(1)"))
    await asyncio.sleep(0)
    while not task.done():
        await asyncio.sleep(0.3)
        task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
asyncio.run(main())
"""


def test_a_cancelled_async_call_still_deletes_its_folder_before_the_process_exits() -> None:
    """The folder was deleted in a daemon thread the cancelled call stopped waiting for, which the
    process killed as it exited: the folder was left behind."""
    done = subprocess.run(
        [sys.executable, "-c", CANCELLED_MID_CLEANUP], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    folders = [Path(line) for line in done.stdout.split() if line.startswith("/")]
    assert folders and not any(folder.exists() for folder in folders), done.stderr[-2000:]
