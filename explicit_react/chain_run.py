"""The LangChain chain run around an agent run: started when anyone can hear it, skipped when no one can.

A chain run is a run id, an ``on_chain_start`` event and a child callback manager that every model
and tool call copies; with no handler anywhere, LangChain drops all of it and nobody can tell it
happened. So ``start`` skips it only when that is certain:

- the callback manager LangChain configures for the run's ``config`` has no handler: none in
  ``config["callbacks"]``, and none that LangChain adds itself (tracing enabled by the environment
  or by ``tracing_context``, ``set_debug``, ``set_verbose``, the context hooks of
  ``register_configure_hook`` such as ``collect_runs``);
- the model and every tool have no callbacks of their own and are not ``verbose`` (their handlers
  would see the chain run as the parent of their runs), and the model is a LangChain model, a plain
  ``RunnableBinding`` of one (``bind``, ``bind_tools``) with no callbacks or listeners in its config,
  or a plain callable; any other runnable might hold a handler anywhere inside: it keeps the chain run.

Then the model and tool calls get the manager the chain run's ``get_child`` would have given them,
with the same tags and metadata (those of the config), and no parent run, which no handler sees; or,
when that manager would carry nothing at all, no manager (``None``), from which LangChain configures
each call exactly as from the empty one, without copying it first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from langchain_core.callbacks import BaseCallbackManager
from langchain_core.language_models import BaseLanguageModel
from langchain_core.runnables import Runnable, RunnableBinding, RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config
from langchain_core.tools import BaseTool

from explicit_react.drivers import Call, Machine

Configure = Callable[[RunnableConfig], BaseCallbackManager]
"""``get_callback_manager_for_config`` for the sync driver, ``get_async_callback_manager_for_config``
for the async one: the chain run's manager must be of the driver's kind."""


def start(
    config: RunnableConfig,
    configure: Configure,
    inputs: dict[str, Any],
    name: str,
    parts: Iterable[Any],
) -> Machine[tuple[Any, Any]]:
    """Start the chain run of one agent run: ``(run manager, callbacks for its calls)``; the run
    manager is ``None`` when no one could hear the chain run (see above), which is then skipped.
    ``parts``: the models and tools the run calls. ``config``'s ``run_id`` is the chain run's id."""
    root: Any = configure(config)  # a CallbackManager or an AsyncCallbackManager
    run_id = config.get("run_id")
    if not (root.handlers or root.inheritable_handlers) and all(map(quiet, parts)):
        return None, _quiet_callbacks(root)
    manager = yield Call(
        partial(root.on_chain_start, None, inputs, name=name, run_id=run_id),
        partial(root.on_chain_start, None, inputs, name=name, run_id=run_id),
    )
    return manager, manager.get_child()


def quiet(part: Any) -> bool:
    """Whether ``part`` (a model, a tool, or a plain callable) can have no handler of its own."""
    while _plain_binding(part):
        if part.config.get("callbacks") or part.config_factories:
            return False
        part = part.bound
    if isinstance(part, (BaseLanguageModel, BaseTool)):
        return not part.callbacks and not part.verbose
    return callable(part) and not isinstance(part, Runnable)


def _plain_binding(part: Any) -> bool:
    """A ``RunnableBinding`` that calls its model as ``RunnableBinding`` does (``bind`` gives a
    subclass that only narrows types); ``with_retry``'s, for one, runs code of its own."""
    kind = type(part)
    return (
        isinstance(part, RunnableBinding)
        and kind.invoke is RunnableBinding.invoke
        and kind.ainvoke is RunnableBinding.ainvoke
    )


def _quiet_callbacks(root: BaseCallbackManager) -> BaseCallbackManager | None:
    """The callbacks for the calls of a run with no chain run: ``None`` when the child (``_child``)
    would be empty (no tags, no metadata) and no parent runnable's config in the context has callbacks
    (a call given ``None`` would take those instead: ``ensure_config``); else the child. LangChain
    configures a call from ``None`` as from the empty child, and spares each call a copy of it."""
    if root.inheritable_tags or root.inheritable_metadata:
        return _child(root)
    parent = var_child_runnable_config.get()
    return _child(root) if parent and parent.get("callbacks") is not None else None


def _child(root: BaseCallbackManager) -> BaseCallbackManager:
    """What ``get_child`` of a chain run started by ``root`` gives, with no parent run: no handlers,
    and ``root``'s inheritable tags and metadata (those of the config)."""
    child = type(root)(handlers=[])
    child.add_tags(root.inheritable_tags)
    child.add_metadata(root.inheritable_metadata)
    return child
