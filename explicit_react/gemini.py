"""Builds the Gemini chat model (``ChatGoogleGenerativeAI``): its API key, and one request per call.

The Google client retries by itself: ``max_retries`` (default 6) attempts with its own backoff of
seconds, inside each of the agent's attempts. Left at that, a persistent 429 took 18 HTTP requests
and 102 s to end a run, and a machine with no network waited 104 s for its error. So ``load_gemini``
sets ``max_retries=1`` (one request per call: the SDK reads 0 as "use the default") unless it is
given one, and the agent's own ``max_retries`` and ``retry_backoff`` decide what is retried.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from pydantic import SecretStr

from explicit_react.errors import ConfigurationError
from explicit_react.redaction import keep_secret

API_KEY_VARIABLES = ("GOOGLE_API_KEY", "GEMINI_API_KEY")
"""Where the Gemini API key is read from, first one set wins."""

CLIENT_MAX_RETRIES = 1
"""The client's ``max_retries`` unless one is given: one HTTP request per call, no retry of its own."""


def api_key(env: Mapping[str, str]) -> str | None:
    """The Gemini API key set in ``env`` (``API_KEY_VARIABLES``), or ``None``."""
    return next((env[var].strip() for var in API_KEY_VARIABLES if env.get(var, "").strip()), None)


def load_gemini(name: str, options: dict[str, Any]) -> BaseChatModel:
    """``ChatGoogleGenerativeAI`` for the model ``name`` with ``options``; the key from the options
    or the environment, and ``max_retries=CLIENT_MAX_RETRIES`` unless the options set it."""
    from langchain_google_genai import ChatGoogleGenerativeAI

    if "model" in options:
        raise ConfigurationError(f"{name}: the model is the name given, not a 'model' option")
    given = next((k for k in (options.pop("google_api_key", None), options.pop("api_key", None)) if k), None)
    if given is not None and not isinstance(given, str | SecretStr):
        raise ConfigurationError(f"{name}: the API key must be a string, not {type(given).__name__}")
    given = (given.get_secret_value() if isinstance(given, SecretStr) else given or "").strip()
    key = given or api_key(os.environ)
    if not key:
        raise ConfigurationError(
            f"{name} needs a Gemini API key: export GOOGLE_API_KEY=... "
            "(or GEMINI_API_KEY; get one at https://aistudio.google.com/apikey)"
        )
    if given:  # a key given in code: no variable holds it, so redaction is told of it
        keep_secret(given)
    if "max_retries" not in options and "retries" not in options:  # "retries" is the field's alias
        options["max_retries"] = CLIENT_MAX_RETRIES
    model: BaseChatModel = ChatGoogleGenerativeAI(model=name, google_api_key=SecretStr(key), **options)
    return model
