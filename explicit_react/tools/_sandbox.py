"""How python_repl isolates its child: bubblewrap namespaces, an unprivileged user, and a cgroup
that limits the memory and the number of processes of everything the child starts.

bubblewrap (``bwrap``, the sandbox Flatpak uses) gives the child its own PID, IPC, UTS and network
namespaces and a mount namespace of its own: the system folders (``SYSTEM_FOLDERS``) and the
interpreter's own folder read-only and nothing else of the machine's files, ``/proc`` showing only its
own processes, a small private ``/tmp``, and the working folder as the one writable place. Run as root,
bubblewrap sets this up and the child then drops to the ``nobody`` user with no capabilities and
``no_new_privs`` (``setpriv``); run as another user, bubblewrap uses a user namespace and the child
keeps that user's identity. The cgroup (v1 or v2) is used when the agent may create one below its
own; without it the memory limit is per process (``RLIMIT_AS``) and, as root, the process count is
limited through the ``nobody`` user (``RLIMIT_NPROC``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

NOBODY = 65534
TMPFS_BYTES = 16 * 1024 * 1024
CGROUP_ROOT = Path("/sys/fs/cgroup")
_JOIN_CGROUPS = (
    'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n - 1)); done; exec "$@"'
)


@dataclass(frozen=True)
class Support:
    """What isolation this machine offers: ``isolated`` is False when code would run unisolated;
    ``description`` says what is in effect, or why there is none."""

    isolated: bool
    description: str
    cgroups: bool = False


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
    scratch = Path(tempfile.mkdtemp(prefix="explicit_react_probe_"))
    try:
        workdir = prepare_workdir(scratch)
        command = bwrap_command(workdir, python_executable, allow_network=False)
        command += ["-I", "-c", "import os; print(os.getpid())"]
        try:
            probe = subprocess.run(
                command, capture_output=True, timeout=20, cwd="/", env={"PATH": "/usr/bin:/bin"}
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Support(False, f"bubblewrap could not start: {exc}")
        if probe.returncode != 0 or probe.stdout.strip() != b"2":
            error = probe.stderr.decode(errors="replace").strip().splitlines()
            return Support(
                False, f"bubblewrap cannot create namespaces here: {error[-1] if error else probe.returncode}"
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    cgroups = Cgroup.create(64 * 1024 * 1024, 8)
    if cgroups is not None:
        cgroups.remove()
    user = "the nobody user" if as_root() else "the agent's user in a user namespace"
    limits = (
        "a cgroup limits the memory and processes of all its processes"
        if cgroups
        else "memory is limited per process only (no cgroup can be created here)"
    )
    return Support(
        True,
        f"bubblewrap: own PID/IPC/network namespaces, only the system folders (read-only), {user}; {limits}",
        cgroups is not None,
    )


def prepare_workdir(scratch: Path) -> Path:
    """The child's working folder under ``scratch``, writable by the user the child runs as."""
    workdir = scratch / "work"
    workdir.mkdir()
    if as_root():
        os.chown(workdir, NOBODY, NOBODY)
    return workdir


def bwrap_command(workdir: Path, python_executable: str, *, allow_network: bool) -> list[str]:
    """The command that starts ``python_executable`` inside the sandbox (append its arguments)."""
    bwrap, setpriv = shutil.which("bwrap") or "bwrap", shutil.which("setpriv") or "setpriv"
    command = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc"]
    command += ["--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"]
    if not allow_network:
        command.append("--unshare-net")
    if not as_root():
        command += ["--unshare-user", "--cap-drop", "ALL"]
    executable = Path(os.path.realpath(python_executable))
    command += _system_view(executable, allow_network=allow_network)
    command += ["--dev", "/dev", "--proc", "/proc", "--size", str(TMPFS_BYTES), "--tmpfs", "/tmp"]
    command += ["--bind", str(workdir), str(workdir), "--remount-ro", "/", "--chdir", str(workdir), "--"]
    if as_root():
        command += [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        command += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
    return [*command, str(executable)]


SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
"""The machine's folders the child sees, read-only: the programs, libraries and settings an
interpreter needs. The rest (``/home``, ``/root``, ``/var``, ``/run``, ``/srv``, ``/opt``, ``/mnt``,
the project) is not there at all: no file in it to read, and no Unix socket of a host service (D-Bus,
a database, Docker, an ssh agent) to connect to, which a network namespace alone would not stop."""


def _system_view(executable: Path, *, allow_network: bool) -> list[str]:
    """bubblewrap options that show the child ``SYSTEM_FOLDERS`` and the interpreter's own folder
    (its ``bin``'s parent: ``/usr``, or a pyenv or conda prefix elsewhere), read-only, in an empty root."""
    options: list[str] = []
    for name in SYSTEM_FOLDERS:
        path = Path(name)
        if path.is_symlink():  # a merged /usr: /bin -> usr/bin
            options += ["--symlink", os.readlink(path), name]
        elif path.is_dir():
            options += ["--ro-bind", name, name]
    prefix = executable.parent.parent
    shown = [Path(folder) for folder in SYSTEM_FOLDERS]
    if prefix != Path("/") and not any(prefix.is_relative_to(folder) for folder in shown):
        for folder in reversed(prefix.parents[:-1]):  # e.g. /root, closed to 'nobody' on the host
            options += ["--perms", "0755", "--dir", str(folder)]
        options += ["--ro-bind", str(prefix), str(prefix)]
    resolver = Path(os.path.realpath("/etc/resolv.conf"))
    if allow_network and not any(resolver.is_relative_to(folder) for folder in shown):
        options += ["--ro-bind-try", str(resolver), str(resolver)]  # often below /run: the file alone
    return options


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
            limits = {"memory.max": memory_bytes, "memory.swap.max": 0, "pids.max": max_processes}
            return cls._make([CGROUP_ROOT / own[""].lstrip("/") / name], limits, 2)
        if "memory" in own and "pids" in own:
            memory = CGROUP_ROOT / "memory" / own["memory"].lstrip("/") / name
            pids = CGROUP_ROOT / "pids" / own["pids"].lstrip("/") / name
            limits = {"memory.limit_in_bytes": memory_bytes, "pids.max": max_processes}
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
            return int((self.directories[0] / "memory.failcnt").read_text()) > 0
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
