"""Table-driven tests for explicit_react.parser.parse.

Each case is a realistic model reply in the style seen in a peer project's tests or issue tracker
(the comment names where), with the parse a user would want. The texts are written here; none is
copied from the shared parser corpus.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explicit_react.errors import ParseError
from explicit_react.labels import compile_labels
from explicit_react.parser import (
    ACTION,
    ACTION_INPUT,
    FINAL_ANSWER,
    MAX_LABELS,
    OBSERVATION,
    THOUGHT,
    Labels,
    _well_formed,
    parse,
    parse_in_full,
)
from explicit_react.scanners import MAX_CALL_SYNTAX
from explicit_react.types import Action, FinalAnswer

# -- Actions: (text, tool, tool_input) ------------------------------------------------------------
ACTIONS = [
    # LangChain test_mrkl.py style: the plain three-line step.
    pytest.param(
        "Thought: look it up\nAction: Search\nAction Input: tallest building",
        "Search",
        "tallest building",
        id="plain",
    ),
    # LangChain issue #1688 (chat model): blank lines between every label.
    pytest.param(
        "Thought: I should ask the QA system.\n\nAction: QA System\n\nAction Input: who made you?",
        "QA System",
        "who made you?",
        id="blank-lines",
    ),
    # ToolBench issue #27 (llama-7b): labels indented by two spaces.
    pytest.param(
        "  Thought: check the weather\n  Action: weather\n  Action Input: Beijing",
        "weather",
        "Beijing",
        id="indented",
    ),
    # Windows-served local models: \r\n line endings.
    pytest.param(
        "Thought: search\r\nAction: web_search\r\nAction Input: python 3.13 release\r\n",
        "web_search",
        "python 3.13 release",
        id="crlf",
    ),
    # NeMo-style lower-case labels from small models.
    pytest.param(
        "thought: find it\naction: wiki\naction input: Ada Lovelace",
        "wiki",
        "Ada Lovelace",
        id="lowercase-labels",
    ),
    pytest.param(
        "THOUGHT: find it\nACTION: wiki\nACTION INPUT: Ada Lovelace",
        "wiki",
        "Ada Lovelace",
        id="uppercase-labels",
    ),
    # Extra spaces around the colon and inside the label.
    pytest.param("Thought : hm\nAction :  calc\nAction  Input :  2*21", "calc", "2*21", id="extra-spaces"),
    # No space after the colon (langchainjs mrkl tests).
    pytest.param("Thought:go\nAction:calc\nAction Input:6*7", "calc", "6*7", id="no-space-after-colon"),
    # Markdown bold labels from chat-tuned models (Llama 3 / Mistral in Ollama).
    pytest.param(
        "**Thought:** I need the time.\n**Action:** clock\n**Action Input:** UTC",
        "clock",
        "UTC",
        id="bold-colon-inside",
    ),
    pytest.param(
        "**Thought**: I need the time.\n**Action**: clock\n**Action Input**: UTC",
        "clock",
        "UTC",
        id="bold-colon-outside",
    ),
    # Numbered labels (LangChain's MRKL regex allows `Action 1:`).
    pytest.param(
        "Thought 1: first step\nAction 1: Search\nAction Input 1: Colorado orogeny",
        "Search",
        "Colorado orogeny",
        id="numbered",
    ),
    pytest.param(
        "Thought 2: next\nAction 2: Lookup\nAction Input 2: eastern sector",
        "Lookup",
        "eastern sector",
        id="numbered-2",
    ),
    # Glued labels (NeMo issue reports): no newline before Action / Action Input.
    pytest.param(
        "Thought: call the search toolAction:web_searchAction Input:llama 3 context length",
        "web_search",
        "llama 3 context length",
        id="glued-labels",
    ),
    # Everything on one line (Haystack 1.x one-line replies).
    pytest.param("Thought: quick Action: calc Action Input: 1+1", "calc", "1+1", id="one-line"),
    # Tool name written with noise around it.
    pytest.param("Thought: x\nAction: `search`\nAction Input: cats", "search", "cats", id="tool-backticks"),
    pytest.param("Thought: x\nAction: 'search'\nAction Input: cats", "search", "cats", id="tool-quoted"),
    pytest.param("Thought: x\nAction: **search**\nAction Input: cats", "search", "cats", id="tool-bold"),
    pytest.param("Thought: x\nAction: search.\nAction Input: cats", "search", "cats", id="tool-trailing-dot"),
    # Tool name on the line after its label (LangChain issue #3365, llama).
    pytest.param(
        "Thought: list files\nAction:\n  Terminal\nAction Input:\n  ls -la",
        "Terminal",
        "ls -la",
        id="values-on-next-line",
    ),
    # Tool name followed by a parenthetical (LlamaIndex output parser tests).
    pytest.param(
        'Thought: add\nAction: add (adds two numbers)\nAction Input: {"a": 2, "b": 3}',
        "add",
        {"a": 2, "b": 3},
        id="tool-parenthetical",
    ),
    # Non-ASCII tool name and input (Qwen-Agent examples).
    pytest.param(
        "Thought: 查天气\nAction: amap_weather\nAction Input: 海淀区",
        "amap_weather",
        "海淀区",
        id="chinese-input",
    ),
    # --- Action Input forms ---
    # JSON object (LlamaIndex ReAct format).
    pytest.param(
        'Thought: t\nAction: add\nAction Input: {"a": 7, "b": 8}', "add", {"a": 7, "b": 8}, id="json-object"
    ),
    # JSON array (langchainjs chat-convo tests use arrays).
    pytest.param(
        'Thought: t\nAction: http\nAction Input: ["GET", "/health"]',
        "http",
        ["GET", "/health"],
        id="json-array",
    ),
    # JSON over several lines (DeepSeek, dynamiq PR).
    pytest.param(
        'Thought: t\nAction: run_code\nAction Input: {\n  "code": "print(1)",\n  "timeout": 5\n}',
        "run_code",
        {"code": "print(1)", "timeout": 5},
        id="json-multiline",
    ),
    # JSON in a ```json fence (dynamiq tests).
    pytest.param(
        'Thought: t\nAction: lookup\nAction Input: ```json\n{"id": 42}\n```',
        "lookup",
        {"id": 42},
        id="json-fenced",
    ),
    # Single-quoted Python-style dict (LlamaIndex issue with Mistral).
    pytest.param(
        "Thought: t\nAction: wiki\nAction Input: {'page': 'Paris', 'lang': 'fr'}",
        "wiki",
        {"page": "Paris", "lang": "fr"},
        id="json-single-quotes",
    ),
    # Trailing comma (DB-GPT parser tests).
    pytest.param(
        'Thought: t\nAction: calc\nAction Input: {"x": 1, "y": 2,}',
        "calc",
        {"x": 1, "y": 2},
        id="json-trailing-comma",
    ),
    # Raw newline and tab inside a JSON string (NeMo tests).
    pytest.param(
        'Thought: t\nAction: write\nAction Input: {"text": "line one\nline\ttwo"}',
        "write",
        {"text": "line one\nline\ttwo"},
        id="json-raw-newline-tab",
    ),
    # Missing closing brace (crewAI parser tests).
    pytest.param(
        'Thought: t\nAction: search\nAction Input: {"query": "rust borrow checker"',
        "search",
        {"query": "rust borrow checker"},
        id="json-unclosed",
    ),
    # /* comment */ (LlamaIndex dirtyjson tests).
    pytest.param(
        'Thought: t\nAction: tool\nAction Input: {"k": 1 /* the key */, "j": 2}',
        "tool",
        {"k": 1, "j": 2},
        id="json-comment",
    ),
    # Python True/None in a dict.
    pytest.param(
        "Thought: t\nAction: flags\nAction Input: {'verbose': True, 'limit': None}",
        "flags",
        {"verbose": True, "limit": None},
        id="json-python-literals",
    ),
    # Trailing prose after the JSON value.
    pytest.param(
        'Thought: t\nAction: tool\nAction Input: {"q": "x"} (that should do it)',
        "tool",
        {"q": "x"},
        id="json-then-prose",
    ),
    # Empty object for a tool without arguments (LlamaIndex issue #12699).
    pytest.param("Thought: t\nAction: now\nAction Input: {}", "now", {}, id="json-empty-object"),
    # JSON wrapped in a call (LlamaIndex output parser tests).
    pytest.param(
        'Thought: t\nAction: add\nAction Input: AddTool({"a": 1, "b": 2})',
        "add",
        {"a": 1, "b": 2},
        id="json-in-call",
    ),
    # Bold noise before JSON (crewAI tests).
    pytest.param(
        'Thought: t\nAction: ask\nAction Input: ** {"question": "why?"}',
        "ask",
        {"question": "why?"},
        id="stars-before-json",
    ),
    # Only looks bracketed: stays text (crewAI tests).
    pytest.param(
        "Thought: t\nAction: search\nAction Input: {weather in Oslo}",
        "search",
        "{weather in Oslo}",
        id="braces-not-json",
    ),
    pytest.param(
        "Thought: t\nAction: search\nAction Input: [weather in {Oslo}]",
        "search",
        "[weather in {Oslo}]",
        id="brackets-not-json",
    ),
    pytest.param(
        "Thought: t\nAction: schema\nAction Input: {'type': 'object', 'items': ItemList()}",
        "schema",
        "{'type': 'object', 'items': ItemList()}",
        id="python-repr-not-json",
    ),
    pytest.param(
        'Thought: t\nAction: t\nAction Input: ```json\n{"a": [1][2]}\n```',
        "t",
        '```json\n{"a": [1][2]}\n```',
        id="broken-fenced-json-verbatim",
    ),
    # Quotes: one wrapping pair removed (LangChain, crewAI).
    pytest.param(
        'Thought: t\nAction: search\nAction Input: "weather in Oslo"',
        "search",
        "weather in Oslo",
        id="double-quoted",
    ),
    pytest.param(
        "Thought: t\nAction: search\nAction Input: 'weather in Oslo'",
        "search",
        "weather in Oslo",
        id="single-quoted",
    ),
    pytest.param(
        'Thought: t\nAction: search\nAction Input: "weather in Oslo',
        "search",
        "weather in Oslo",
        id="lone-leading-quote",
    ),
    pytest.param(
        'Thought: t\nAction: terminal\nAction Input: git commit -m "Fix parser"',
        "terminal",
        'git commit -m "Fix parser"',
        id="quote-belongs-to-content",
    ),
    pytest.param(
        'Thought: t\nAction: sql\nAction Input: "a" = "b"', "sql", '"a" = "b"', id="quotes-not-wrapping"
    ),
    pytest.param(
        'Thought: t\nAction: say\nAction Input: "say \\"hi\\""', "say", 'say "hi"', id="json-string-escapes"
    ),
    # Multi-line plain input (Haystack 1.x tests).
    pytest.param(
        "Thought: t\nAction: Search\nAction Input: first line\n  second line",
        "Search",
        "first line\n  second line",
        id="multiline-text",
    ),
    # Fenced code kept verbatim with its fence (LangChain test_mrkl code-block case).
    pytest.param(
        "Thought: t\nAction: python\nAction Input:\n```python\nprint(2 ** 10)\n```",
        "python",
        "```python\nprint(2 ** 10)\n```",
        id="fenced-code-verbatim",
    ),
    # Labels inside a fenced input do not start a new step (DB-GPT tests).
    pytest.param(
        "Thought: t\nAction: write_file\nAction Input: ```\nThought: example\nObservation: x\n```",
        "write_file",
        "```\nThought: example\nObservation: x\n```",
        id="labels-inside-fence",
    ),
    # Pandas agent input with quotes and brackets (LangChain issue #5269).
    pytest.param(
        "Thought: t\nAction: python_repl_ast\nAction Input: df[df['city'] == 'Oslo'].shape",
        "python_repl_ast",
        "df[df['city'] == 'Oslo'].shape",
        id="code-with-brackets",
    ),
    # `Input:` used instead of `Action Input:` (NeMo tests).
    pytest.param(
        "Thought: t\nAction: search\nInput: moon distance", "search", "moon distance", id="input-alias"
    ),
    # --- Call and bracket syntax on the Action line ---
    # LlamaIndex issue #12455: arguments in parentheses, no Action Input line.
    pytest.param(
        'Thought: t\nAction: lookup ({"query": "sunspots"})', "lookup", {"query": "sunspots"}, id="call-json"
    ),
    pytest.param(
        'Thought: t\nAction: lookup(query="sunspots", limit=3)',
        "lookup",
        {"query": "sunspots", "limit": 3},
        id="call-keywords",
    ),
    pytest.param('Thought: t\nAction: lookup("sunspots")', "lookup", "sunspots", id="call-positional"),
    pytest.param(
        'Thought: t\nAction: lookup(query="sunspots")\nAction Input: None',
        "lookup",
        {"query": "sunspots"},
        id="call-with-none-input",
    ),
    pytest.param(
        'Thought: t\nAction: lookup(query="sunspots")\nAction Input: ""',
        "lookup",
        {"query": "sunspots"},
        id="call-with-empty-quotes-input",
    ),
    pytest.param(
        'Thought: t\nAction: lookup(query="a")\nAction Input: {"query": "b"}',
        "lookup",
        {"query": "b"},
        id="call-input-line-wins",
    ),
    # The input written on the Action line after a comma or "tool: " (Qwen2.5 1.5B in bench/eval).
    pytest.param(
        'Thought: t\nAction: knowledge_search, input: "Brisk Arm payload"',
        "knowledge_search",
        "Brisk Arm payload",
        id="inline-input-after-comma-labelled",
    ),
    pytest.param(
        'Thought: t\nAction: knowledge_search, "price of H2"\nAction Input: "price of H2"',
        "knowledge_search",
        "price of H2",
        id="inline-input-and-input-line",
    ),
    pytest.param(
        "Thought: t\nAction: calculator: 2 + 2", "calculator", "2 + 2", id="inline-input-after-colon"
    ),
    pytest.param(
        "Thought: t\nAction: search, weather in Oslo\nAction Input: None",
        "search",
        "weather in Oslo",
        id="inline-input-when-input-line-is-none",
    ),
    pytest.param(
        "Thought: t\nAction: search, a\nAction Input: b", "search", "b", id="inline-input-line-wins"
    ),
    pytest.param(
        "Thought: t\nAction: mcp:search\nAction Input: q", "mcp:search", "q", id="colon-in-tool-name-kept"
    ),
    pytest.param(
        'Thought: t\nAction: knowledge_search:search query: "office where H2 is made"',
        "knowledge_search",
        "office where H2 is made",
        id="inline-input-after-bare-colon-with-label",
    ),
    pytest.param(
        'Thought: t\nAction: calculator:input: "100 - 50"',
        "calculator",
        "100 - 50",
        id="inline-input-colon-label",
    ),
    pytest.param(
        "Thought: t\nAction: mcp:search, weather in Oslo",
        "mcp:search",
        "weather in Oslo",
        id="inline-input-colon-name",
    ),
    pytest.param(
        "Thought: My next Action: search, then compute.\nAction: search\nAction Input: Lumacrab price",
        "search",
        "Lumacrab price",
        id="inline-input-only-when-no-action-follows",
    ),
    # ReAct paper / LangChain docstore bracket style.
    pytest.param("Thought: t\nAction: Search[Apollo 11]", "Search", "Apollo 11", id="bracket"),
    pytest.param(
        'Thought: t\nAction: search["Apollo 11 crew"]', "search", "Apollo 11 crew", id="bracket-quoted"
    ),
    # --- JSON action blobs ---
    # LangChain ReAct-JSON / chat agent (Chainlit issue #627).
    pytest.param(
        'Question: df\nThought: I should search.\nAction:\n{\n  "action": "Search",\n  "action_input": "df"\n}',
        "Search",
        "df",
        id="blob-after-action-label",
    ),
    pytest.param(
        'Thought: t\n```json\n{"action": "calc", "action_input": {"expr": "2+2"}}\n```',
        "calc",
        {"expr": "2+2"},
        id="blob-fenced",
    ),
    # smolagents tool-calling format.
    pytest.param(
        '{"name": "get_weather", "arguments": {"city": "Lima"}}',
        "get_weather",
        {"city": "Lima"},
        id="blob-name-arguments",
    ),
    # Dify's `input` key, blob inside prose.
    pytest.param(
        'I will call it now: {"action": "translate", "input": "hola"} and wait.',
        "translate",
        "hola",
        id="blob-in-prose",
    ),
    # --- Hallucinated continuation: first action wins ---
    # LangChain issue #5601 / Llama 3 ignoring the stop sequence.
    pytest.param(
        "Thought: t\nAction: Search\nAction Input: population of Lima\nObservation: 10 million\n"
        "Thought: I now know\nFinal Answer: 10 million",
        "Search",
        "population of Lima",
        id="hallucinated-final",
    ),
    pytest.param(
        "Thought: t\nAction: a\nAction Input: 1\nObservation: x\nThought: t2\nAction: b\nAction Input: 2",
        "a",
        "1",
        id="hallucinated-second-round",
    ),
    pytest.param(
        "Thought: t\nAction: a\nAction Input: 1\n**Observation:** x",
        "a",
        "1",
        id="hallucinated-bold-observation",
    ),
    pytest.param(
        "Thought: t\nAction: a\nAction Input: 1\nobservation: x",
        "a",
        "1",
        id="hallucinated-lowercase-observation",
    ),
    pytest.param("Thought: t\nAction: a\nAction Input: 1\nObservation", "a", "1", id="bare-observation-word"),
    pytest.param(
        "Thought: t\nAction: a\nAction Input: 1\nObserv", "a", "1", id="truncated-observation-label"
    ),
    pytest.param(
        'Thought: t\nAction: a\nAction Input: {"q": 1}\nObservation: {"r": 2}',
        "a",
        {"q": 1},
        id="hallucinated-json-observation",
    ),
    # Leaked chat-template tokens after the input (DB-GPT issue with Kimi).
    pytest.param(
        'Thought: t\nAction: a\nAction Input: {"q": 1}<|im_end|>', "a", {"q": 1}, id="leaked-special-token"
    ),
    # The whole reply in a ```text fence.
    pytest.param(
        "```text\nThought: t\nAction: a\nAction Input: hello\n```", "a", "hello", id="whole-reply-fenced"
    ),
    # A stray Observation line before the step (langchainjs tests).
    pytest.param(
        "Observation: noted\n\nAction: ToolY\nAction Input: go", "ToolY", "go", id="leading-observation"
    ),
    # Extra Action-prefixed fields before the real Action (DB-GPT).
    pytest.param(
        "Thought: t\nAction Plan: search first\nAction: search\nAction Input: q",
        "search",
        "q",
        id="action-prefixed-field",
    ),
    # Old LangChain: a lower-case "action:" in the prose does not steal the step.
    pytest.param(
        "Thought: the next action: search the web\nAction: web\nAction Input: q",
        "web",
        "q",
        id="action-word-in-thought",
    ),
]


@pytest.mark.parametrize(("text", "tool", "tool_input"), ACTIONS)
def test_action(text: str, tool: str, tool_input: object) -> None:
    result = parse(text)
    assert isinstance(result, Action)
    assert (result.tool, result.tool_input) == (tool, tool_input)


# -- Final answers: (text, answer) ----------------------------------------------------------------
FINALS = [
    pytest.param("Thought: I now know the final answer\nFinal Answer: 42", "42", id="plain"),
    pytest.param("Action: None, I know the answer\nFinal Answer: 4", "4", id="no-tool-inline-then-final"),
    pytest.param("Thought: done\nfinal answer: 42", "42", id="lowercase"),
    pytest.param("Thought: done\nFINAL ANSWER: 42", "42", id="uppercase"),
    pytest.param("Thought: done\n**Final Answer:** 42", "42", id="bold"),
    pytest.param("Thought: done\nFinal Answer:\n42", "42", id="answer-on-next-line"),
    pytest.param(
        "Thought: done\r\nFinal Answer: line one\r\nline two", "line one\nline two", id="crlf-multiline"
    ),
    # Multi-line answers with structure (crewAI issue #2237, dynamiq tests).
    pytest.param(
        "Thought: done\nFinal Answer: Steps:\n1. Install\n2. Run\n3. Profit",
        "Steps:\n1. Install\n2. Run\n3. Profit",
        id="numbered-list",
    ),
    pytest.param(
        "Thought: done\nFinal Answer: Use this:\n```python\nprint('hi')\n```\nThat's all.",
        "Use this:\n```python\nprint('hi')\n```\nThat's all.",
        id="code-fence",
    ),
    pytest.param(
        "Thought: done\nFinal Answer: The bill passed. Action: none is required from you.",
        "The bill passed. Action: none is required from you.",
        id="word-action-inside",
    ),
    # LlamaIndex `Answer:` label, also without Thought.
    pytest.param("Thought: I can answer without tools.\nAnswer: Paris", "Paris", id="answer-label"),
    pytest.param("Answer: Paris", "Paris", id="answer-label-only"),
    # Bracket style Finish (ReAct paper, LangChain docstore agent).
    pytest.param("Thought: done\nAction: Finish[Neil Armstrong]", "Neil Armstrong", id="finish-bracket"),
    # Old LangChain `Action: Final Answer`.
    pytest.param("Thought: done\nAction: Final Answer\nAction Input: 42", "42", id="action-final-answer"),
    # JSON blob that finishes (LangChain chat agent, NeMo).
    pytest.param(
        '```json\n{"action": "Final Answer", "action_input": "It is 42."}\n```', "It is 42.", id="blob-final"
    ),
    # Final Answer before an action block: the answer, cut before the block (LangChain MRKL).
    pytest.param(
        "Final Answer: Lima\n\nAction: search\nAction Input: Lima", "Lima", id="final-before-action"
    ),
    # An Action with no input, then a Final Answer (NeMo tests).
    pytest.param(
        "Action: I am done\nFinal Answer: all good", "all good", id="action-without-input-then-final"
    ),
    # Whitespace around the answer.
    pytest.param("Final Answer:    spaced out   ", "spaced out", id="padded"),
    pytest.param("Final Answer: ratio is 3:2", "ratio is 3:2", id="colon-inside"),
    # A Final Answer inside the Thought, then one on its own line (Qwen2.5 1.5B, bench/eval q15):
    # the one that opens a line is the answer.
    pytest.param(
        "Thought: The result is 9 years. Final Answer: 9 years. The tool,\nFinal Answer: 9 years.",
        "9 years.",
        id="inline-then-own-line",
    ),
    pytest.param("Thought: all found. Final Answer: 12 dollars", "12 dollars", id="only-inline"),
]


@pytest.mark.parametrize(("text", "answer"), FINALS)
def test_final_answer(text: str, answer: str) -> None:
    result = parse(text)
    assert isinstance(result, FinalAnswer)
    assert result.answer == answer


# -- Errors: (text, a phrase the feedback must contain) --------------------------------------------
ERRORS = [
    pytest.param("", "empty", id="empty"),
    pytest.param("   \n\t ", "empty", id="whitespace-only"),
    # Label-less prose, even when it reads as an answer (Bedrock Claude, LangChain issue #12689).
    pytest.param("The capital of Peru is Lima.", "no Action and no Final Answer", id="prose"),
    # Thought only (LlamaIndex issue #12460, truncated generation).
    pytest.param("Thought: I should look this up but", "Thought but no Action", id="thought-only"),
    # Action without Action Input (crewAI issue #112).
    pytest.param(
        "Do I need to use a tool? Yes\nAction: duckduckgo_search",
        "no Action Input line",
        id="action-without-input",
    ),
    pytest.param(
        "Thought: t\nAction: search\nThought: still thinking",
        "no Action Input line",
        id="action-then-thought",
    ),
    # Code on the Action line (LangChain issue #7709).
    pytest.param("Thought: t\nAction: `print(len(df))`", "no Action Input line", id="code-as-action"),
    # Action Input without Action.
    pytest.param(
        "Thought: t\nAction Input: moon", "Action Input but no Action line", id="input-without-action"
    ),
    # Action: None (LangChain PR #1345, LlamaIndexTS #858).
    pytest.param(
        "Thought: no tool needed\nAction: None\nAction Input: None", "names no tool", id="action-none"
    ),
    pytest.param("Thought: t\nAction:\nAction Input: x", "names no tool", id="empty-tool-name"),
    # Action and Final Answer with no Observation between them (LangChain issue #5601, crewAI #1545).
    pytest.param(
        "Thought: t\nAction: search\nAction Input: q\nFinal Answer: 3",
        "both an Action and a Final Answer",
        id="action-then-final",
    ),
    pytest.param(
        "Thought: t\nAction: search Final Answer:\nAction Input: q",
        "both an Action and a Final Answer",
        id="final-glued-on-action-line",
    ),
    pytest.param(
        "Thought: t\nAction: search[x]\nFinal Answer: 3",
        "both an Action and a Final Answer",
        id="bracket-action-then-final",
    ),
    # A label with no answer after it.
    pytest.param("Thought: done\nFinal Answer:", "Final Answer is empty", id="empty-final"),
    pytest.param("Final Answer", "no Action and no Final Answer", id="final-label-without-colon"),
    # Two JSON blobs at once.
    pytest.param(
        '{"action": "a", "action_input": 1}\n{"action": "b", "action_input": 2}',
        "more than one action",
        id="two-blobs",
    ),
    # A JSON blob without an input key.
    pytest.param('{"action": "a"}', "no Action and no Final Answer", id="blob-without-input"),
    # Conversational agent said no tool, but wrote no reply (LangChain issue #11475).
    pytest.param("Do I need to use a tool? No", "no Action and no Final Answer", id="convo-no-reply"),
    # "final answer:" inside prose is not a label (crewAI issue #400).
    pytest.param(
        "Thought: here is the expected criteria for your final answer: a paragraph.",
        "Thought but no Action",
        id="final-answer-phrase-in-prose",
    ),
]


@pytest.mark.parametrize(("text", "problem"), ERRORS)
def test_error_feedback_names_the_problem(text: str, problem: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse(text)
    assert problem in caught.value.feedback
    assert caught.value.text.strip() == text.replace("\r\n", "\n").strip()


@pytest.mark.parametrize("text", [pytest.param(case.values[0], id=case.id) for case in ERRORS])
def test_error_feedback_shows_the_format_and_no_internals(text: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse(text)
    feedback = caught.value.feedback
    for line in ("Thought:", "Action:", "Action Input:", "Final Answer:"):
        assert f"\n{line}" in feedback
    assert "${" not in feedback
    for internal in ("Traceback", "Error:", "Exception", "http://", "https://", ", line "):
        assert internal not in feedback
    assert len(feedback) < 800


# -- Thought and log -------------------------------------------------------------------------------
THOUGHTS = [
    pytest.param(
        "Thought: I need the date.\nAction: clock\nAction Input: UTC", "I need the date.", id="labelled"
    ),
    pytest.param("I need the date.\nAction: clock\nAction Input: UTC", "I need the date.", id="leading-text"),
    pytest.param(
        "Thought: first\nsecond line\nAction: clock\nAction Input: UTC", "first\nsecond line", id="multiline"
    ),
    pytest.param("Thought: I know it.\nFinal Answer: 4", "I know it.", id="before-final"),
    pytest.param("Thought: glued thoughtAction:clockAction Input:UTC", "glued thought", id="glued"),
]


@pytest.mark.parametrize(("text", "thought"), THOUGHTS)
def test_thought(text: str, thought: str) -> None:
    assert parse(text).thought == thought


def test_log_drops_the_hallucinated_continuation() -> None:
    text = "Thought: t\nAction: a\nAction Input: 1\nObservation: invented\nFinal Answer: invented"
    result = parse(text)
    assert result.log == "Thought: t\nAction: a\nAction Input: 1"


def test_log_keeps_a_plain_reply_whole() -> None:
    text = "Thought: t\nFinal Answer: 4"
    assert parse(text).log == text


# -- Configurable labels ---------------------------------------------------------------------------
HAYSTACK = Labels(action="Tool", action_input="Tool Input")


@pytest.mark.parametrize(
    ("text", "tool", "tool_input"),
    [
        # Haystack 1.x agent step tests.
        pytest.param(
            "Thought: find it\nTool: Search\nTool Input: Berlin population",
            "Search",
            "Berlin population",
            id="haystack",
        ),
        pytest.param(
            'Thought: find it Tool: Search Tool Input: "Berlin"', "Search", "Berlin", id="haystack-one-line"
        ),
    ],
)
def test_custom_labels(text: str, tool: str, tool_input: str) -> None:
    result = parse(text, labels=HAYSTACK)
    assert isinstance(result, Action)
    assert (result.tool, result.tool_input) == (tool, tool_input)


def test_custom_labels_feedback_uses_them() -> None:
    with pytest.raises(ParseError) as caught:
        parse("Thought: t\nTool: Search\n", labels=HAYSTACK)
    assert "no Tool Input line" in caught.value.feedback
    assert "\nTool Input:" in caught.value.feedback


def test_default_labels_ignore_other_keywords() -> None:
    with pytest.raises(ParseError):
        parse("Thought: find it\nTool: Search\nTool Input: Berlin")


def test_patterns_are_compiled_once_per_labels() -> None:
    assert compile_labels(Labels()) is compile_labels(Labels())
    assert compile_labels(HAYSTACK) is not compile_labels(Labels())


def test_markers_are_the_prompt_keywords() -> None:
    assert (THOUGHT, ACTION, ACTION_INPUT, OBSERVATION, FINAL_ANSWER) == (
        "Thought",
        "Action",
        "Action Input",
        "Observation",
        "Final Answer",
    )
    assert Labels() == Labels(THOUGHT, ACTION, ACTION_INPUT, OBSERVATION, FINAL_ANSWER)


def test_call_syntax_never_evaluates_code() -> None:
    with pytest.raises(ParseError):
        parse('Thought: t\nAction: lookup(query=__import__("os").getcwd())')


# -- Properties ------------------------------------------------------------------------------------
FRAGMENTS = [
    "Thought:",
    "Action:",
    "Action Input:",
    "Observation:",
    "Final Answer:",
    "Answer:",
    "Input:",
    "**Action:**",
    "action 1:",
    "Finish[",
    "search[",
    "(",
    ")",
    "]",
    "{",
    "}",
    "[",
    '"',
    "'",
    "```",
    "```json",
    '{"action": "x", "action_input": ',
    '"q"',
    "None",
    "\n",
    "\r\n",
    " ",
    "\t",
    "x",
    "search",
    "42",
    "/*",
    "*/",
    ",",
    ":",
    "<|im_end|>",
    "Obs",
]


def _check(text: str) -> None:
    try:
        result = parse(text)
    except ParseError as error:
        assert isinstance(error.feedback, str)
        assert error.feedback
        return
    if isinstance(result, Action):
        assert isinstance(result.tool, str)
        assert result.tool
        assert isinstance(result.tool_input, (str, dict, list))
    else:
        assert isinstance(result, FinalAnswer)
        assert isinstance(result.answer, str)
        assert result.answer


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_text_parses_or_raises_parse_error(text: str) -> None:
    _check(text)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=5)), max_size=25).map("".join))
def test_label_soup_parses_or_raises_parse_error(text: str) -> None:
    _check(text)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("{" * 20000, id="many-braces"),
        pytest.param('{"a": ' * 20000, id="deeply-nested-json"),
        pytest.param('{"action": "x", "action_input": ' + "[" * 50000, id="deep-blob-input"),
        pytest.param("Thought: t\nAction: a(" + '{"a": ' * 20000 + ")", id="deep-call-arguments"),
        pytest.param("Thought: t\nAction: a\nAction Input: " + "[" * 50000, id="deep-action-input"),
    ],
)
def test_pathological_nesting_raises_only_parse_error(text: str) -> None:
    _check(text)


@pytest.mark.parametrize(
    ("blob", "expected"),
    [
        ('{"action": "x", "action_input": null}', ""),
        ('{"action": "x", "action_input": 42}', "42"),
        ('{"action": "x", "action_input": true}', "true"),
    ],
)
def test_json_blob_scalar_inputs_become_text(blob: str, expected: str) -> None:
    # found by the label-soup property test: a JSON scalar input must still be a str
    result = parse(blob)
    assert isinstance(result, Action) and result.tool_input == expected


# -- Tool names are the user's: the finishing and "no tool" words mean that only when no tool has the name
@pytest.mark.parametrize("name", ["finish", "Finish", "none", "null", "nothing", "n/a", "answer"])
def test_a_real_tool_named_like_a_keyword_is_an_action(name: str) -> None:
    reply = f"Thought: I will call it.\nAction: {name}\nAction Input: the report"
    decision = parse(reply, tools=["search", name.lower()])
    assert isinstance(decision, Action) and decision.tool == name and decision.tool_input == "the report"


@pytest.mark.parametrize(
    ("reply", "tools"),
    [
        ("Thought: done.\nAction: Finish[42]", ["search"]),
        ('{"action": "Final Answer", "action_input": "42"}', ["search"]),
    ],
)
def test_the_finishing_words_finish_when_no_tool_has_the_name(reply: str, tools: list[str]) -> None:
    decision = parse(reply, tools=tools)
    assert isinstance(decision, FinalAnswer) and decision.answer == "42"


def test_a_bracket_call_to_a_real_finish_tool_is_an_action() -> None:
    decision = parse("Thought: file it.\nAction: finish[ticket 7]", tools=["finish"])
    assert isinstance(decision, Action) and decision.tool == "finish" and decision.tool_input == "ticket 7"


def test_a_json_blob_naming_a_real_none_tool_is_an_action() -> None:
    decision = parse('{"action": "none", "action_input": "x"}', tools=["none"])
    assert isinstance(decision, Action) and decision.tool == "none"


def test_none_without_such_a_tool_still_names_no_tool() -> None:
    with pytest.raises(ParseError, match="names no tool"):
        parse("Thought: t\nAction: none\nAction Input: x", tools=["search"])


# -- Bounds on the work one reply can cost (issue 21) ----------------------------------------------
def test_a_reply_is_read_up_to_its_label_limit() -> None:
    thoughts = "Thought: still thinking\n" * (MAX_LABELS - 1)
    assert parse(thoughts + "Final Answer: 42") == FinalAnswer(
        "42", "still thinking", thoughts + "Final Answer: 42"
    )
    with pytest.raises(ParseError, match="has a Thought but no Action"):  # the answer is label 501
        parse("Thought: still thinking\n" + thoughts + "Final Answer: 42")


def test_call_syntax_too_long_to_read_as_python_is_the_input_as_written() -> None:
    arguments = ", ".join(f"x{index}={index}" for index in range(MAX_CALL_SYNTAX // 5))
    assert len(arguments) > MAX_CALL_SYNTAX
    result = parse(f"Action: search({arguments})")
    assert isinstance(result, Action) and result.tool_input == arguments
    shorter = ", ".join(f"x{index}={index}" for index in range(50))
    result = parse(f"Action: search({shorter})")
    assert isinstance(result, Action) and result.tool_input == {f"x{index}": index for index in range(50)}


def test_a_long_string_in_call_syntax_is_still_read_as_python() -> None:
    code = "print('a, b = (1, 2)')\n" * 500  # 11 KB of commas and parentheses, all inside the string
    result = parse(f"Action: python(code={code!r})")
    assert isinstance(result, Action) and result.tool_input == {"code": code}


@pytest.mark.parametrize(("depth", "read"), [(100, True), (101, False), (3000, False)])
def test_nearly_valid_json_nested_past_the_limit_is_kept_as_text(depth: int, read: bool) -> None:
    nested = "{'a': " * depth + "1"  # single quotes and no closers: only the repair reads it
    result = parse(f"Action: search\nAction Input: {nested}")
    assert isinstance(result, Action)
    assert isinstance(result.tool_input, dict) if read else result.tool_input == nested


def test_a_json_blob_written_with_unicode_escapes_is_found() -> None:
    result = parse('Thought: t\n{"\\u0061ction": "search", "action_input": "x"} and {"b": 1}')
    assert isinstance(result, Action) and (result.tool, result.tool_input) == ("search", "x")


@pytest.mark.parametrize(
    "code",
    [
        "[1, 2, 3][::-1]",
        '{"a": 1, "b": 2}.items()',
        '{"a": 1}["a"]',
        "[1] + [2]",
        "[1, 2] * 3",
        "[3, 1] . sort()",
    ],
)
def test_code_that_starts_with_a_literal_is_the_input_as_written(code: str) -> None:
    """JSON followed on its line by a method, an index or an operator is an expression: a Python
    tool must get all of it, not the literal alone."""
    result = parse(f"Thought: t\nAction: python_repl\nAction Input: {code}")
    assert isinstance(result, Action) and result.tool_input == code


@pytest.mark.parametrize("noise", ["}", "</s>", ' "', " (the search)", " - search", "."])
def test_json_followed_by_noise_on_its_line_is_still_json(noise: str) -> None:
    result = parse(f'Thought: t\nAction: search\nAction Input: {{"query": "x"}}{noise}')
    assert isinstance(result, Action) and result.tool_input == {"query": "x"}


def test_of_several_final_answers_on_their_own_lines_the_last_is_the_answer() -> None:
    result = parse("Final Answer: 1\nThought: let me restate that\nFinal Answer: 2")
    assert result == FinalAnswer("2", "let me restate that", result.log)


# -- The shortcut for a reply in exactly the prompt's format ----------------------------------------
# bench/parser_fast_path.py compares it with the full reading on the corpus, the fuzz generator and
# every string in tests/; here, the canonical replies and a property over near misses.
def _full_or_error(text: str, tools: tuple[str, ...] = ()) -> object:
    try:
        return parse_in_full(text, tools=tools)
    except ParseError as exc:
        return exc.feedback


@pytest.mark.parametrize(
    "text",
    [
        "Thought: I need to look this up.\nAction: lookup\nAction Input: item 7",
        "Thought: I need to look this up.\nAction: lookup\nAction Input: item 7\n",
        'Thought:\nAction: web-search\nAction Input: {"query": "a: b", "n": 2}',
        "Thought: I now know the final answer\nFinal Answer: item 7 is 42",
        "Thought: done\nFinal Answer: two lines\nof answer",
    ],
)
def test_the_shortcut_reads_a_well_formed_reply_as_the_full_reading_does(text: str) -> None:
    quick = _well_formed(text)
    assert quick is not None
    assert quick == parse_in_full(text) == parse(text)


@pytest.mark.parametrize(
    "text",
    [
        "Thought: x\nAction: lookup\nAction Input: a\nObservation: made up",  # the cut
        "Thought: x\nAction: none\nAction Input: a",  # names no tool
        "Thought: x\nAction: Finish\nAction Input: a",  # finishes
        "Thought: use Action: lookup\nAction: lookup\nAction Input: a",  # a label in a value
        "Thought: x\nAction: lookup\nAction Input: a Final Answer: b",  # a conflict
        "Thought: x\nFinal Answer: ",  # empty answer
        "Thought: x\r\nAction: lookup\r\nAction Input: a",  # line endings to clean
        "Thought: x\nAction: lookup_\nAction Input: a",  # a name the reader trims
    ],
)
def test_the_shortcut_leaves_what_the_full_reading_treats_specially(text: str) -> None:
    assert _well_formed(text) is None


_VALUE_PARTS = st.sampled_from(
    [*FRAGMENTS, "a", " ", ":", "：", "\u2028", "\x85", "\t", "Obs", "{", '"', "x_", "none", "Finish"]
)


@settings(max_examples=500, deadline=None)
@given(
    thought=st.lists(_VALUE_PARTS, max_size=4).map("".join),
    tool=st.sampled_from(["lookup", "a", "web-search", "x_", "none", "Finish", "Input"]),
    value=st.lists(st.one_of(_VALUE_PARTS, st.text(max_size=3)), max_size=6).map("".join),
    final=st.booleans(),
    end=st.sampled_from(["", "\n", " \n\n", "\nObservation:"]),
)
def test_the_shortcut_agrees_with_the_full_reading(
    thought: str, tool: str, value: str, final: bool, end: str
) -> None:
    decision = f"Final Answer: {value}" if final else f"Action: {tool}\nAction Input: {value}"
    text = f"Thought: {thought}\n{decision}{end}"
    quick = _well_formed(text)
    if quick is not None:
        for tools in ((), ("none", "finish", "lookup")):
            assert quick == _full_or_error(text, tools)


@pytest.mark.parametrize(
    ("action_input", "expected"),
    [
        (
            '{"path": "notes.md", "content": "Observation: the sample turned blue."}',
            {"path": "notes.md", "content": "Observation: the sample turned blue."},
        ),
        ('{"path": "a.md", "content": "Final Answer: 42"}', {"path": "a.md", "content": "Final Answer: 42"}),
        ("print('Observation: done')", "print('Observation: done')"),
        ("print('Final Answer: ' + str(x))", "print('Final Answer: ' + str(x))"),
        ('"Observation: the deck" review', '"Observation: the deck" review'),
    ],
)
def test_a_label_inside_a_string_of_the_input_is_the_inputs_text(action_input: str, expected: object) -> None:
    # Cut at the label, the JSON was "repaired" to {"content": ""} and an empty file was written.
    parsed = parse(f"Thought: t\nAction: tool\nAction Input: {action_input}", tools=["tool"])
    assert parsed == Action("tool", expected, "t", f"Thought: t\nAction: tool\nAction Input: {action_input}")


def test_a_label_outside_the_strings_still_cuts_the_continuation() -> None:
    parsed = parse(
        'Thought: t Action: search Action Input: "x" Observation: 3 Final Answer: 3', tools=["search"]
    )
    assert isinstance(parsed, Action) and parsed.tool_input == "x"
    # An apostrophe opens no string: the invented Observation after it is still cut.
    parsed = parse("Thought: t\nAction: search\nAction Input: Paul's age Observation: 40", tools=["search"])
    assert isinstance(parsed, Action) and parsed.tool_input == "Paul's age"


def test_the_word_observation_ends_an_input_only_after_code_or_on_its_own_line() -> None:
    assert parse("Thought: t\nAction: search\nAction Input: Griffith Park Observation").tool_input == (  # type: ignore[union-attr]
        "Griffith Park Observation"
    )
    assert parse("Thought: t\nAction: search\nAction Input: Griffith Park\nObservation").tool_input == (  # type: ignore[union-attr]
        "Griffith Park"
    )
    assert parse('Thought: t\nAction: search\nAction Input: {"q": "x"} Observation').tool_input == {"q": "x"}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Thought: t\n*Action:* search\n*Action Input:* weather", Action("search", "weather", "t", "")),
        ("Thought: t\n__Action:__ search\n__Action Input:__ weather", Action("search", "weather", "t", "")),
        ("*Final Answer:* 42", FinalAnswer("42", "", "")),
        ("***Final Answer:*** 42", FinalAnswer("42", "", "")),
        ("_Final Answer:_ 42", FinalAnswer("42", "", "")),
        ("Final Answer:\n* one\n* two", FinalAnswer("* one\n* two", "", "")),  # a list, not markup
        ("Thought: t\nAction: python\nAction Input:*args", Action("python", "*args", "t", "")),
    ],
)
def test_an_emphasised_labels_closing_markup_is_not_in_its_value(
    reply: str, expected: Action | FinalAnswer
) -> None:
    parsed = parse(reply, tools=["search", "python"])
    assert type(parsed) is type(expected)
    if isinstance(expected, Action):
        assert (parsed.tool, parsed.tool_input) == (expected.tool, expected.tool_input)  # type: ignore[union-attr]
    else:
        assert parsed.answer == expected.answer  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ("calculator(2 + 3)", "2 + 3"),
        ("calculator(2**10)", "2**10"),
        ("calculator(expression=2*3)", {"expression": "2*3"}),
        ("calculator(1,595 + 663)", "1,595 + 663"),  # not Python's tuple: the text as written
        ("calculator(07)", "07"),
        ('lookup(query=__import__("os").getcwd())', {"query": '__import__("os").getcwd()'}),  # text, not run
        ("lookup(capital of France)", "capital of France"),
    ],
)
def test_a_real_tools_call_may_hold_an_expression_as_text(action: str, expected: object) -> None:
    # "Your reply has an Action but no Action Input line" before: literals only were read.
    parsed = parse(f"Thought: t\nAction: {action}", tools=["calculator", "lookup"])
    assert isinstance(parsed, Action) and parsed.tool_input == expected


def test_code_on_the_action_line_that_names_no_tool_is_still_refused() -> None:
    with pytest.raises(ParseError, match="no Action Input line"):
        parse("Thought: t\nAction: print(df.shape + 1)", tools=["python_repl"])


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Thought: The '90s band. Action: search Action Input: Beatles' albums", "Beatles' albums"),
        ("Thought: Let's get 'em. Action: search Action Input: the students' grades", "the students' grades"),
        ('Thought: read "C:\\temp\\" Action: search Action Input: "C:\\temp\\a.txt"', "C:\\temp\\a.txt"),
    ],
)
def test_apostrophes_in_a_thought_pair_with_nothing(reply: str, expected: str) -> None:
    # Strings are looked for only in an Action Input: "'90s ... Beatles'" hid the labels between.
    parsed = parse(reply, tools=["search"])
    assert isinstance(parsed, Action) and parsed.tool_input == expected


def test_apostrophes_in_a_one_line_final_answer_pair_with_nothing() -> None:
    parsed = parse("Thought: I'll check the '90s data. Final Answer: The players' salaries rose.")
    assert parsed == FinalAnswer(
        "The players' salaries rose.",
        "I'll check the '90s data.",
        "Thought: I'll check the '90s data. Final Answer: The players' salaries rose.",
    )


def test_text_in_a_call_must_pair_its_parentheses_and_a_keyword_names_its_argument() -> None:
    with pytest.raises(ParseError):  # two calls on one line: 'Paris), then calculator(2+3' went to search
        parse("Thought: t\nAction: search(Paris), then calculator(2+3)", tools=["search", "calculator"])
    parsed = parse("Thought: t\nAction: search(query=capital of France)", tools=["search"])
    assert isinstance(parsed, Action) and parsed.tool_input == {"query": "capital of France"}
