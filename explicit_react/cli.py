"""The ``explicit-react`` command: ask one question, or chat, with Gemini, a local model or a script.

This is the only module that chooses concrete models and tools. The answer goes to stdout; the
live trace, the spinner and every message go to stderr. Exit codes: 0 answered, 1 the run stopped
without an answer (a limit, a loop, a model failure), 2 a usage or configuration mistake.
Heavy modules (LangChain, the agent, rich) are imported only once a command runs, so
``explicit-react --help`` stays fast.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from explicit_react.cli_output import LiveTrace, lenient_streams, print_result

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

    from explicit_react.agent import ExplicitReActAgent
    from explicit_react.types import AgentResult

EXIT_ANSWERED = 0
EXIT_STOPPED = 1
EXIT_USAGE = 2

PROG = "explicit-react"
DEFAULT_TOOLS = "web_search,python_repl"
TOOL_NAMES = ("web_search", "calculator", "python_repl", "search", "files:DIR", "knowledge:PATH")
CHAT_EXIT_WORDS = frozenset({"/exit", "/quit"})

EPILOG = """\
examples:
  explicit-react "What is 12% of the population of Paris?"
  explicit-react ask --model local --tools calculator,search "What is 17 * 23?"
  explicit-react --tools files:. "Which file defines main()?"
  explicit-react --json --trace run.jsonl "Who wrote the ReAct paper?"
  explicit-react --allow search --max-tool-calls 3 --max-seconds 30 --tools search,calculator "..."
  explicit-react chat --model gemini-2.5-flash

models (--model): gemini-* (needs GOOGLE_API_KEY or GEMINI_API_KEY), local, local:qwen,
  local:gemma, gguf:PATH, scripted:FILE. Default: Gemini when a key is set, else a local model.
tools (--tools): web_search, calculator, python_repl, search (offline mock), files:DIR,
  knowledge:PATH (a .txt/.md file or a folder of them); "none" for no tools.
exit codes: 0 answered, 1 stopped without an answer, 2 usage or configuration error.
"""


class UsageError(Exception):
    """A mistake on the command line; the message is shown as one line and the exit code is 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line on stderr (not the whole usage block)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {PROG} --help)")


