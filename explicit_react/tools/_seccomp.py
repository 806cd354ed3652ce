"""The seccomp filter that keeps the kernel's keyrings and new namespaces out of the sandbox
(``sandbox_filter``), a classic BPF program written by hand for the machines in ``ARCHITECTURES``,
and the pipe through
which bubblewrap reads it (``seccomp_pipe``). ``_sandbox.py`` hands it to bubblewrap; unisolated,
``_python_child.py`` installs it itself.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Architecture:
    """What the seccomp filter needs to know of a machine: its audit architecture (the kernel tells
    the filter which system-call table a call uses), its numbers of the keyring system calls, and
    where the numbers of a second table with the same audit architecture start (x32), if any."""

    audit: int
    add_key: int
    request_key: int
    keyctl: int
    socket: int
    shmget: int
    memfd_create: int
    clone: int
    unshare: int
    setns: int
    foreign_from: int | None = None


ARCHITECTURES = {
    "x86_64": Architecture(
        0xC000003E,
        add_key=248,
        request_key=249,
        keyctl=250,
        socket=41,
        shmget=29,
        memfd_create=319,
        clone=56,
        unshare=272,
        setns=308,
        foreign_from=0x40000000,
    ),
    "aarch64": Architecture(
        0xC00000B7,
        add_key=217,
        request_key=218,
        keyctl=219,
        socket=198,
        shmget=194,
        memfd_create=279,
        clone=220,
        unshare=97,
        setns=268,
    ),
}
"""The machines (``os.uname().machine``) the keyring filter is written for (linux/audit.h and the
kernel's system-call tables). Elsewhere there is no filter, and ``Support`` says so."""


def architecture(machine: str | None = None) -> Architecture | None:
    """This Linux machine's entry in ``ARCHITECTURES`` (or ``machine``'s); ``None`` elsewhere."""
    if machine is None:
        if not sys.platform.startswith("linux"):
            return None
        machine = os.uname().machine
    return ARCHITECTURES.get(machine)


IO_URING = (425, 426, 427)
"""io_uring_setup, io_uring_enter, io_uring_register: the same numbers on x86_64 and aarch64. A ring
makes system calls' work (a socket of any family) without the system calls this filter reads."""
KEYCTL_JOIN_SESSION_KEYRING = 1
AF_VSOCK = 40
"""The address family of virtual-machine sockets, which a network namespace does not isolate."""
CLONE3 = 435
"""clone3: the same number on x86_64 and aarch64. Its flags are in memory, where a filter cannot read
them, so it fails with ``ENOSYS``, and the C library falls back to ``clone`` (as under Docker)."""
NEW_NAMESPACES = 0x7E020000
"""``clone``'s flags for new namespaces (linux/sched.h): CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC,
NEWUSER, NEWPID and NEWNET."""
_SECCOMP_RET_KILL_PROCESS, _SECCOMP_RET_ERRNO, _SECCOMP_RET_ALLOW = 0x80000000, 0x00050000, 0x7FFF0000
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JGE_K, _BPF_JSET_K, _BPF_RET_K = (
    0x20,
    0x15,
    0x35,
    0x45,
    0x06,
)  # linux/filter.h
_NR, _ARCH, _ARGS = 0, 4, 16  # offsets in struct seccomp_data; each argument is 8 bytes


@functools.cache
def sandbox_filter(machine: str | None = None) -> bytes | None:
    """The seccomp filter (a classic BPF program, as bubblewrap's ``--seccomp`` reads it) that keeps
    the kernel's keyrings and new namespaces from the sandbox, or ``None`` on a machine it is not
    written for.

    Keyrings are not namespaced: the child inherits the agent's session keyring (which systemd,
    pam_keyinit and Docker give every process, and where a credential may be kept) and shares the
    user keyring of its user with every other call. So ``add_key``, ``request_key`` and ``keyctl``
    fail with ``EPERM``, as in Docker's default profile; only ``keyctl(KEYCTL_JOIN_SESSION_KEYRING,
    NULL)`` is let through, with which the child leaves the agent's session keyring for a new, empty
    one (``_python_child.py`` does so first). Two more things a namespace does not hold: a
    ``socket(AF_VSOCK, ...)`` fails with ``EAFNOSUPPORT`` (vsock reaches the host of a virtual
    machine, a WSL2 or Firecracker one, whatever the network namespace), and ``shmget`` with
    ``EPERM`` (System V shared memory is no process's memory: without a cgroup, four 300 MB segments
    got round a 512 MB limit), and so do ``memfd_create`` (the same, 768 MB under a 512 MB limit) and
    io_uring (a ring made the AF_VSOCK socket without the ``socket`` call). No new namespaces either:
    ``unshare`` and ``setns`` fail with ``EPERM``, and so does a ``clone`` that asks for a namespace
    (``NEW_NAMESPACES``); ``clone3`` fails with ``ENOSYS``. A user namespace would give the code every
    capability inside it, and with them the kernel's code for mounts, network and firewall set-up
    that an unprivileged process cannot reach otherwise: the way in of many a kernel exploit, and
    why Docker's default profile refuses them too. Every other system call is allowed. A call through
    another system-call table (x32 on x86_64, or a 32-bit program) kills the process: its numbers
    mean other calls, nothing this sandbox runs makes one, and it is a known way around filters
    that only read the number."""
    arch = architecture(machine)
    if arch is None or sys.byteorder != "little":  # the argument offsets below are little-endian
        return None
    body: list[tuple[int, str | None, str | None, int]] = [  # (operation, jump if true, if false, value)
        (_BPF_LD_W_ABS, None, None, _ARCH),
        (_BPF_JEQ_K, None, "kill", arch.audit),
        (_BPF_LD_W_ABS, None, None, _NR),
        *([(_BPF_JGE_K, "kill", None, arch.foreign_from)] if arch.foreign_from else []),
        (_BPF_JEQ_K, "deny", None, arch.add_key),
        (_BPF_JEQ_K, "deny", None, arch.request_key),
        (_BPF_JEQ_K, "deny", None, arch.shmget),
        (_BPF_JEQ_K, "deny", None, arch.memfd_create),
        *((_BPF_JEQ_K, "deny", None, number) for number in IO_URING),
        (_BPF_JEQ_K, "deny", None, arch.unshare),
        (_BPF_JEQ_K, "deny", None, arch.setns),
        (_BPF_JEQ_K, "no_system_call", None, CLONE3),
        (_BPF_JEQ_K, "clone", None, arch.clone),
        (_BPF_JEQ_K, "socket", None, arch.socket),
        (_BPF_JEQ_K, None, "allow", arch.keyctl),
        (_BPF_LD_W_ABS, None, None, _ARGS),  # keyctl's operation: an int, the low half is what counts
        (_BPF_JEQ_K, None, "deny", KEYCTL_JOIN_SESSION_KEYRING),
        (_BPF_LD_W_ABS, None, None, _ARGS + 8),  # the keyring's name: NULL, both halves
        (_BPF_JEQ_K, None, "deny", 0),
        (_BPF_LD_W_ABS, None, None, _ARGS + 12),
        (_BPF_JEQ_K, "allow", "deny", 0),
    ]
    sections = {"socket": len(body), "clone": len(body) + 2}
    body += [
        (_BPF_LD_W_ABS, None, None, _ARGS),  # socket's domain: an int, the low half is what counts
        (_BPF_JEQ_K, "no_vsock", "allow", AF_VSOCK),
        (_BPF_LD_W_ABS, None, None, _ARGS),  # clone's flags: every namespace flag is in the low half
        (_BPF_JSET_K, "deny", "allow", NEW_NAMESPACES),
    ]
    returns = {
        "allow": _SECCOMP_RET_ALLOW,
        "deny": _SECCOMP_RET_ERRNO | errno.EPERM,
        "kill": _SECCOMP_RET_KILL_PROCESS,
        "no_vsock": _SECCOMP_RET_ERRNO | errno.EAFNOSUPPORT,
        "no_system_call": _SECCOMP_RET_ERRNO | errno.ENOSYS,
    }
    where = {label: len(body) + index for index, label in enumerate(returns)} | sections

    def jump(at: int, label: str | None) -> int:  # classic BPF jumps forward, from the next instruction
        return 0 if label is None else where[label] - at - 1

    program = [
        struct.pack("=HBBI", op, jump(at, yes), jump(at, no), k) for at, (op, yes, no, k) in enumerate(body)
    ]
    program += [struct.pack("=HBBI", _BPF_RET_K, 0, 0, value) for value in returns.values()]
    return b"".join(program)


@contextlib.contextmanager
def seccomp_pipe(program: bytes | None) -> Iterator[int | None]:
    """A descriptor to pass to the command (``pass_fds``) from which bubblewrap reads ``program``;
    ``None`` when there is none. Closed on leaving: start the command inside the block."""
    if program is None:
        yield None
        return
    read, write = os.pipe()  # both close-on-exec: only the command the descriptor is passed to gets it
    try:
        os.write(write, program)  # a few hundred bytes: far below a pipe's capacity
    finally:
        os.close(write)
    try:
        yield read
    finally:
        os.close(read)
