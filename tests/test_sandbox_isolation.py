"""python_repl's sandbox against a security review: the kernel keyrings (the agent's session
keyring, the sandbox user's keyring shared between calls), the process limit of a non-root agent
without a cgroup, a working folder the code made undeletable, and the private ``/tmp``.

Each test runs the real sandbox. A test that needs an agent running as an ordinary user runs one as
``nobody`` (``setpriv``) when the suite runs as root, and as the suite's own user otherwise; where the
machine cannot do what a test needs it is skipped with the reason.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from explicit_react.tools import _sandbox, _seccomp
from tests.test_security import FORKS_SIXTY
from tests.test_tools_python import python_tool

ROOT = Path(__file__).resolve().parents[1]
SUPPORT = _sandbox.support(sys.executable)
needs_isolation = pytest.mark.skipif(not SUPPORT.isolated, reason=f"no isolation here: {SUPPORT.description}")

# (add_key, request_key, keyctl) as the kernel numbers them on this machine.
KEYRING_SYSCALLS = {"x86_64": (248, 249, 250), "aarch64": (217, 218, 219)}.get(os.uname().machine)
needs_keyring_numbers = pytest.mark.skipif(
    KEYRING_SYSCALLS is None, reason=f"no keyring syscall numbers for {os.uname().machine} in this test"
)
ADD_KEY, REQUEST_KEY, KEYCTL = KEYRING_SYSCALLS or (0, 0, 0)
KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_UNLINK, KEYCTL_SEARCH, KEYCTL_READ = 1, 9, 10, 11
SESSION_KEYRING, USER_KEYRING = -3, -4
CTYPES = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
READ_AGENT_CREDENTIAL = f"""
{CTYPES}
key = libc.syscall({KEYCTL}, {KEYCTL_SEARCH}, {SESSION_KEYRING}, b"user", b"agent_credential", 0)
buffer = ctypes.create_string_buffer(256)
size = libc.syscall({KEYCTL}, {KEYCTL_READ}, key, buffer, 256)
print("read", buffer.raw[:max(size, 0)], ctypes.get_errno())
"""
"""Code that reads the key "agent_credential" from the session keyring, and prints the bytes and errno."""


def agent(script: str, *, user: list[str] | None = None, env: dict[str, str] | None = None) -> str:
    """Run ``script`` in a fresh interpreter that plays the agent (``user``: the command prefix and
    interpreter that run it as another user); its stdout. A failure or a hang fails the test."""
    command = [*(user or [sys.executable]), "-c", textwrap.dedent(script)]
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    environment = {**os.environ, "PYTHONPATH": path, **(env or {})}
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=60,
            env=environment,
            cwd=environment.get("TMPDIR"),
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the agent process hung")
    assert done.returncode == 0, done.stderr
    return done.stdout


def remove(folder: Path) -> None:
    """Delete a test's folder, whatever a failing test left in it (locked or very deep folders)."""
    subprocess.run(["chmod", "-R", "u+rwx", str(folder)], capture_output=True)  # never through a symlink
    subprocess.run(["rm", "-rf", str(folder)], check=True)


# The kernel keyrings --------------------------------------------------------------------------------
@needs_isolation
@needs_keyring_numbers
def test_the_agents_session_keyring_cannot_be_read() -> None:
    """systemd, pam_keyinit and Docker give every process a session keyring; a credential the agent's
    environment keeps there must not reach the sandbox, which inherits the keyring from the agent."""
    canary = f"sk-canary-{uuid.uuid4().hex}"
    code = READ_AGENT_CREDENTIAL + 'print("listed", "agent_credential" in open("/proc/keys").read())\n'
    # The agent (a child process, so this test process keeps its own keyring) joins a new session
    # keyring and stores the credential in it, as a login or a service manager would have.
    script = f"""
        import json, warnings
        {CTYPES.replace(chr(10), chr(10) + " " * 8)}
        assert libc.syscall({KEYCTL}, {KEYCTL_JOIN_SESSION_KEYRING}, None) > 0
        secret = {canary.encode()!r}
        assert libc.syscall({ADD_KEY}, b"user", b"agent_credential", secret, len(secret), {SESSION_KEYRING}) > 0
        warnings.simplefilter("ignore")
        from explicit_react.tools import PythonREPLTool
        print(json.dumps(PythonREPLTool(timeout=10).invoke({code!r})))
    """
    observation = json.loads(agent(script))
    assert canary not in observation
    assert observation.startswith("read b'' 1\n"), observation  # EPERM
    if _sandbox.as_root():  # the child left the agent's session keyring for one of its own: as
        # 'nobody' it no longer sees the key at all (as the same user it still sees that it exists)
        assert observation.endswith("listed False"), observation


