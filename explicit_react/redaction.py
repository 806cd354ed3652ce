"""Secrets kept out of what a run reports: the values of environment variables whose names look secret.

The audit trail (``trace.JsonlTrace``) redacts every record with them; a model call's or a tool's
exception is redacted before its text becomes a ``ModelCallError``, an ``Error:`` observation or a
result's ``error``, since an HTTP client's error often repeats the request (``...?key=...``).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping
from math import inf
from typing import Any
from urllib.parse import quote, quote_plus

REDACTED = "[redacted]"
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)
_MIN_CHARS = 8  # shorter values are too likely to be ordinary words or numbers


_kept: set[str] = set()
"""Secrets this process was given otherwise than in its environment (``keep_secret``)."""


def keep_secret(value: str) -> None:
    """Redact ``value`` from now on, as an environment variable's secret is: for a key given in code
    (``load_model("gemini-...", google_api_key=...)`` calls this), which no variable holds."""
    global _read
    if value.strip() and value not in _kept:
        _kept.add(value)
        _read = (-inf, -1, [])  # the next reading includes it


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values (8 characters or longer) of the environment variables whose names look secret, and
    the same values with surrounding white space removed (a client given a key from a file with
    CRLF line ends sends it stripped), and their escaped forms (``_forms``); the longest first.
    Of the process's own environment (``environ`` not given), the secrets of ``keep_secret`` too."""
    env = os.environ if environ is None else environ
    values = {form for name, value in env.items() if _SECRET_NAME.search(name) for form in _forms(value)}
    if environ is None:
        values |= {form for value in _kept for form in _forms(value)}
    return sorted((v for v in values if len(v) >= _MIN_CHARS), key=len, reverse=True)


_read: tuple[float, int, list[str]] = (-inf, -1, [])
_REREAD_SECONDS = 1.0


def current_secrets() -> list[str]:
    """``secret_values()`` of the process environment, read again when a variable was added or
    removed, or a second after the last reading: cheap enough to redact every tool output (reading
    the environment takes tens of microseconds, a large share of a step's own CPU). A value changed
    in place within that second is missed until then; the trace reads it for every record."""
    global _read
    read_at, count, secrets = _read
    now = time.monotonic()
    if count != len(os.environ) or now - read_at >= _REREAD_SECONDS:
        secrets = secret_values()
        _read = (now, len(os.environ), secrets)
    return secrets


def _forms(value: str) -> set[str]:
    """The ways a value can appear in text: as it is, stripped, escaped inside a JSON string (a
    tool's dict shown as JSON writes a password's quote or backslash as \\" or \\\\), escaped
    twice (a JSON string inside a JSON document), inside a Python string's repr, and URL-encoded (an
    HTTP error repeats the request's query) the ways clients encode: every reserved character, or
    all but ``/`` (``urllib.parse.quote``'s default, yarl's), spaces as ``+``, hex digits in either case."""
    forms = {value, value.strip()}
    once = _json_escaped(forms)
    encoded = {quote(form, safe="") for form in forms} | {quote(form) for form in forms}
    encoded |= {quote_plus(form) for form in forms}
    encoded |= {re.sub(r"%[0-9A-F]{2}", lambda m: m[0].lower(), form) for form in encoded}
    quoted = {repr(form)[1:-1] for form in forms} | encoded
    return forms | once | _json_escaped(once) | quoted


def _json_escaped(forms: set[str]) -> set[str]:
    """Each form as written inside a JSON string, with non-ASCII kept and escaped."""
    return {json.dumps(form, ensure_ascii=ascii)[1:-1] for form in forms for ascii in (False, True)}


def redact(value: Any, secrets: list[str] | None = None) -> Any:
    """``value`` with every secret string replaced by ``[redacted]``, in dict keys and values, lists
    and tuples too; ``secrets`` defaults to ``secret_values()``."""
    secrets = secret_values() if secrets is None else secrets
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, dict):
        return {redact(k, secrets): redact(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact(v, secrets) for v in value)
    return value


def error_message(error: BaseException) -> str:
    """The text of ``error``, stripped and redacted, for an observation or a result's ``error``; a
    placeholder when its ``str()`` itself fails (a library's exception class can be broken so)."""
    try:
        message = str(error)
    except Exception:
        return "(its message could not be read)"
    return redact(message.strip())


def redact_cut(text: str, secrets: list[str], marker: re.Pattern[str]) -> str:
    """``text`` redacted, and also a secret's start just before a ``marker`` (where text was cut) and
    its end just after one: a cut through a secret leaves two parts that no longer match it whole."""
    text = redact(text, secrets)
    for found in reversed(list(marker.finditer(text))):
        before, after = text[: found.start()], text[found.end() :]
        for secret in secrets:
            head = next(
                (k for k in range(len(secret) - 1, _MIN_CHARS - 1, -1) if before.endswith(secret[:k])), 0
            )
            tail = next(
                (k for k in range(len(secret) - 1, _MIN_CHARS - 1, -1) if after.startswith(secret[-k:])), 0
            )
            before = before[: len(before) - head] + (REDACTED if head else "")
            after = (REDACTED if tail else "") + after[tail:]
        text = before + found.group() + after
    return text
