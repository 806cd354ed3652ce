"""A pytest plugin that points langchain_classic's executor-side names at explicit_react's.

Loaded by ``bench/peer_suite.py`` with ``-p peer_redirect`` (``bench/`` on ``PYTHONPATH``) for the
explicit_react run of langchain_classic's own unit tests. At ``pytest_configure`` (before any test
module is imported) it replaces, in every loaded ``langchain_classic`` module, each of these names
that is bound to the classic object:

- ``AgentExecutor``                 -> ``explicit_react.AgentExecutor``
- ``AgentExecutorIterator``         -> the class ``explicit_react.AgentExecutor.iter()`` returns
- ``create_react_agent``            -> ``explicit_react.create_react_agent``
- ``ReActSingleInputOutputParser``  -> ``explicit_react.ReActOutputParser``

so ``from langchain_classic.agents import AgentExecutor`` in a test, and the name lookups inside
``initialize_agent`` and ``create_react_agent``, find ours. The downloaded files are not edited.
With ``PEER_CLASSIC_UNKNOWN_TOOL=1`` in the environment, ``AgentExecutor`` is ours with
``classic_unknown_tool=True`` as its default (the option for apps that match the classic text).
Everything else (the classic agents such as ``ZeroShotAgent``, the prompts, ``Tool``) stays classic:
that is what an app that switches its imports keeps using.
"""

from __future__ import annotations

import importlib
import os
import sys
import typing
from typing import Any

CLASSIC_MODULES = (
    "langchain_classic.agents",
    "langchain_classic.agents.agent",
    "langchain_classic.agents.agent_iterator",
    "langchain_classic.agents.initialize",
    "langchain_classic.agents.react.agent",
    "langchain_classic.agents.output_parsers",
    "langchain_classic.agents.output_parsers.react_single_input",
)


def replacements() -> dict[str, tuple[Any, Any]]:
    """Each redirected name: (the classic object, ours)."""
    from langchain_classic.agents import AgentExecutor, AgentExecutorIterator, create_react_agent
    from langchain_classic.agents.output_parsers import ReActSingleInputOutputParser

    import explicit_react

    our_iterator = typing.get_type_hints(explicit_react.AgentExecutor.iter)["return"]
    ours = explicit_react.AgentExecutor
    if os.environ.get("PEER_CLASSIC_UNKNOWN_TOOL") == "1":

        class ClassicTextExecutor(explicit_react.AgentExecutor):
            def __init__(self, **kwargs: Any) -> None:
                super().__init__(**{"classic_unknown_tool": True, **kwargs})

        ours = ClassicTextExecutor
    return {
        "AgentExecutor": (AgentExecutor, ours),
        "AgentExecutorIterator": (AgentExecutorIterator, our_iterator),
        "create_react_agent": (create_react_agent, explicit_react.create_react_agent),
        "ReActSingleInputOutputParser": (ReActSingleInputOutputParser, explicit_react.ReActOutputParser),
    }


def redirect() -> list[str]:
    """Rebind the names in every loaded langchain_classic module; returns ``module.name`` for each."""
    for name in CLASSIC_MODULES:
        importlib.import_module(name)
    done = []
    for name, (theirs, ours) in replacements().items():
        for module_name, module in list(sys.modules.items()):
            if module_name.startswith("langchain_classic") and vars(module).get(name) is theirs:
                setattr(module, name, ours)
                done.append(f"{module_name}.{name}")
    return done


def pytest_configure(config: Any) -> None:
    """Redirect before collection, and say so in the report header."""
    config._peer_redirected = redirect()


def pytest_report_header(config: Any) -> str:
    """One header line: how many names were redirected."""
    return f"peer_redirect: {len(getattr(config, '_peer_redirected', []))} names point at explicit_react"