@needs_keyring_numbers
def test_an_unisolated_child_cannot_read_the_agents_session_keyring() -> None:
    """Where the sandbox is not available (here forced), the child still gets the keyring filter."""
    canary = f"sk-canary-{uuid.uuid4().hex}"
    code = READ_AGENT_CREDENTIAL
    script = f"""
        import json, warnings
        {CTYPES.replace(chr(10), chr(10) + " " * 8)}
        assert libc.syscall({KEYCTL}, {KEYCTL_JOIN_SESSION_KEYRING}, None) > 0
        secret = {canary.encode()!r}
        assert libc.syscall({ADD_KEY}, b"user", b"agent_credential", secret, len(secret), {SESSION_KEYRING}) > 0
        warnings.simplefilter("ignore")
        from explicit_react.tools import PythonREPLTool, _sandbox
        _sandbox.support = lambda python: _sandbox.Support(False, "forced off by the test")
        print(json.dumps(PythonREPLTool(timeout=10, allow_unisolated=True).invoke({code!r})))
    """
    observation = json.loads(agent(script))
    assert canary not in observation
    assert observation == "read b'' 1", observation


@needs_isolation
@needs_keyring_numbers
def test_calls_cannot_share_state_through_the_user_keyring() -> None:
    """One call stores a key in its user's keyring (as root: the 'nobody' user's, shared by every
    call); a later call, by another tool, must not find it."""
    name = f"mailbox_{uuid.uuid4().hex[:12]}".encode()
    store = f"""
{CTYPES}
data = b"left by call 1"
print(libc.syscall({ADD_KEY}, b"user", {name!r}, data, len(data), {USER_KEYRING}) > 0, ctypes.get_errno())
print(libc.syscall({REQUEST_KEY}, b"user", {name!r}, None, 0) > 0, ctypes.get_errno())
"""
    search = f"{CTYPES}print(libc.syscall({KEYCTL}, {KEYCTL_SEARCH}, {USER_KEYRING}, b'user', {name!r}, 0))"
    try:
        assert python_tool(timeout=10).invoke(store) == "False 1\nFalse 1"  # EPERM, EPERM
        assert python_tool(timeout=10).invoke(search) == "-1"
    finally:  # before the fix the key was stored: take it out again
        python_tool(timeout=10).invoke(
            f"{CTYPES}key = libc.syscall({KEYCTL}, {KEYCTL_SEARCH}, {USER_KEYRING}, b'user', {name!r}, 0)\n"
            f"libc.syscall({KEYCTL}, {KEYCTL_UNLINK}, key, {USER_KEYRING})"
        )


@needs_isolation
@pytest.mark.skipif(os.uname().machine != "x86_64", reason="x32 system calls exist on x86_64 only")
def test_a_system_call_through_another_table_kills_the_process() -> None:
    """x32 calls carry the x86_64 audit architecture but other numbers: a filter that only read the
    number could be passed that way (here: getpid, which is harmless)."""
    code = "import ctypes\nprint('before', flush=True)\nctypes.CDLL(None).syscall(0x40000000 | 39)\nprint('after')"
    assert python_tool(timeout=10).invoke(code) == "Error: the process was killed by SIGSYS\nbefore"


