"""The runner script of the Python sandbox. It runs ONLY in the child process, never in the agent's.

``python -I -c SOURCE MEMORY_BYTES CPU_SECONDS FILE_BYTES PROCESSES`` (SOURCE: this file's text;
0 means no limit) sets its own resource limits,
reads the code from stdin, runs it like a REPL cell (the repr of a final expression is printed)
and exits 1 after printing the traceback of an uncaught exception. The agent process never
imports this module; python.py only passes its text to the child interpreter.
"""

from __future__ import annotations

import ast
import builtins
import io
import linecache
import os
import resource
import sys
import traceback

FILENAME = "<code>"


def _limit(kind: int, soft: int, hard: int | None = None) -> None:
    if soft > 0:
        resource.setrlimit(kind, (soft, soft if hard is None else hard))


def main() -> int:
    memory_bytes, cpu_seconds, file_bytes, processes = (int(arg) for arg in sys.argv[1:5])
    # Soft and hard limits are set together, so the code cannot raise them again.
    _limit(resource.RLIMIT_AS, memory_bytes)
    _limit(resource.RLIMIT_CPU, cpu_seconds, cpu_seconds + 1)  # SIGXCPU, then SIGKILL a second later
    _limit(resource.RLIMIT_FSIZE, file_bytes)
    _limit(
        resource.RLIMIT_NPROC, processes
    )  # counts the user's processes: python.py gives 0 unless it is 'nobody'
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core dumps of a killed process

    source = sys.stdin.read()
    sys.stdin.close()
    sys.stdin = open(os.devnull)  # noqa: SIM115 - input() in the code sees end of file, not a hang
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(encoding="utf-8", errors="backslashreplace")
    sys.path.insert(0, "")  # like the interactive interpreter: modules in the working directory import
    linecache.cache[FILENAME] = (len(source), None, source.splitlines(True), FILENAME)

    try:
        module = ast.parse(source, FILENAME, "exec")
    except SyntaxError:
        traceback.print_exc(limit=0)
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
    sys.exit(main())
