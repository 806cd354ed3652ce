"""What llama.cpp needs from this machine: a broken install or an unloadable model file is a one-line
``ConfigurationError`` saying what to do, and llama.cpp gets the CPUs this process may use."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from explicit_react.errors import ConfigurationError
from explicit_react.llama_env import import_llama_cpp, usable_cpus

ROOT = Path(__file__).resolve().parents[1]
CALL = (
    "from explicit_react.llama_env import import_llama_cpp\n"
    "from explicit_react.errors import ConfigurationError\n"
    "try:\n    import_llama_cpp()\nexcept ConfigurationError as error:\n    print(error)\n"
)


@pytest.mark.parametrize(
    ("raised", "seen"),
    [
        (
            "RuntimeError(\"Failed to load shared library '/x/libllama.so': libgomp.so.1: cannot open\")",
            "RuntimeError: Failed to load shared library",
        ),
        (
            "FileNotFoundError(\"Shared library with base name 'llama' not found\")",
            "FileNotFoundError: Shared",
        ),
        ("OSError('wrong ELF class: ELFCLASS32')", "OSError: wrong ELF class"),
    ],
)
def test_a_llama_cpp_whose_library_cannot_load_says_how_to_reinstall(
    tmp_path: Path, raised: str, seen: str
) -> None:
    """llama-cpp-python raises these from its import when its native library is missing or built for
    another system; they escaped as a traceback, or read as "the model file was deleted"."""
    package = tmp_path / "llama_cpp"
    package.mkdir()
    (package / "__init__.py").write_text(f"raise {raised}\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-c", CALL], capture_output=True, text=True, env=env, timeout=60, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    message = done.stdout.strip()
    assert seen in message and "CMAKE_ARGS=" in message and "--force-reinstall" in message
    assert "\n" not in message


def test_a_llama_cpp_that_is_not_installed_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # what an import of a missing package meets
    with pytest.raises(ConfigurationError, match=r'not installed: pip install "explicit-react\[local\]"'):
        import_llama_cpp()


def test_an_installed_llama_cpp_is_returned() -> None:
    llama_cpp = pytest.importorskip("llama_cpp")
    assert import_llama_cpp() is llama_cpp


def test_usable_cpus_follow_the_affinity_mask(monkeypatch: pytest.MonkeyPatch) -> None:
    """taskset, a container's cpuset, Slurm: os.cpu_count() counted the machine's CPUs."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert usable_cpus() == 1
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)  # macOS, Windows
    assert usable_cpus() == 64


def test_a_file_llama_cpp_cannot_load_is_a_one_line_error(tmp_path: Path) -> None:
    """pydantic wrapped llama.cpp's "Failed to load model from file" in a multi-line validation dump."""
    pytest.importorskip("llama_cpp")
    from explicit_react.llama import ChatLlama

    file = tmp_path / "text.gguf"
    file.write_text("not a model")
    with pytest.raises(ValueError, match="Failed to load model from file") as error:
        ChatLlama(model_path=str(file), n_ctx=64)
    assert "\n" not in str(error.value) and "validation error" not in str(error.value)