def build_parser() -> argparse.ArgumentParser:
    """The command line: ``[ask] QUESTION`` or ``chat``, with the model, tool and guardrail options."""
    parser = _Parser(
        prog=PROG,
        usage=f"{PROG} [ask] QUESTION [options]\n       {PROG} chat [options]",
        description="Answer a question with an explicit ReAct agent (Thought -> Action -> Observation).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("words", nargs="*", metavar="QUESTION", help="the question (or `chat`)")

    agent = parser.add_argument_group("model and tools")
    agent.add_argument("--model", help="model name (default: Gemini if a key is set, else local)")
    agent.add_argument(
        "--tools", default=DEFAULT_TOOLS, help=f"comma-separated tools (default: {DEFAULT_TOOLS})"
    )
    agent.add_argument("--context", default="", help="background text the agent should use")
    agent.add_argument(
        "--mode",
        choices=("text", "tool_calling", "two_phase"),
        default="text",
        help="text: the ReAct text protocol (any model); tool_calling: the model's native tool calls; "
        "two_phase: a Thought call, then a native tool call, each turn",
    )

    limits = parser.add_argument_group("guardrails")
    limits.add_argument("--max-iterations", type=int, help="most model turns (default 5)")
    limits.add_argument("--max-tool-calls", type=int, help="most tool calls in a run")
    limits.add_argument("--max-seconds", type=float, help="wall-clock budget of a run")
    limits.add_argument("--max-tokens", type=int, help="token budget of a run")
    limits.add_argument("--allow", metavar="TOOL,...", help="only these tools may run")
    limits.add_argument("--tool-timeout", type=float, help="seconds one tool call may take")
    limits.add_argument("--llm-timeout", type=float, help="seconds one model call may take")
    limits.add_argument("--max-retries", type=int, help="retries of a failed model call (default 2)")
    limits.add_argument(
        "--on-limit",
        choices=("generate", "force"),
        help="at a limit: ask once more for an answer (generate, default) or just stop (force)",
    )
    limits.add_argument(
        "--check-answer",
        action="store_true",
        help="send a final answer that fails a check (no number, wrong unit, unsourced number) back once",
    )

    output = parser.add_argument_group("output")
    output.add_argument(
        "--verbose",
        dest="verbose",
        action="store_true",
        default=True,
        help="show each Thought / Action / Observation on stderr (default)",
    )
    output.add_argument("--quiet", "-q", dest="verbose", action="store_false", help="show only the answer")
    output.add_argument("--json", action="store_true", help="print the whole result as JSON on stdout")
    output.add_argument("--trace", metavar="FILE", help="append one JSON line per step to FILE")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit code (0 answered, 1 stopped, 2 usage or configuration error)."""
    with lenient_streams():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    try:
        try:
            try:
                args = build_parser().parse_intermixed_args(argv)
            except SystemExit as done:  # --help
                return int(done.code or 0)
            command, question = _command(args.words)
            agent = build_agent(args)
        except (UsageError, ValueError) as error:  # ValueError: ConfigurationError and its kin
            return _fail(str(error))
        except OSError as error:  # a file named by an option that cannot be read or written
            return _fail(f"{error.strerror or error}: {error.filename}" if error.filename else str(error))
        if command == "chat":
            return chat(agent, args)
        return ask(agent, question, args)
    except KeyboardInterrupt:  # while loading a model or during a run
        print(file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of stdout went away (`| head`): nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_STOPPED


def _fail(message: str) -> int:
    print(f"{PROG}: error: {' '.join(message.split())}", file=sys.stderr)
    return EXIT_USAGE


def _command(words: Sequence[str]) -> tuple[str, str]:
    """``("ask", question)`` or ``("chat", "")`` from the positional words."""
    if words and words[0] == "chat":
        if len(words) > 1:
            raise UsageError("chat takes no question; type your questions after it starts")
        return "chat", ""
    if words and words[0] == "ask":
        words = words[1:]
    question = " ".join(words).strip()
    if not question:
        raise UsageError(f'give a question, e.g. {PROG} "What is 2 + 2?", or start {PROG} chat')
    return "ask", question


# --- building the agent --------------------------------------------------------------------------


def _split(spec: str) -> list[str]:
    return [part.strip() for part in spec.split(",") if part.strip()]


def build_tools(spec: str) -> list[BaseTool]:
    """The tools named in a comma-separated ``--tools`` value; ``UsageError`` for an unknown one, an
    empty value (``--tools "$TOOLS"`` with the variable unset ran with no tools) or a name twice."""
    from explicit_react import tools

    if not _split(spec):
        raise UsageError("--tools is empty: name the tools (e.g. --tools calculator,search), or none")
    built: list[BaseTool] = []
    for name in _split(spec):
        kind, _, argument = name.partition(":")
        if name == "none":
            continue
        if name == "web_search":
            built.append(tools.WebSearchTool())
        elif name == "calculator":
            built.append(tools.CalculatorTool())
        elif name in ("python_repl", "python"):
            built.append(tools.PythonREPLTool())
        elif name == "search":
            built.append(tools.MockSearchTool())
        elif kind == "files" and argument:
            if not Path(argument).expanduser().is_dir():
                raise UsageError(f"--tools files:{argument}: no such directory")
            built.extend(tools.file_tools(Path(argument).expanduser()))
        elif kind == "knowledge" and argument:
            built.append(_knowledge_tool(argument))
        elif kind in ("files", "knowledge"):
            raise UsageError(f"--tools {kind} needs a path: {kind}:{'DIR' if kind == 'files' else 'PATH'}")
        else:
            raise UsageError(
                f"unknown tool {name!r} in --tools{_did_you_mean(kind)}; valid: {', '.join(TOOL_NAMES)}, or none"
            )
    names = [tool.name for tool in built]
    if twice := sorted({name for name in names if names.count(name) > 1}):
        raise UsageError(
            f"--tools gives more than one tool named {', '.join(map(repr, twice))}; name each once"
        )
    return built


def _did_you_mean(kind: str) -> str:
    import difflib

    known = [name.partition(":")[0] for name in TOOL_NAMES] + ["none"]
    close = difflib.get_close_matches(kind, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _knowledge_tool(location: str) -> BaseTool:
    try:
        return _read_knowledge(location)
    except OSError as error:  # a file that fails as it is read (EIO) names no file
        raise UsageError(_os_error(f"--tools knowledge:{location}", error)) from error


def _read_knowledge(location: str) -> BaseTool:
    from explicit_react.scratchpad import printable
    from explicit_react.tools import KnowledgeBaseTool
    from explicit_react.tools._file_io import file_text

    path = Path(location).expanduser()
    if path.is_dir():
        with warnings.catch_warnings(record=True) as skipped:
            warnings.simplefilter("always")
            tool = KnowledgeBaseTool.from_folder(path)
        for warning in skipped:  # one line each, not Python's warning with its source line
            print(f"{PROG}: warning: {printable(str(warning.message))}", file=sys.stderr)
        if not tool.passages:
            raise UsageError(f"--tools knowledge:{location}: the folder holds no .txt or .md files with text")
        return tool
    if path.is_file():
        text = file_text(path.read_bytes())  # read as a folder's files are: their encoding, not binary
        if text is None:
            raise UsageError(f"--tools knowledge:{location}: a binary file, not text (it holds NUL bytes)")
        return KnowledgeBaseTool([{"content": text, "source": path.name}])
    raise UsageError(f"--tools knowledge:{location}: no such file or directory")


def load_named_model(name: str | None, *, say: bool = False) -> Any:
    """The chat model for ``--model`` (or the default one); ``UsageError`` when none is configured.
    With ``say``, a default choice is named on stderr, with why it was made: a first run without a
    key otherwise gave no sign that a 270M local model, not Gemini, was answering."""
    from explicit_react import models

    chosen = name if name is not None else models.default_model_name()  # --model "" is an error
    if chosen is None:
        raise UsageError(models.NO_MODEL_MESSAGE)
    if name is None and say:
        print(f"{PROG}: {_default_choice(chosen)}; choose another with --model", file=sys.stderr)
    try:
        return models.load_model(chosen)
    except OSError as error:  # a scripted: or gguf: file that fails as it is read names no file
        raise UsageError(_os_error(f"{'--model' if name else 'model'} {chosen}", error)) from error
    except ValueError as error:  # ConfigurationError: "scripted:FILE: no such file" names the option too
        message = str(error)
        raise UsageError(f"--model {message}" if name and message.startswith(chosen) else message) from error


def _default_choice(chosen: str) -> str:
    """What the default model is and why it was chosen, in words."""
    from explicit_react import models

    if chosen != "local":
        return f"using {chosen} (a Gemini API key is set)"
    weights = models.LOCAL_WEIGHTS[models.best_local_model()]
    return f"no Gemini API key is set: using the local model {weights.description}, on this CPU"


def _os_error(option: str, error: OSError) -> str:
    """``--model scripted:FILE: Permission denied``, with the file the error names if the option does not."""
    message = f"{option}: {error.strerror or error}"
    filename = error.filename
    if filename is not None and os.fsdecode(filename) not in option:
        message += f": {os.fsdecode(filename)}"
    return message


def build_agent(args: argparse.Namespace) -> ExplicitReActAgent:
    """The agent the options describe, with the live trace on stderr unless ``--quiet``."""
    tools = build_tools(args.tools)
    if args.allow is not None and (
        strange := [n for n in _split(args.allow) if n not in {t.name for t in tools}]
    ):
        given = f"it gives {', '.join(tool.name for tool in tools)}" if tools else "it gives no tools"
        raise UsageError(f"--allow names {', '.join(strange)}, not among the tools of --tools ({given})")
    llm = load_named_model(args.model, say=args.verbose)
    from explicit_react.agent import ExplicitReActAgent
    from explicit_react.options import OptionError

    options: dict[str, Any] = {
        "max_iterations": args.max_iterations,
        "max_tool_calls": args.max_tool_calls,
        "max_seconds": args.max_seconds,
        "max_tokens": args.max_tokens,
        "allowed_tools": _split(args.allow) if args.allow is not None else None,
        "tool_timeout": args.tool_timeout,
        "llm_timeout": args.llm_timeout,
        "max_retries": args.max_retries,
        "on_limit": args.on_limit,
    }
    options = {key: value for key, value in options.items() if value is not None}
    if args.mode != "text":
        options["mode"] = args.mode
    if args.check_answer:
        options["check_answer"] = True
    listeners: list[Any] = [LiveTrace()] if args.verbose else []
    if args.trace is not None:
        listeners.append(TraceFile(args.trace))
    try:
        return ExplicitReActAgent(llm, tools, listeners=listeners, **options)
    except OptionError as error:  # in the command's words: its flag, and no None
        if error.name not in options:
            raise
        raise UsageError(
            f"--{error.name.replace('_', '-')} must be {error.allows}; got {error.value!r}"
        ) from None


class TraceFile:
    """``--trace FILE``: the ``JsonlTrace`` audit trail, but a write that fails mid-run (a full disk)
    is one warning on stderr and the end of the trace, not the end of the run.

    A ``JsonlTrace`` given to the agent directly raises the ``OSError`` and so ends the run (as any
    failing listener does, docs/guardrails.md); the command would then lose the answer. A path that
    cannot be written at all still fails here, before the run (exit 2).
    """

    def __init__(self, path: str) -> None:
        from explicit_react.trace import JsonlTrace

        self.path = path
        try:
            self.trace: Any = JsonlTrace(path)
        except FileExistsError as error:  # a folder of the path is a file ("notes.txt/run.jsonl")
            raise UsageError(
                f"--trace {path}: {os.fsdecode(error.filename)} is a file, not a folder"
            ) from error
        except OSError as error:
            raise UsageError(_os_error(f"--trace {path}", error)) from error

    def on_step(self, step: Any, turn: int, max_turns: int | None) -> None:
        """Write the step while the file can be written."""
        if self.trace is not None:
            self._write(self.trace.on_step, step, turn, max_turns)

    def on_result(self, result: AgentResult) -> None:
        """Write the result while the file can be written."""
        if self.trace is not None:
            self._write(self.trace.on_result, result)

    def _write(self, method: Any, *args: Any) -> None:
        from explicit_react.scratchpad import printable

        try:
            method(*args)
        except OSError as error:
            self.trace = None
            reason = error.strerror or str(error)
            print(
                f"{PROG}: warning: --trace {printable(self.path)}: {printable(reason)}; the trace stops here",
                file=sys.stderr,
            )


# --- the two commands ----------------------------------------------------------------------------


def _run(agent: ExplicitReActAgent, question: str, context: str) -> AgentResult:
    try:
        return agent.run(question, context)
    finally:
        for listener in agent.listeners:
            if isinstance(listener, LiveTrace):
                listener.stop_spinner()


def ask(agent: ExplicitReActAgent, question: str, args: argparse.Namespace) -> int:
    """Answer one question; exit code 0 when the model answered, 1 when the run stopped."""
    result = _run(agent, question, args.context)
    print_result(result, args.json)
    _say_why_it_stopped(result, args)
    return EXIT_ANSWERED if result.success else EXIT_STOPPED


def _say_why_it_stopped(result: AgentResult, args: argparse.Namespace) -> None:
    """Without the trace (which says it), a run that stopped short says why on stderr."""
    from explicit_react.scratchpad import printable

    if not result.success and not args.verbose:
        print(
            f"{PROG}: stopped ({result.stop_reason.value}): {printable(result.error or '')}", file=sys.stderr
        )


def chat(agent: ExplicitReActAgent, args: argparse.Namespace) -> int:
    """Answer questions read from stdin until EOF or ``/exit``, each with the conversation so far."""
    from explicit_react.context import format_context

    interactive = sys.stdin.isatty()
    if interactive:
        print("Ask a question (/exit or Ctrl-D to leave).", file=sys.stderr)
    history: list[dict[str, str]] = []
    while True:
        if interactive:
            print("you> ", end="", file=sys.stderr, flush=True)
        line = sys.stdin.readline()
        if not line:
            break
        question = line.strip()
        if not question:
            continue
        if question in CHAT_EXIT_WORDS:
            break
        turns = format_context(history) if history else ""
        context = "\n\n".join(part for part in (args.context, turns) if part)
        result = _run(agent, question, context)
        print_result(result, args.json, indent=None)  # one JSON line per answer
        _say_why_it_stopped(result, args)
        history += [{"role": "user", "content": question}, {"role": "assistant", "content": result.answer}]
    return EXIT_ANSWERED
