"""A coding agent: file tools confined to a project folder find a setting, read it and change it.

A tiny sample project is created in a temporary folder; the scripted model lists the files, greps
for the timeout, reads the file and edits one line. Run: python examples/coding_agent.py
"""

import tempfile
from pathlib import Path

from explicit_react import ExplicitReActAgent, Step
from explicit_react.testing import ScriptedChatModel
from explicit_react.tools import file_tools

SAMPLE_PROJECT = {
    "app.py": "from settings import TIMEOUT\n\n\ndef fetch(client, url):\n    return client.get(url, timeout=TIMEOUT)\n",
    "settings.py": '"""Settings."""\n\nRETRIES = 3\nTIMEOUT = 5  # seconds\n',
}

REPLIES = [
    'Thought: First I see which files the project has.\nAction: search_files\nAction Input: {"glob": "*.py"}',
    "Thought: Where is the timeout defined?\nAction: grep\nAction Input: TIMEOUT =",
    'Thought: I read settings.py around it.\nAction: read_file\nAction Input: {"path": "settings.py"}',
    "Thought: I change the timeout from 5 to 30 seconds.\n"
    "Action: edit_file\n"
    'Action Input: {"path": "settings.py", "old": "TIMEOUT = 5  # seconds", "new": "TIMEOUT = 30  # seconds"}',
    "Thought: The edit is done.\nFinal Answer: TIMEOUT is now 30 seconds in settings.py (it was 5); app.py uses it.",
]

with tempfile.TemporaryDirectory() as folder:
    root = Path(folder)
    for name, text in SAMPLE_PROJECT.items():
        (root / name).write_text(text, encoding="utf-8")

    agent = ExplicitReActAgent(ScriptedChatModel(REPLIES), file_tools(root), max_iterations=8)
    for item in agent.stream("Raise the HTTP timeout of this project to 30 seconds."):
        if isinstance(item, Step):  # each step as it completes; the last item is the AgentResult
            print(f"--- {item.action} {item.action_input}\n{item.observation}")
        else:
            print(f"Answer: {item.answer}")
    print("settings.py now reads:")
    print((root / "settings.py").read_text(encoding="utf-8"))
