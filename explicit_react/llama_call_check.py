"""Checks a tool call's arguments against the tool's JSON schema when the call is read.

The grammar holds a call to most of its schema, not all of it: a pattern it could not write, a bound
past ``llama_regex.MAX_COUNT``, and nothing at all when the caller gave a grammar of their own. A call
that breaks its schema becomes an invalid call (as a malformed one is), so the tool never runs with
arguments its schema forbids and the reply says why. The check is the ``jsonschema`` library's
(Draft 2020-12, the draft pydantic writes); annotations such as ``format`` are not asserted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

__all__ = ["schema_problem"]


def schema_problem(
    value: Any, schema: Any, definitions: Mapping[str, Any], at: str = "arguments"
) -> str | None:
    """Why ``value`` (found at ``at``) breaks ``schema``, in one sentence that says where; ``None`` when
    it follows it. ``definitions``: what ``#/$defs/NAME`` refs name (as ``llama_schema`` writes them).

    A schema the check cannot read (a pattern Python's ``re`` refuses, a ``$ref`` to nowhere, an
    unknown type) is not held against the call: the tool's own validation still runs when it is called.
    """
    if not isinstance(schema, Mapping):
        return f"{at}: no value is allowed here" if schema is False else None
    try:
        validator = _validator(json.dumps({**schema, "$defs": {**definitions, **schema.get("$defs", {})}}))
        error = best_match(validator.iter_errors(value))
    except Exception:  # an unreadable schema, not a bad call (docstring)
        return None
    if error is None:
        return None
    where = at + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path)
    return f"{where}: {error.message}"


@lru_cache(maxsize=256)
def _validator(schema_json: str) -> Draft202012Validator:
    """One validator per schema (a tool's schema is the same for every call of it)."""
    return Draft202012Validator(json.loads(schema_json))
