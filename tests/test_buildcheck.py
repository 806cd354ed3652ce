"""The once-per-build check that llama.cpp can generate here: crash, success, caching, the CLI's message.

The crash path runs a real child process that dies of SIGSEGV, as a llama.cpp build made for another
CPU does; the check must turn that into a ConfigurationError and cache the verdict.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from explicit_react import buildcheck, models
from explicit_react.errors import ConfigurationError

CRASH = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"]
SUCCEED = [sys.executable, "-c", "print('generated')"]
FAIL = [sys.executable, "-c", "raise SystemExit('cannot read the file')"]


@pytest.fixture
def identity(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A fixed build identity, so these tests need no llama.cpp; the tests change it to mean a rebuild."""
    fixed: dict[str, Any] = {"llama_cpp": "0.3.36", "cpu": ["flags: avx2 amx_tile"], "model": ["m.gguf", 4]}
    monkeypatch.setattr(buildcheck, "build_identity", lambda path: dict(fixed))
    return fixed


def test_a_crashing_build_is_a_configuration_error_with_the_reinstall_command(
    identity: dict[str, Any], tmp_path: Path
) -> None:
    with pytest.raises(ConfigurationError) as error:
        buildcheck.check_llama_build("m.gguf", cache=tmp_path, probe=CRASH)
    message = str(error.value)
    assert "crashed (SIGSEGV)" in message
    assert buildcheck.reinstall_command("0.3.36") in message
    assert "-DGGML_NATIVE=OFF" in message
    assert "--no-cache-dir" in message  # pip's wheel cache would hand back the same bad build


def test_the_verdict_is_cached_so_the_child_runs_once_per_build(
    identity: dict[str, Any], tmp_path: Path
) -> None:
    with pytest.raises(ConfigurationError):
        buildcheck.check_llama_build("m.gguf", cache=tmp_path, probe=CRASH)
    with pytest.raises(ConfigurationError, match="crashed"):  # cached: a healthy probe is not even run
        buildcheck.check_llama_build("m.gguf", cache=tmp_path, probe=SUCCEED)

    identity["llama_cpp"] = "0.3.37"  # a reinstall changes the key: checked again
    buildcheck.check_llama_build("m.gguf", cache=tmp_path, probe=SUCCEED)
    buildcheck.check_llama_build("m.gguf", cache=tmp_path, probe=CRASH)  # the good verdict is cached too


def test_another_cpu_is_checked_again(identity: dict[str, Any], tmp_path: Path) -> None:
    buildcheck.check_llama_build("m.gguf", cache=tmp_path, probe=SUCCEED)
    identity["cpu"] = ["flags: avx2 avx512f amx_tile amx_int8"]
    with pytest.raises(ConfigurationError, match="crashed"):
        buildcheck.check_llama_build("m.gguf", cache=tmp_path, probe=CRASH)


def test_a_child_that_fails_without_crashing_is_not_cached(identity: dict[str, Any], tmp_path: Path) -> None:
    buildcheck.check_llama_build("m.gguf", cache=tmp_path, probe=FAIL)  # loading will report the error
    assert not (tmp_path / "llama-build-checks").exists()


def test_a_hung_child_is_a_configuration_error_and_not_cached(
    identity: dict[str, Any], tmp_path: Path
) -> None:
    hang = [sys.executable, "-c", "import time; time.sleep(60)"]
    with pytest.raises(ConfigurationError, match="did not finish"):
        buildcheck.check_llama_build("m.gguf", cache=tmp_path, probe=hang, timeout=0.5)
    assert not (tmp_path / "llama-build-checks").exists()


@pytest.fixture
def crashing_gguf(identity: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A GGUF path whose build check runs a child that dies of SIGSEGV (the cache in tmp_path)."""
    file = tmp_path / "model.gguf"
    file.write_bytes(b"GGUF")
    monkeypatch.setattr(models, "LOCAL_EXTRA_MODULES", ("json",))
    monkeypatch.setenv("EXPLICIT_REACT_CACHE", str(tmp_path / "cache"))
    real_check = buildcheck.check_llama_build
    monkeypatch.setattr(buildcheck, "check_llama_build", lambda path: real_check(path, probe=CRASH))
    return file


def test_load_gguf_checks_the_build_before_loading(
    crashing_gguf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(models, "_chat_model_class", lambda: pytest.fail("the model was loaded"))
    with pytest.raises(ConfigurationError, match="crashed"):
        models.load_model(f"gguf:{crashing_gguf}")


def test_the_cli_prints_the_crash_as_a_one_line_error(
    crashing_gguf: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from explicit_react import cli

    code = cli.main(["--model", f"gguf:{crashing_gguf}", "What is 17 * 23?"])

    err = capsys.readouterr().err
    assert code == 2
    assert "crashed (SIGSEGV)" in err
    assert "pip install --force-reinstall" in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_cpu_description_reads_the_model_name_and_flags(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nmodel name\t: Intel Xeon\nflags\t\t: avx2 amx_tile\ncache size\t: 1 KB\n\n"
        "processor\t: 1\nmodel name\t: Intel Xeon\n"
    )
    assert buildcheck._cpu_description(cpuinfo) == ["model name\t: Intel Xeon", "flags\t\t: avx2 amx_tile"]
