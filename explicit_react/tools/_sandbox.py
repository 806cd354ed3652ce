"""How python_repl isolates its child: bubblewrap namespaces, an unprivileged user, and a cgroup
that limits the memory and the number of processes of everything the child starts.

bubblewrap (``bwrap``, the sandbox Flatpak uses) gives the child its own PID, IPC, UTS and network
namespaces and a mount namespace of its own: the system folders (``SYSTEM_FOLDERS``), the
interpreter's own folder and, for an interpreter of a virtualenv, what Python needs of that
virtualenv to import its packages (``Virtualenv``), read-only, and nothing else of the machine's files, ``/proc`` showing only its
own processes, a small private ``/tmp``, and the working folder as the one writable place. Run as root,
bubblewrap sets this up and the child then drops to the ``nobody`` user with no capabilities and
``no_new_privs`` (``setpriv``); run as another user, bubblewrap uses a user namespace and the child
keeps that user's identity. A seccomp filter (``sandbox_filter``, in ``_seccomp.py``), handed to
bubblewrap, keeps the kernel's keyrings out of reach (they are not namespaced, so without it the
code could read the agent's session keyring or leave a key for a later call in its user's keyring),
and the code from making namespaces of its own.
The cgroup (v1 or v2) is used when the agent may create one below its own; without it the memory
limit is per process (``RLIMIT_AS``) and the process count is limited with ``RLIMIT_NPROC``: as
root through the ``nobody`` user, otherwise in the user namespace, where Linux 5.14 and later
count it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from explicit_react.tools._seccomp import sandbox_filter, seccomp_pipe

NOBODY = 65534
TMPFS_BYTES = 16 * 1024 * 1024
CGROUP_ROOT = Path("/sys/fs/cgroup")
_JOIN_CGROUPS = (
    'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n - 1)); done; exec "$@"'
)


@dataclass(frozen=True)
class Support:
    """What isolation this machine offers: ``isolated`` is False when code would run unisolated;
    ``description`` says what is in effect, or why there is none. ``seccomp``: bubblewrap applies
    ``sandbox_filter()``; ``nproc``: ``RLIMIT_NPROC`` in the child limits the processes of the call
    alone (used when there is no cgroup)."""

    isolated: bool
    description: str
    cgroups: bool = False
    seccomp: bool = False
    nproc: bool = False


def as_root() -> bool:
    """True when the agent runs as root (the child then drops to ``nobody``)."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


@functools.cache
def support(python_executable: str) -> Support:
    """Probe once per process: can bubblewrap start ``python_executable`` isolated here?"""
    if not sys.platform.startswith("linux"):
        return Support(False, f"no sandbox on {sys.platform}: the isolation uses Linux namespaces")
    if shutil.which("bwrap") is None:
        return Support(False, "bubblewrap (bwrap) is not installed; install the OS package 'bubblewrap'")
    if as_root() and shutil.which("setpriv") is None:
        return Support(False, "setpriv (util-linux) is not installed; it drops the child to 'nobody'")
    program = sandbox_filter()
    failure = _probe(python_executable, program)
    seccomp = program is not None and failure is None
    keyrings = "no kernel keyrings or new namespaces (seccomp)"
    if program is None:
        keyrings = (
            "the kernel keyrings and new namespaces are NOT blocked "
            f"(no seccomp filter for {os.uname().machine})"
        )
    elif failure is not None:  # a kernel without seccomp? Then isolated all the same, and said so
        keyrings = (
            f"the kernel keyrings and new namespaces are NOT blocked (the seccomp filter failed: {failure})"
        )
        failure = _probe(python_executable, None)
    if failure is not None:
        return Support(False, failure)
    cgroups = Cgroup.create(64 * 1024 * 1024, 8)
    if cgroups is not None:
        cgroups.remove()
    user = "the nobody user" if as_root() else "the agent's user in a user namespace"
    nproc = as_root() or _kernel_at_least(5, 14)
    if as_root():
        processes = "processes limited through the nobody user (RLIMIT_NPROC)"
    elif nproc:
        processes = "processes counted in its user namespace (RLIMIT_NPROC)"
    else:
        processes = "processes are not limited (Linux before 5.14 counts RLIMIT_NPROC for the whole user)"
    limits = (
        "a cgroup limits the memory and processes of all its processes"
        if cgroups
        else f"memory is limited per process only (no cgroup can be created here), {processes}"
    )
    return Support(
        True,
        f"bubblewrap: own PID/IPC/network namespaces, only the system folders (read-only), {user}, "
        f"{keyrings}; {limits}",
        cgroups is not None,
        seccomp,
        nproc,
    )


