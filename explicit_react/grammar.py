"""Constrained decoding for llama.cpp models: GBNF grammars that hold each turn to the ReAct format.

A small local model often names a tool that does not exist, in the style of the prompt's example
("battery_catalog" for "knowledge_search"). llama.cpp can restrict sampling to a grammar (GBNF), so
for those models each turn is held to the ReAct format with the Action one of the real tool names.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable


def _gbnf_literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


_GRAMMAR_RULES = (
    'final ::= "Final Answer: " text',
    'text ::= line ("\\n" line)*',
    "line ::= [^\\n]+",
)


KNOWS_ANSWER = "I now know the final answer"
"""How the prompt's format has the model say it is done; under the grammar a Final Answer must follow.
Qwen2.5 1.5B wrote it and then repeated its last calculation until loop detection stopped the run."""


def _class_char(char: str) -> str:
    return "\\" + char if char in "\\]^-[" else char


def _not_prefixed(name: str, prefix: str) -> list[str]:
    """GBNF rules ``name`` for one line (1 to ~400 characters) that does not begin with ``prefix``."""
    rules = []
    for i, char in enumerate(prefix):
        options = [f"[^{_class_char(char)}\\n] {name}-rest"]
        if i + 1 < len(prefix):
            options.append(f"{_gbnf_literal(char)} {name}-{i + 1}")
        if i:
            options.append('""')
        rules.append(f"{name}-{i} ::= " + " | ".join(options))
    rules.append(f"{name}-rest ::= [^\\n]{{0,399}}")
    return [r.replace(f"{name}-0", name) for r in rules]


def _thought_rules(*, knows: bool) -> list[str]:
    """A Thought is one line and at most about 400 characters: an endless one used up the reply's
    token budget before the Final Answer (Qwen2.5 1.5B, at a limit). With ``knows``, a Thought that
    opens with ``KNOWS_ANSWER`` is the rule ``knows`` (followed by the answer), any other ``thought``."""
    if not knows:
        return ['thought ::= "Thought: " [^\\n]{1,400} "\\n"+']
    return [
        'thought ::= "Thought: " free "\\n"+',
        f'knows ::= "Thought: " {_gbnf_literal(KNOWS_ANSWER)} [^\\n]{{0,400}} "\\n"+',
        *_not_prefixed("free", KNOWS_ANSWER),
    ]


def react_grammar(tool_names: Sequence[str]) -> str:
    """A GBNF grammar for one ReAct turn: a one-line Thought, then an Action on one of ``tool_names``
    with its Action Input, or a Final Answer. Inputs and answers may run over several lines.
    A Thought that opens with the format's "I now know the final answer" must end in the Final Answer.
    With no tool names, only a Final Answer."""
    if not tool_names:
        return final_answer_grammar()
    tools = " | ".join(_gbnf_literal(name) for name in tool_names)
    return "\n".join(
        [
            "root ::= knows final | thought (action | final)",
            'action ::= "Action: " tool "\\n" "Action Input: " text',
            f"tool ::= {tools}",
            *_thought_rules(knows=True),
            *_GRAMMAR_RULES,
        ]
    )


def final_answer_grammar() -> str:
    """A GBNF grammar for the tool-free call at a limit: a one-line Thought, then a Final Answer."""
    return "\n".join(["root ::= thought final", *_thought_rules(knows=False), *_GRAMMAR_RULES])


def takes_grammar(llm: Any) -> bool:
    """True for a llama.cpp chat model: one whose ``client`` is a ``llama_cpp.Llama`` (``ChatLlama``, ``ChatLlamaCpp``)."""
    llama_cpp = sys.modules.get("llama_cpp")
    return (
        llama_cpp is not None
        and isinstance(llm, BaseChatModel)
        and isinstance(getattr(llm, "client", None), llama_cpp.Llama)
    )


def with_grammar(llm: Any, grammar: str, stop: Sequence[str]) -> Runnable[Any, Any]:
    """``llm`` bound to ``grammar`` (GBNF text) and the stop sequence, for a model where ``takes_grammar``."""
    from llama_cpp import LlamaGrammar

    return llm.bind(grammar=LlamaGrammar.from_string(grammar, verbose=False), stop=list(stop) or None)