# (clone, unshare) as the kernel numbers them on this machine; clone3 is 435 on both.
CLONE_SYSCALLS = {"x86_64": (56, 272), "aarch64": (220, 97)}.get(os.uname().machine)
NEW_NAMESPACES = f"""
import ctypes, os, shutil, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
CLONE, UNSHARE = {CLONE_SYSCALLS}
CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWNS, SIGCHLD = 0x10000000, 0x40000000, 0x20000, 17

def in_a_child(call):  # unshare needs a process with one thread: a forked one
    pid = os.fork()
    if pid == 0:
        result = call()
        os._exit(0 if result == 0 else ctypes.get_errno() or 255)
    return os.waitpid(pid, 0)[1] >> 8

def clone(flags):  # a clone that succeeds returns 0 in the new process, which leaves at once
    result = libc.syscall(CLONE, flags | SIGCHLD, 0, 0, 0, 0)
    if result == 0:
        os._exit(0)
    if result > 0:
        os.waitpid(result, 0)
        return 0
    return ctypes.get_errno()

print("unshare user", in_a_child(lambda: libc.unshare(CLONE_NEWUSER)))
print("unshare net", in_a_child(lambda: libc.unshare(CLONE_NEWNET)))
print("setns", in_a_child(lambda: libc.setns(os.open("/proc/self/ns/net", os.O_RDONLY), 0)))
print("clone user", clone(CLONE_NEWUSER), "clone mount", clone(CLONE_NEWNS), "clone plain", clone(0))
print("clone3", libc.syscall(435, None, 0), ctypes.get_errno())
if shutil.which("unshare"):
    print("unshare -U", subprocess.run(["unshare", "-U", "true"], capture_output=True).returncode)
thread = threading.Thread(target=print, args=("a thread",))
thread.start(); thread.join()
print(subprocess.run(["echo", "a process"], capture_output=True, text=True).stdout.strip())
"""
"""Code that tries every way to a namespace of its own, then starts a thread and a process."""
NAMESPACES_REFUSED = [
    "unshare user 1",  # EPERM
    "unshare net 1",
    "setns 1",
    "clone user 1 clone mount 1 clone plain 0",
    "clone3 -1 38",  # ENOSYS: the C library falls back to clone
]
THREAD_AND_PROCESS = ["a thread", "a process"]


