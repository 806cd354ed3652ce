"""What llama.cpp needs from this machine: its library loaded, and the CPUs this process may use.

- ``import_llama_cpp``: llama-cpp-python installed but unusable (its native library missing, built for
  another system, or missing ``libgomp``) raised ``RuntimeError`` or ``FileNotFoundError`` from deep
  inside its import, which ``explicit_react.models`` showed as a traceback or as "the model file was
  deleted while loading". Here it is a ``ConfigurationError`` with the command that reinstalls it.
- ``usable_cpus``: ``os.cpu_count()`` counts the machine's CPUs, not the ones this process may run on
  (``taskset``, a container's cpuset, a Slurm allocation); more llama.cpp threads than those made a
  generation slower, not faster.

Importing this module does not import llama_cpp.
"""

from __future__ import annotations

import importlib
import os
from importlib import metadata
from types import ModuleType

from explicit_react.buildcheck import PORTABLE_CMAKE_ARGS, reinstall_command
from explicit_react.errors import ConfigurationError

__all__ = ["import_llama_cpp", "usable_cpus"]

LOCAL_EXTRA_INSTALL = 'pip install "explicit-react[local]"'


def import_llama_cpp() -> ModuleType:
    """The ``llama_cpp`` module; ``ConfigurationError`` saying how to fix it when it is not installed
    or cannot be loaded."""
    try:
        return importlib.import_module("llama_cpp")
    except ImportError as error:
        if error.name == "llama_cpp":  # not installed (or blocked: None in sys.modules)
            raise ConfigurationError(
                f"Local models need llama-cpp-python, which is not installed: {LOCAL_EXTRA_INSTALL}"
            ) from error
        # A missing dependency is installed by name; a part of llama_cpp itself missing is a
        # damaged install ("pip install llama_cpp.llama_cpp" is no command).
        name = error.name or "llama_cpp."
        missing = _reinstall() if name.startswith("llama_cpp.") else f"pip install {name.split('.')[0]}"
        raise ConfigurationError(f"llama-cpp-python cannot be imported ({error}): {missing}") from error
    except (OSError, RuntimeError) as error:  # FileNotFoundError is an OSError
        raise ConfigurationError(
            f"llama-cpp-python is installed but its llama.cpp library cannot be loaded "
            f"({type(error).__name__}: {error}). Reinstall it: {_reinstall()}"
        ) from error


def _reinstall() -> str:
    try:
        return reinstall_command(metadata.version("llama-cpp-python"))
    except metadata.PackageNotFoundError:  # imported from a folder, not installed by pip
        return f'CMAKE_ARGS="{PORTABLE_CMAKE_ARGS}" pip install --force-reinstall --no-cache-dir llama-cpp-python'


def usable_cpus() -> int:
    """How many CPUs this process may run on: its affinity mask where the system has one (Linux),
    else the machine's count; at least 1."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # macOS and Windows have no affinity mask to read
        return os.cpu_count() or 1