def _probe(python_executable: str, program: bytes | None) -> str | None:
    """Start ``python_executable`` in the sandbox (with ``program`` as its seccomp filter); why that
    failed, or ``None`` when it worked."""
    scratch = Path(tempfile.mkdtemp(prefix="explicit_react_probe_"))
    try:
        workdir = prepare_workdir(scratch)
        with seccomp_pipe(program) as fd:
            command = bwrap_command(workdir, python_executable, allow_network=False, seccomp_fd=fd)
            command += ["-I", "-c", "import os; print(os.getpid())"]
            try:
                probe = subprocess.run(
                    command,
                    capture_output=True,
                    timeout=20,
                    cwd="/",
                    env={"PATH": "/usr/bin:/bin"},
                    pass_fds=() if fd is None else (fd,),
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                return f"bubblewrap could not start: {exc}"
        if probe.returncode != 0 or probe.stdout.strip() != b"2":
            error = probe.stderr.decode(errors="replace").strip().splitlines()
            return f"bubblewrap cannot create namespaces here: {error[-1] if error else probe.returncode}"
        return None
    finally:
        remove_folder(scratch)


def _kernel_at_least(major: int, minor: int) -> bool:
    found = re.match(r"(\d+)\.(\d+)", os.uname().release)
    return found is not None and (int(found[1]), int(found[2])) >= (major, minor)


def prepare_workdir(scratch: Path) -> Path:
    """The child's working folder under ``scratch``, writable by the user the child runs as."""
    workdir = scratch / "work"
    workdir.mkdir()
    if as_root():
        os.chown(workdir, NOBODY, NOBODY)
    return workdir


def bwrap_command(
    workdir: Path,
    python_executable: str,
    *,
    allow_network: bool,
    seccomp_fd: int | None = None,
    venv: Virtualenv | None = None,
) -> list[str]:
    """The command that starts ``python_executable`` inside the sandbox (append its arguments);
    ``seccomp_fd``: a descriptor the command inherits, from ``seccomp_pipe``; ``venv``: the
    virtualenv to start it in instead, shown read-only (``virtualenv``)."""
    bwrap, setpriv = shutil.which("bwrap") or "bwrap", shutil.which("setpriv") or "setpriv"
    command = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc"]
    command += ["--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"]
    if not allow_network:
        command.append("--unshare-net")
    if not as_root():
        command += ["--unshare-user", "--cap-drop", "ALL"]
    if seccomp_fd is not None:  # bubblewrap applies it just before it starts the command
        command += ["--seccomp", str(seccomp_fd)]
    executable = Path(os.path.realpath(python_executable))
    command += _system_view(executable, allow_network=allow_network)
    command += ["--dev", "/dev", "--proc", "/proc"]
    command += ["--perms", "1777", "--size", str(TMPFS_BYTES), "--tmpfs", "/tmp"]  # as a /tmp is
    # /dev is a tmpfs of bubblewrap's, writable by an agent that is not root, and with no size: its
    # /dev/shm held 640 MB past a 512 MB limit. A capped /dev/shm, and /dev read-only (its devices
    # still work: writing to /dev/null is no write to the file system).
    command += ["--perms", "1777", "--size", str(TMPFS_BYTES), "--tmpfs", "/dev/shm"]
    # After the private /tmp, which would hide a folder below /tmp (a virtualenv there, as in CI).
    shown = [Path(folder) for folder in SYSTEM_FOLDERS]
    paths = [executable.parent.parent, *(venv.paths() if venv else ())]  # the interpreter's prefix first
    for path in paths:
        if path != Path("/") and not any(path.is_relative_to(folder) for folder in shown):
            command += [*_parents(path), "--ro-bind", str(path), str(path)]
            shown.append(path)
    # The working folder's own parents are open to all: the code may chdir to its path again (a
    # multiprocessing 'spawn' child does), which a parent closed to 'nobody' would refuse.
    command += [*_parents(workdir), "--bind", str(workdir), str(workdir)]
    command += ["--remount-ro", "/", "--remount-ro", "/dev"]
    command += ["--chdir", str(workdir), "--"]
    if as_root():
        command += [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        command += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
    return [*command, str(venv.executable if venv else executable)]


SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
"""The machine's folders the child sees, read-only: the programs, libraries and settings an
interpreter needs. The rest (``/home``, ``/root``, ``/var``, ``/run``, ``/srv``, ``/opt``, ``/mnt``,
the project) is not there at all: no file in it to read, and no Unix socket of a host service (D-Bus,
a database, Docker, an ssh agent) to connect to, which a network namespace alone would not stop."""


def _system_view(executable: Path, *, allow_network: bool) -> list[str]:
    """bubblewrap options that show the child ``SYSTEM_FOLDERS``, read-only, in an empty root (the
    interpreter's own folder, its ``bin``'s parent, comes later: a pyenv or conda prefix)."""
    options: list[str] = []
    for name in SYSTEM_FOLDERS:
        path = Path(name)
        if path.is_symlink():  # a merged /usr: /bin -> usr/bin
            options += ["--symlink", os.readlink(path), name]
        elif path.is_dir():
            options += ["--ro-bind", name, name]
    shown = [Path(folder) for folder in SYSTEM_FOLDERS]
    resolver = Path(os.path.realpath("/etc/resolv.conf"))
    if allow_network and not any(resolver.is_relative_to(folder) for folder in shown):
        options += ["--ro-bind-try", str(resolver), str(resolver)]  # often below /run: the file alone
    return options


def _parents(path: Path) -> list[str]:
    """bubblewrap options that make the parents of ``path`` as empty folders open to all (e.g. /root,
    closed to 'nobody' on the host, or the project around a virtualenv: nothing else in it is shown).
    A folder the sandbox has already (``/tmp``) keeps its mode."""
    options: list[str] = []
    for parent in reversed(path.parents[:-1]):
        options += ["--perms", "0755", "--dir", str(parent)]
    return options


@dataclass(frozen=True)
class Virtualenv:
    """The virtualenv ``python_executable`` belongs to: the interpreter as named there (not
    resolved: started by that name, Python finds ``pyvenv.cfg`` and uses the virtualenv's packages,
    before and instead of the base interpreter's, and so do processes it starts with
    ``sys.executable``), its ``pyvenv.cfg``, and its ``site-packages`` folders."""

    executable: Path
    config: Path
    packages: tuple[Path, ...]

    def paths(self) -> list[Path]:
        """What the sandbox shows of it, read-only: nothing else of its folder (no ``bin`` scripts,
        and nothing of a project the virtualenv was made in)."""
        return [self.config, self.executable, *self.packages]


@functools.cache
def virtualenv(python_executable: str) -> Virtualenv | None:
    """The virtualenv of ``python_executable``, found as Python finds it: a ``pyvenv.cfg`` in the
    interpreter's folder or the one above; ``None`` for an interpreter of no virtualenv. Nothing is
    run: the virtualenv's ``.pth`` files and ``sitecustomize`` run only in the sandbox."""
    executable = Path(os.path.abspath(python_executable))
    configs = [folder / "pyvenv.cfg" for folder in (executable.parent, executable.parent.parent)]
    config = next((found for found in configs if found.is_file()), None)
    if config is None or not executable.is_file():
        return None
    packages = sorted(path for path in config.parent.glob("lib*/*/site-packages") if path.is_dir())
    return Virtualenv(executable, config, tuple(packages))


def remove_folder(folder: Path) -> bool:
    """Delete ``folder`` and everything in it; True when nothing is left. Call it once every process
    of the call has been killed.

    ``shutil.rmtree`` does it, unless the code, running as the agent's own user (an agent that is not
    root), took the permissions off its folders, or made a tree deeper than Python's recursion limit:
    then ``_remove_tree`` gives the permissions back and removes what is left."""
    try:
        shutil.rmtree(folder)
    except (OSError, RecursionError):
        with contextlib.suppress(OSError):
            _remove_tree(folder)
    return not os.path.lexists(folder)


def _open_folder(name: str, parent: int | None) -> int:
    """Open the folder ``name`` (in the open folder ``parent``) for listing, never through a symlink,
    after giving its owner back every permission on it."""
    handle = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY, dir_fd=parent)
    try:
        os.chmod(f"/proc/self/fd/{handle}", 0o700)  # the folder just opened, whatever its permissions
        return os.open(".", os.O_RDONLY | os.O_DIRECTORY, dir_fd=handle)
    finally:
        os.close(handle)


def _remove_tree(top: Path) -> None:
    """Remove ``top`` one folder at a time, without recursion (any depth) and relative to the open
    folder (any path length), never following a symlink; what cannot be removed is left."""
    if not sys.platform.startswith("linux"):
        return
    current = _open_folder(str(top), None)
    names: list[str] = []  # the folders from ``top`` down to ``current``
    stuck: list[set[str]] = [set()]  # per level: subfolders that could not be removed
    try:
        while True:
            subfolder = None
            with os.scandir(current) as entries:
                for entry in entries:
                    if not entry.is_dir(follow_symlinks=False):
                        with contextlib.suppress(OSError):
                            os.unlink(entry.name, dir_fd=current)
                    elif subfolder is None and entry.name not in stuck[-1]:
                        subfolder = entry.name
            if subfolder is not None:  # down into it
                try:
                    below = _open_folder(subfolder, current)
                except OSError:
                    stuck[-1].add(subfolder)
                    continue
                os.close(current)
                current = below
                names.append(subfolder)
                stuck.append(set())
                continue
            if not names:
                break
            above = os.open("..", os.O_RDONLY | os.O_DIRECTORY, dir_fd=current)  # back up, then remove it
            os.close(current)
            current, name = above, names.pop()
            stuck.pop()
            try:
                os.rmdir(name, dir_fd=current)
            except OSError:
                stuck[-1].add(name)
    finally:
        os.close(current)
    os.rmdir(top)


class Cgroup:
    """A cgroup (v2, or v1 memory + pids) created below the agent's own, for one run."""

    def __init__(self, directories: list[Path], version: int) -> None:
        self.directories = directories
        self.version = version

    @classmethod
    def create(cls, memory_bytes: int, max_processes: int) -> Cgroup | None:
        """A new cgroup with these limits, or ``None`` when this process may not create one."""
        name = f"explicit_react_{uuid.uuid4().hex[:12]}"
        own = _own_cgroups()
        if "" in own and (CGROUP_ROOT / "cgroup.controllers").exists():
            # bubblewrap's own two processes are in the cgroup too: max_processes is the code's
            limits = {"memory.max": memory_bytes, "memory.swap.max": 0, "pids.max": max_processes + 2}
            return cls._make([CGROUP_ROOT / own[""].lstrip("/") / name], limits, 2)
        if "memory" in own and "pids" in own:
            memory = CGROUP_ROOT / "memory" / own["memory"].lstrip("/") / name
            pids = CGROUP_ROOT / "pids" / own["pids"].lstrip("/") / name
            limits = {"memory.limit_in_bytes": memory_bytes, "pids.max": max_processes + 2}
            return cls._make([memory, pids], limits, 1)
        return None

    @classmethod
    def _make(cls, directories: list[Path], limits: dict[str, int], version: int) -> Cgroup | None:
        made: list[Path] = []
        try:
            for directory in directories:
                directory.mkdir()
                made.append(directory)
            for file, value in limits.items():
                targets = [d / file for d in directories if (d / file).exists()]
                if not targets and file != "memory.swap.max":
                    raise OSError(f"{file} is not available")
                for target in targets:
                    target.write_text(str(value))
            if version == 1 and (directories[0] / "memory.memsw.limit_in_bytes").exists():
                with contextlib.suppress(OSError):  # swap accounting may be off
                    (directories[0] / "memory.memsw.limit_in_bytes").write_text(
                        str(limits["memory.limit_in_bytes"])
                    )
        except OSError:
            for directory in made:
                with contextlib.suppress(OSError):
                    directory.rmdir()
            return None
        return cls(directories, version)

    @property
    def procs_files(self) -> list[str]:
        """The files a process writes its PID to, to join this cgroup."""
        return [str(d / "cgroup.procs") for d in self.directories]

    def join_command(self, command: list[str]) -> list[str]:
        """``command`` started by a shell that first moves itself into this cgroup, so every
        process it starts is counted from its first instruction."""
        return ["/bin/sh", "-c", _JOIN_CGROUPS, "sh", str(len(self.procs_files)), *self.procs_files, *command]

    def pids(self) -> set[int]:
        """The processes in this cgroup now."""
        found: set[int] = set()
        for file in self.procs_files:
            with contextlib.suppress(OSError, ValueError):
                found.update(int(line) for line in Path(file).read_text().split())
        return found

    def out_of_memory(self) -> bool:
        """True when the memory limit was hit (the kernel killed or refused something)."""
        with contextlib.suppress(OSError, ValueError):
            if self.version == 2:
                events = (self.directories[0] / "memory.events").read_text().split()
                return int(events[events.index("oom_kill") + 1]) > 0
            if int((self.directories[0] / "memory.failcnt").read_text()) > 0:
                return True
            control = (self.directories[0] / "memory.oom_control").read_text().split()
            return "oom_kill" in control and int(control[control.index("oom_kill") + 1]) > 0
        return False

    def kill(self) -> None:
        """SIGKILL every process in the cgroup, until none is left (a fork racing the kill included)."""
        kill_file = self.directories[0] / "cgroup.kill"
        if self.version == 2 and kill_file.exists():
            with contextlib.suppress(OSError):
                kill_file.write_text("1")
        for _ in range(50):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def remove(self) -> None:
        """Kill what is left and delete the cgroup."""
        self.kill()
        for directory in self.directories:
            for _ in range(50):
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # a killed process not yet reaped still counts for a moment
                    time.sleep(0.02)


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup path per controller (``""`` for the v2 hierarchy)."""
    found: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                found[controller] = path
    return found
