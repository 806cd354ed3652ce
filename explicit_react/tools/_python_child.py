"""The runner script of the Python sandbox. It runs ONLY in the child process, never in the agent's.

``python -I -c SOURCE MEMORY_BYTES CPU_SECONDS FILE_BYTES PROCESSES KEYCTL FILTER REPORT`` (SOURCE:
this file's text; 0 means no limit) first leaves the session keyring it inherited from the agent for a
new, empty one (KEYCTL: the number of the ``keyctl`` system call here, 0 when unknown), installs the
seccomp filter FILTER (hex; empty: none, as in the sandbox, where bubblewrap installed it), sets its
own resource limits, reads the code from stdin, runs it like a REPL cell (the repr of a final
expression is printed) and exits 1 after printing the traceback of an uncaught exception. Whenever it
exits (``sys.exit`` and ``os._exit`` in the code included) it writes its exit status to the file
REPORT in its working folder, so that python.py can tell ``sys.exit(137)`` from a SIGKILL. The agent
process never imports this module; python.py only passes its text to the child interpreter.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import linecache
import os
import resource
import sys
import traceback
from collections.abc import Callable

TYPE_CHECKING = False  # typing is not imported at run time: importing it costs each call milliseconds
if TYPE_CHECKING:
    from typing import NoReturn

FILENAME = "<code>"


def _limit(kind: int, soft: int, hard: int | None = None) -> None:
    if soft > 0:
        resource.setrlimit(kind, (soft, soft if hard is None else hard))


def _keep_out_of_keyrings(keyctl: int, program: bytes) -> None:
    """Leave the agent's session keyring (systemd, pam_keyinit and Docker give every process one, and
    a credential may be kept there) for a new, empty one, then install the seccomp filter ``program``
    that refuses the keyring system calls (only the unisolated child is given one: in the sandbox
    bubblewrap installed it before this process started). Where the kernel refuses either, the code
    runs without it: unisolated, there is no security boundary anyway."""
    if not keyctl and not program:
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if keyctl:  # keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL): a new anonymous session keyring
        libc.syscall(ctypes.c_long(keyctl), ctypes.c_long(1), ctypes.c_void_p(None))
    if program:

        class SockFprog(ctypes.Structure):  # struct sock_fprog: the number of instructions, and them
            _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_char_p))

        pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
        fprog, zero = SockFprog(len(program) // 8, program), ctypes.c_ulong(0)
        # no_new_privs first: without it only a process with CAP_SYS_ADMIN may install a filter
        if libc.prctl(ctypes.c_int(pr_set_no_new_privs), ctypes.c_ulong(1), zero, zero, zero) == 0:
            mode = ctypes.c_ulong(seccomp_mode_filter)
            libc.prctl(ctypes.c_int(pr_set_seccomp), mode, ctypes.byref(fprog), zero, zero)


def _report_exits(name: str) -> Callable[[object], None]:
    """A function that writes the status this process exits with, given the argument of
    ``sys.exit``, to the file ``name`` in the working folder; ``os._exit`` calls it too.

    In the sandbox bubblewrap gives a child killed by signal N the exit status 128 + N, which
    ``sys.exit(137)`` gives as well; python.py takes a status reported here for an exit. A file, not
    a pipe passed down: no descriptor of the agent's stays open in the code's process. The folder is
    held open from the start, since the code may change directory, and in the sandbox the folder's
    own path leads through one the code's user may not enter. Only this process reports (one the
    code forked runs the same code, and its exit is not the runner's), and never through a symlink
    or into a FIFO the code put in the file's place."""
    runner, exit_now = os.getpid(), os._exit
    folder = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def report(code: object) -> None:
        if os.getpid() != runner:
            return
        # As Python exits: None is 0, a number is taken modulo 256, anything else is printed and 1.
        status = 0 if code is None else code & 0xFF if isinstance(code, int) else 1
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        with contextlib.suppress(OSError):  # no report: python.py reads the status as bubblewrap gave it
            descriptor = os.open(name, flags, 0o600, dir_fd=folder)
            try:
                os.write(descriptor, b"%d\n" % status)
            finally:
                os.close(descriptor)

    def exit_reporting(status: int) -> NoReturn:
        report(status)
        exit_now(status)

    os._exit = exit_reporting
    return report


def main() -> int:
    memory_bytes, cpu_seconds, file_bytes, processes, keyctl = (int(arg) for arg in sys.argv[1:6])
    _keep_out_of_keyrings(keyctl, bytes.fromhex(sys.argv[6]))
    # Soft and hard limits are set together, so the code cannot raise them again.
    _limit(resource.RLIMIT_AS, memory_bytes)
    _limit(resource.RLIMIT_CPU, cpu_seconds, cpu_seconds + 1)  # SIGXCPU, then SIGKILL a second later
    _limit(resource.RLIMIT_FSIZE, file_bytes)
    # Counts the processes of the user (in a user namespace, since Linux 5.14, those in it):
    # python.py gives 0 where that would not count the processes of this call alone.
    _limit(resource.RLIMIT_NPROC, processes)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core dumps of a killed process

    source = sys.stdin.read()
    sys.stdin.close()
    sys.stdin = open(os.devnull)  # noqa: SIM115 - input() in the code sees end of file, not a hang
    # Line-buffered, as on a terminal: each line printed reaches the agent at once, so it is still
    # shown when the process is then killed (the timeout, the memory limit, a crash). That costs a
    # system call a line (about a microsecond); -u (unbuffered) would make two for each print().
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(encoding="utf-8", errors="backslashreplace", line_buffering=True)
    sys.path.insert(0, "")  # like the interactive interpreter: modules in the working directory import
    linecache.cache[FILENAME] = (len(source), None, source.splitlines(True), FILENAME)

    try:
        module = ast.parse(source, FILENAME, "exec")
    except SyntaxError:
        traceback.print_exc(limit=0)
        return 1
    except (
        MemoryError,
        RecursionError,
    ) as error:  # the parser's own limits: this runner's frames say nothing
        print(
            f"{type(error).__name__}: the code is too long or too deeply nested to compile", file=sys.stderr
        )
        return 1
    final_expression = None
    if module.body and isinstance(last := module.body[-1], ast.Expr):
        module.body.pop()
        final_expression = ast.Expression(last.value)

    namespace: dict[str, object] = {"__name__": "__main__", "__builtins__": builtins}
    # The whole point of this child process is to run the code it was given, so it calls the
    # built-ins through the `builtins` module; the parent process never runs model-written code.
    run_statements = builtins.exec
    evaluate_expression = builtins.eval
    try:
        run_statements(compile(module, FILENAME, "exec"), namespace)
        if final_expression is not None:
            value = evaluate_expression(compile(final_expression, FILENAME, "eval"), namespace)
            if value is not None:
                print(repr(value))
    except SystemExit:
        raise
    except BaseException as error:
        # Drop this runner's own frame: the traceback starts in the code that was sent.
        traceback.print_exception(
            type(error), error, error.__traceback__.tb_next if error.__traceback__ else None
        )
        return 1
    finally:
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    report_exit = _report_exits(sys.argv[7])
    try:
        code: object = main()
    except SystemExit as exit_request:  # the code called sys.exit
        code = exit_request.code
    report_exit(code)
    raise SystemExit(code)
