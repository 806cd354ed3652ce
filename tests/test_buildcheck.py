"""The once-per-build check that llama.cpp can generate here: crash, success, caching, the CLI's message.

The crash path runs a real child process that dies of SIGSEGV, as a llama.cpp build made for another
CPU does; the check must turn that into a ConfigurationError and cache the verdict.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from explicit_react import buildcheck, models
from explicit_react.errors import ConfigurationError

CRASH = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"]
SUCCEED = [sys.executable, "-c", "print('generated')"]
FAIL = [sys.executable, "-c", "raise SystemExit('cannot read the file')"]


def dies_of(signal_name: str) -> list[str]:
    """A probe that dies of ``signal_name``, as llama.cpp crashing or the OOM killer would make it."""
    return [sys.executable, "-c", f"import os, signal; os.kill(os.getpid(), signal.{signal_name})"]


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


@pytest.mark.parametrize("crash", ["SIGSEGV", "SIGILL", "SIGBUS", "SIGFPE", "SIGABRT"])
def test_every_crash_signal_is_cached(identity: dict[str, Any], tmp_path: Path, crash: str) -> None:
    with pytest.raises(ConfigurationError, match=f"crashed \\({crash}\\)"):
        buildcheck.check_llama_build("m.gguf", cache=tmp_path, probe=dies_of(crash))
    with pytest.raises(ConfigurationError, match="crashed"):
        buildcheck.check_llama_build("m.gguf", cache=tmp_path, probe=SUCCEED)


@pytest.mark.parametrize("kill", ["SIGKILL", "SIGTERM"])
def test_a_probe_killed_from_outside_is_not_cached(
    identity: dict[str, Any], tmp_path: Path, kill: str
) -> None:
    """The OOM killer or a supervisor ended the child: that says nothing about the build."""
    with pytest.raises(ConfigurationError, match=f"killed \\({kill}\\).*the next run checks again") as error:
        buildcheck.check_llama_build("m.gguf", cache=tmp_path, probe=dies_of(kill))
    assert "Reinstall" not in str(error.value)
    assert not (tmp_path / "llama-build-checks").exists()
    buildcheck.check_llama_build("m.gguf", cache=tmp_path, probe=SUCCEED)  # checked again: fine


@pytest.mark.parametrize(
    "damaged",
    [
        b"",
        b'{"ok": tr',  # cut short
        b"[]",
        b'{"ok": false}',  # no message
        b'{"ok": "no", "message": "x"}',
        b'{"ok": false, "message": 3, "signal": "SIGSEGV"}',
        b'{"ok": false, "message": "crashed (SIGKILL)", "signal": "SIGKILL"}',  # cached by older versions
        b"\xff",  # not UTF-8
    ],
)
def test_a_damaged_or_untrusted_verdict_is_checked_again(
    identity: dict[str, Any], tmp_path: Path, damaged: bytes
) -> None:
    path = buildcheck.verdict_path(identity, tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(damaged)
    buildcheck.check_llama_build("m.gguf", cache=tmp_path, probe=SUCCEED)
    assert json.loads(path.read_text())["ok"] is True  # replaced by the new verdict


def test_a_cache_that_cannot_be_written_is_a_warning(identity: dict[str, Any], tmp_path: Path) -> None:
    """A read-only or full cache folder: the verdict holds for this run and is not kept."""
    not_a_folder = tmp_path / "cache"
    not_a_folder.write_text("a file where the cache folder should be")
    with pytest.warns(RuntimeWarning, match="Could not write the cache file"):
        buildcheck.check_llama_build("m.gguf", cache=not_a_folder, probe=SUCCEED)
    with pytest.warns(RuntimeWarning), pytest.raises(ConfigurationError, match="crashed"):
        buildcheck.check_llama_build("m.gguf", cache=not_a_folder, probe=CRASH)


def test_two_threads_can_store_the_verdict_at_once(
    identity: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both threads have written their temporary file before either renames it: the names must differ."""
    both_written = threading.Barrier(2, timeout=30)
    rename = os.replace

    def replace_when_both_wrote(source: Any, target: Any) -> None:
        both_written.wait()
        rename(source, target)

    monkeypatch.setattr(os, "replace", replace_when_both_wrote)
    errors: list[BaseException] = []

    def check() -> None:
        try:
            buildcheck.check_llama_build("m.gguf", cache=tmp_path, probe=SUCCEED)
        except BaseException as error:  # reported by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=check) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert [p.name for p in (tmp_path / "llama-build-checks").iterdir()] == [
        buildcheck.verdict_path(identity, tmp_path).name
    ]


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