@pytest.mark.skipif(CLONE_SYSCALLS is None, reason=f"no clone numbers for {os.uname().machine} in this test")
@pytest.mark.parametrize("isolated", [True, False], ids=["isolated", "unisolated"])
def test_the_code_cannot_create_namespaces(isolated: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a user namespace of its own the code would hold every capability (before: unshare of a
    user namespace succeeded, as nobody); threads and processes still start."""
    if isolated and not SUPPORT.isolated:
        pytest.skip(f"no isolation here: {SUPPORT.description}")
    if not isolated:
        monkeypatch.setattr(
            _sandbox, "support", lambda python: _sandbox.Support(False, "forced off by the test")
        )
    lines = python_tool(timeout=20).invoke(NEW_NAMESPACES).splitlines()
    program = ["unshare -U 1"] if shutil.which("unshare") else []  # util-linux reports a failed unshare as 1
    assert lines == [*NAMESPACES_REFUSED, *program, *THREAD_AND_PROCESS]


def test_the_sandbox_filter_is_written_for_known_machines_only() -> None:
    x86_64, aarch64 = _seccomp.sandbox_filter("x86_64"), _seccomp.sandbox_filter("aarch64")
    assert x86_64 and aarch64 and len(x86_64) % 8 == 0 and len(aarch64) % 8 == 0
    assert x86_64 != aarch64
    assert _seccomp.sandbox_filter("riscv64") is None


@needs_isolation
def test_the_child_starts_with_no_inherited_descriptor_but_its_pipes() -> None:
    """The filter reaches bubblewrap through a pipe: it must not stay open in the sandbox."""
    code = """
import os
found = []
for fd in os.listdir('/proc/self/fd'):
    try:
        found.append(os.readlink(f'/proc/self/fd/{fd}') if int(fd) > 2 else 'standard')
    except OSError:  # the listing's own
        pass
found
"""
    observation = python_tool(timeout=10).invoke(code)
    assert "pipe:" not in observation and "/dev/null" in observation, observation


# An agent that is not root ---------------------------------------------------------------------------
@functools.cache
def _unprivileged() -> tuple[list[str], str]:
    """The command prefix that runs an agent as an ordinary user, or a reason why there is none."""
    if not _sandbox.as_root():
        return [sys.executable], ""  # the suite already runs as an ordinary user
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return [], "setpriv (util-linux) is not installed"
    drop = [setpriv, f"--reuid={_sandbox.NOBODY}", f"--regid={_sandbox.NOBODY}", "--clear-groups"]
    # 'nobody' needs an interpreter it can run (a pyenv one below /root is not) and this project's
    # packages: the same Python version's system interpreter, with this environment's site-packages.
    import pydantic

    path = f"{ROOT}{os.pathsep}{Path(pydantic.__file__).parents[1]}"
    probe = "import sys; from explicit_react.tools import _sandbox; print(_sandbox.support(sys.executable).isolated)"
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for python in dict.fromkeys(
        [f"/usr/bin/{version}", f"/usr/local/bin/{version}", os.path.realpath(sys.executable)]
    ):
        if not os.access(python, os.X_OK):
            continue
        try:
            done = subprocess.run(
                [*drop, "env", f"PYTHONPATH={path}", python, "-c", probe],
                capture_output=True,
                text=True,
                timeout=30,
                cwd="/",
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.stdout.strip() == "True":
            return [*drop, "env", f"PYTHONPATH={path}", python], ""
    return [], f"no {version} interpreter that 'nobody' can run and isolate with this project's packages"


@pytest.fixture
def unprivileged() -> Iterator[tuple[list[str], Path]]:
    """The command that runs an agent as an ordinary user, and a folder it owns for its TMPDIR."""
    user, reason = _unprivileged()
    if reason:
        pytest.skip(f"no agent as an ordinary user: {reason}")
    folder = Path(tempfile.mkdtemp(prefix="explicit_react_test_"))
    if _sandbox.as_root():
        os.chown(folder, _sandbox.NOBODY, _sandbox.NOBODY)
    try:
        yield user, folder
    finally:
        remove(folder)


NO_CGROUP = """
    import json, warnings
    warnings.simplefilter("ignore")
    from explicit_react.tools import PythonREPLTool, _sandbox
    _sandbox.Cgroup.create = classmethod(lambda cls, memory, processes: None)  # as on most machines
"""


def test_a_non_root_agent_without_a_cgroup_limits_the_number_of_processes(
    unprivileged: tuple[list[str], Path],
) -> None:
    user, folder = unprivileged
    code = FORKS_SIXTY
    script = (
        NO_CGROUP
        + f"""
    tool = PythonREPLTool(timeout=10, max_processes=10)
    print(json.dumps([tool.isolation, tool.invoke({code!r})]))
    """
    )
    isolation, observation = json.loads(agent(script, user=user, env={"TMPDIR": str(folder)}))
    assert isolation.startswith("bubblewrap"), isolation
    assert "no cgroup" in isolation, isolation
    if "processes are not limited" in isolation:  # an old kernel: said, not hidden
        pytest.skip(f"this kernel cannot limit the processes of a user namespace: {isolation}")
    assert observation.startswith("started "), observation
    assert int(observation.split()[1]) < 10, observation


def test_a_folder_the_code_locked_is_still_deleted(unprivileged: tuple[list[str], Path]) -> None:
    """The code runs as the agent's own user: it can take the permissions off its folders, and the
    cleanup must give them back first, without following a symlink out of the working folder."""
    user, folder = unprivileged
    outside = folder / "outside"
    outside.mkdir(mode=0o500)
    outside.chmod(0o500)
    if _sandbox.as_root():
        os.chown(outside, _sandbox.NOBODY, _sandbox.NOBODY)
    code = f"""
import os
os.makedirs('keep/inner/deeper')
open('keep/inner/blob', 'wb').write(b'x' * 1024)
os.symlink({str(outside)!r}, 'keep/inner/link')
os.chmod('keep/inner/deeper', 0o000)
os.chmod('keep/inner', 0o000)
os.chmod('keep', 0o500)
print('locked')
"""
    script = (
        NO_CGROUP
        + f"""
    print(json.dumps(PythonREPLTool(timeout=10).invoke({code!r})))
    """
    )
    assert json.loads(agent(script, user=user, env={"TMPDIR": str(folder)})) == "locked"
    assert sorted(path.name for path in folder.iterdir()) == ["outside"]  # nothing left
    assert stat.S_IMODE(outside.stat().st_mode) == 0o500  # the symlink's target untouched


# The working folder -------------------------------------------------------------------------------
@pytest.fixture
def memory_tmp(tmp_path: Path) -> Iterator[Path]:
    """A folder in memory where there is one (/dev/shm): removing thousands of folders on a disk
    mounted with ``discard`` takes seconds."""
    if not os.access("/dev/shm", os.W_OK):
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(dir="/dev/shm", prefix="explicit_react_test_"))
    try:
        yield folder
    finally:
        remove(folder)


def test_a_folder_deeper_than_the_recursion_limit_is_deleted(
    memory_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(memory_tmp))
    code = "import os\nprint(os.getcwd())\nfor _ in range(1500):\n    os.mkdir('a')\n    os.chdir('a')"
    workdir = python_tool(timeout=10).invoke(code)  # shutil.rmtree raised RecursionError here
    assert workdir.startswith(f"{memory_tmp}/explicit_react_python_"), workdir
    assert not Path(workdir).parent.exists()


def test_locked_folders_are_removed_without_following_a_symlink(memory_tmp: Path) -> None:
    """What the cleanup does when shutil.rmtree gave up: here a tree deeper and longer than a path
    can be, a folder without any permission, and a symlink to a folder that must stay as it is."""
    outside = memory_tmp / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    outside.chmod(0o500)
    top = memory_tmp / "scratch"
    locked = top / "work" / "locked"
    locked.mkdir(parents=True)
    (locked / "link").symlink_to(outside)
    (top / "work" / "file").write_text("x")
    folder = os.open(locked, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(1200):  # 240,000 characters deep
        os.mkdir("b" * 200, dir_fd=folder)
        below = os.open("b" * 200, os.O_RDONLY | os.O_DIRECTORY, dir_fd=folder)
        os.close(folder)
        folder = below
    os.close(folder)
    locked.chmod(0o000)
    _sandbox._remove_tree(top)
    assert not top.exists()
    assert (outside / "keep.txt").read_text() == "keep" and stat.S_IMODE(outside.stat().st_mode) == 0o500


def test_a_folder_left_behind_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    remove = _sandbox.remove_folder
    monkeypatch.setattr(_sandbox, "remove_folder", lambda folder: remove(folder) and False)  # "it failed"
    with pytest.warns(
        UserWarning, match="python_repl could not delete its working folder .*explicit_react_python_"
    ) as warned:
        assert python_tool(timeout=10).invoke("print('ran')") == "ran"
    assert Path(warned[0].filename).parts[-2:] == ("tools", "python.py")  # not contextlib's exit


# Installed packages -----------------------------------------------------------------------------

IN_A_VIRTUALENV = pytest.mark.skipif(
    sys.prefix == sys.base_prefix, reason="the suite does not run in a virtualenv"
)
VENV_VIEW = """
import os, subprocess, sys
print(sys.executable, sys.prefix)
print([path for path in sys.path if path.endswith("site-packages")])
print(subprocess.run([sys.executable, "-c", "import planted_module"]).returncode)
print(sorted(os.listdir(sys.prefix)), os.listdir(os.path.dirname(sys.executable)))
"""
"""Code that prints where its interpreter is, the package folders it imports from, whether a process
it starts with sys.executable imports the module, and what it sees of the virtualenv."""


def make_venv(folder: Path) -> Path:
    """A real virtualenv in ``folder`` (no pip: a fraction of a second), with a module, a ``.pth``
    file that adds a folder, and a ``bin`` script that the sandbox should not show."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=60)
    (site,) = (folder / "lib").glob("*/site-packages")
    (site / "planted_module.py").write_text("VALUE = 42\n")
    (site / "extra").mkdir()
    (site / "extra" / "from_pth.py").write_text("VALUE = 7\n")
    (site / "extra.pth").write_text(str(site / "extra") + "\n")
    (folder / "bin" / "script").write_text("#!/bin/sh\n")
    return site


@needs_isolation
def test_the_code_runs_in_the_virtualenv_of_python_executable(tmp_path: Path) -> None:
    """A virtualenv below /tmp (as in CI) is mounted after the private /tmp, which would hide it; the
    code's interpreter and the processes it starts use its packages and not the base interpreter's;
    the folders around it are empty and the rest of it is not shown; /tmp stays open to all."""
    project = tmp_path / "project"
    site = make_venv(project / "venv")
    (project / ".env").write_text("API_KEY=not-for-the-code\n")
    for path in [project / "venv", project, tmp_path, *tmp_path.parents[:-1]]:  # open to read, as usual
        if path.is_relative_to(tempfile.gettempdir()):
            path.chmod(0o755)
    python = str(project / "venv" / "bin" / "python")
    code = (
        VENV_VIEW
        + f"""
import stat, planted_module, from_pth
print(planted_module.VALUE, from_pth.VALUE, os.listdir({str(project)!r}))
print(oct(stat.S_IMODE(os.stat("/tmp").st_mode)), open("/tmp/x", "w").write("ok"))
"""
    )
    venv = _sandbox.virtualenv(python)
    assert venv is not None
    shown_libs = {
        path.relative_to(project / "venv").parts[0] for path in venv.packages
    }  # lib, and lib64 if made
    lines = python_tool(timeout=20, python_executable=python).invoke(code).splitlines()
    assert lines == [
        f"{python} {project / 'venv'}",
        str([str(site)]),
        "0",
        f"{sorted(['bin', 'pyvenv.cfg', *shown_libs])} ['python']",
        "42 7 ['venv']",
        "0o1777 2",
    ]
    hidden = python_tool(timeout=20, python_executable=python, site_packages=False).invoke(
        "import planted_module"
    )
    assert hidden.startswith("Error: ModuleNotFoundError: No module named 'planted_module'")


@needs_isolation
@IN_A_VIRTUALENV
def test_the_suites_own_virtualenv_is_found_and_shown_read_only() -> None:
    venv = _sandbox.virtualenv(sys.executable)
    assert venv is not None and venv.config == Path(sys.prefix) / "pyvenv.cfg"
    code = (
        "import langchain_core, os, sys\nprint(sys.prefix, os.path.exists("
        + repr(str(ROOT / "README.md"))
        + "))"
    )
    code += "\ntry:\n    open(os.path.join(os.path.dirname(langchain_core.__file__), 'planted.py'), 'w')"
    code += "\nexcept OSError as error:\n    print(error.strerror)"
    assert python_tool(timeout=20).invoke(code).splitlines() == [
        f"{sys.prefix} False",
        "Read-only file system",
    ]
    assert f"the virtualenv {sys.prefix} (its site-packages, read-only)" in python_tool().isolation


def test_an_interpreter_of_no_virtualenv_has_none(tmp_path: Path) -> None:
    assert _sandbox.virtualenv(os.path.realpath(sys.base_prefix + "/bin/python3")) is None
    assert _sandbox.virtualenv(str(tmp_path / "missing" / "python")) is None


@needs_isolation
def test_the_code_may_enter_its_working_folder_by_path_and_spawn_processes() -> None:
    """Its parents were made closed to 'nobody' (before: chdir to its own working folder was refused,
    and a multiprocessing 'spawn' pool hung until the timeout)."""
    code = """
import multiprocessing, os
os.chdir(os.getcwd())
if __name__ == "__main__":
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        print(pool.map(abs, [-1, -2]))
"""
    assert python_tool(timeout=30).invoke(code) == "[1, 2]"


# The private /tmp ------------------------------------------------------------------------------------


@needs_isolation
def test_the_private_tmp_is_writable() -> None:
    code = (
        "import os, stat\nopen('/tmp/x', 'w').write('a')\nprint(oct(stat.S_IMODE(os.stat('/tmp').st_mode)))"
    )
    assert python_tool(timeout=10).invoke(code) == "0o1777"
