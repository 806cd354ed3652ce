"""The local llama.cpp runtime: its speed, what the once-per-build check costs, what determinism costs.

    python bench/local_runtime.py speed [--model qwen] [--runs 3]   # prompt and generation tokens/s
    python bench/local_runtime.py check [--model qwen]              # the build check: first and cached
    python bench/local_runtime.py reuse [--model qwen] [--questions 3]
    python bench/local_runtime.py batches [--model qwen] [--runs 3]  # prompt speed per n_batch
    python bench/local_runtime.py first-action [--model qwen] [--runs 2]

``speed`` measures the llama-cpp-python installed in *this* interpreter; run it once in an environment
with the portable build (the README's) and once with a native one (``pip install --no-cache-dir
--force-reinstall --no-deps llama-cpp-python`` with no ``CMAKE_ARGS``) to compare the two. The build's
feature string is recorded with the figures.

``reuse`` runs a few agent questions on the real model, keeps every prompt's tokens, and counts the
prompt tokens llama.cpp must read under three cache policies: no reuse, reuse cut to whole ``n_batch``
blocks (what ``explicit_react.llama.ChatLlama`` does, so replies do not depend on what was read
before; counted for several block sizes), and llama-cpp-python's own longest-prefix reuse.

``first-action`` times a one-off question as ``explicit-react`` runs it: a fresh process loads the
model and the agent (the CLI's default tools) and streams the run; the figure is the time from the
process's start to its first Step (the first action done). Cold: no saved prompt state (the
``prompt-states`` folder emptied first); warm: the state the previous process left. Rounds alternate.

``batches`` reads one ~1,000-token prompt with each ``n_batch`` in turn, ``--runs`` rounds
interleaved: the block size trades prompt speed against how much of a shared prefix can be reused. Token counts do not depend on the machine's
load; seconds are those counts at the measured prompt speed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, write_json

PROMPT = (
    "Thought: I need the population of each city, then the difference.\n"
    "Action: knowledge_search\nAction Input: population of Lumen City\n"
    "Observation: Lumen City has 1,204,500 inhabitants according to the 2024 census.\n"
) * 4


def _llama(model: str, **options: Any) -> Any:
    import llama_cpp

    from explicit_react.models import ensure_local_model

    settings = {"n_ctx": 2048, "n_batch": 512, "verbose": False, **options}
    return llama_cpp.Llama(str(ensure_local_model(model)), **settings)


def speed(args: argparse.Namespace) -> dict[str, Any]:
    import llama_cpp

    llama = _llama(args.model, n_threads=2)
    tokens = llama.tokenize(PROMPT.encode())
    prompt_rates, generation_rates = [], []
    for _ in range(args.runs):
        llama.reset()
        started = time.perf_counter()
        llama.eval(tokens)
        prompt_rates.append(len(tokens) / (time.perf_counter() - started))
        started = time.perf_counter()
        generated = 0
        for _token in llama.generate(tokens, temp=0.0, reset=False):
            generated += 1
            if generated == args.generate:
                break
        generation_rates.append(generated / (time.perf_counter() - started))
    return {
        "build": llama_cpp.llama_print_system_info().decode(),
        "prompt_tokens": len(tokens),
        "prompt_tokens_per_s": round(statistics.median(prompt_rates), 1),
        "generated_tokens_per_s": round(statistics.median(generation_rates), 1),
        "runs": args.runs,
    }


BLOCKS = (32, 64, 128, 256, 512)


def batches(args: argparse.Namespace) -> dict[str, Any]:
    models = {block: _llama(args.model, n_threads=2, n_batch=block) for block in BLOCKS}
    tokens = models[512].tokenize((PROMPT * 5).encode())[:1000]
    rates: dict[int, list[float]] = {block: [] for block in BLOCKS}
    for _ in range(args.runs):
        for block, llama in models.items():
            llama.reset()
            started = time.perf_counter()
            llama.eval(tokens)
            rates[block].append(len(tokens) / (time.perf_counter() - started))
    return {
        "prompt_tokens": len(tokens),
        "runs": args.runs,
        "prompt_tokens_per_s": {str(b): round(statistics.median(r), 1) for b, r in rates.items()},
        "all_rates": {str(b): [round(x, 1) for x in r] for b, r in rates.items()},
    }


FIRST_ACTION = """
import sys, time
started = time.perf_counter()
from explicit_react import ExplicitReActAgent
from explicit_react.cli import build_tools
from explicit_react.models import load_model
model = load_model(sys.argv[1], prompt_state_dir=sys.argv[2])
agent = ExplicitReActAgent(model, build_tools("web_search,python_repl"), max_iterations=3)
for event in agent.stream("What is 17 * 23?"):
    print(round(time.perf_counter() - started, 2), getattr(event, "action", None),
          (getattr(getattr(event, "usage", None), "input_tokens", 0)))
    break
"""


def first_action(args: argparse.Namespace) -> dict[str, Any]:
    import shutil
    import subprocess

    from explicit_react.models import cache_dir

    states = cache_dir() / "bench-prompt-states"
    times: dict[str, list[float]] = {"cold": [], "warm": []}
    state_bytes: list[int] = []  # the folder's prompt states after each cold run
    for _ in range(args.runs):
        for mode in ("cold", "warm"):
            if mode == "cold":
                shutil.rmtree(states, ignore_errors=True)
            out = subprocess.run(
                [sys.executable, "-c", FIRST_ACTION, f"local:{args.model}", str(states)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()
            times[mode].append(float(out[0]))
            if mode == "cold":
                state_bytes.append(sum(path.stat().st_size for path in states.glob("*.state")))
    return {
        "question": "What is 17 * 23?",
        "tools": "web_search,python_repl",
        "seconds_to_first_step": {mode: [round(t, 1) for t in ts] for mode, ts in times.items()},
        "median": {mode: round(statistics.median(ts), 1) for mode, ts in times.items()},
        "state_megabytes_after_cold_run": [round(size / 1e6, 1) for size in state_bytes],
        "runs": args.runs,
    }


def check(args: argparse.Namespace) -> dict[str, Any]:
    from explicit_react.buildcheck import check_llama_build
    from explicit_react.models import ensure_local_model

    path = ensure_local_model(args.model)
    with tempfile.TemporaryDirectory() as cache:
        started = time.perf_counter()
        check_llama_build(path, cache=Path(cache))
        first = time.perf_counter() - started
        cached = []
        for _ in range(50):
            started = time.perf_counter()
            check_llama_build(path, cache=Path(cache))
            cached.append(time.perf_counter() - started)
    return {"first_check_s": round(first, 2), "cached_check_ms": round(statistics.median(cached) * 1000, 3)}


def reuse(args: argparse.Namespace) -> dict[str, Any]:
    from explicit_react import ExplicitReActAgent
    from explicit_react.llama import aligned_reuse
    from explicit_react.models import load_model
    from explicit_react.tools import KnowledgeBaseTool, calculator

    model: Any = load_model(f"local:{args.model}", prompt_state_dir=None)
    prompts: list[list[int]] = []
    generate = model.client.generate

    def recording(tokens: Any, *a: Any, **k: Any) -> Any:
        prompts.append(list(tokens))
        return generate(tokens, *a, **k)

    model.client.generate = recording
    facts = KnowledgeBaseTool(
        [
            "Lumen City has 1,204,500 inhabitants. Its mayor is Ada Brandt.",
            "Port Verro has 388,250 inhabitants and is 140 km from Lumen City.",
            "The Verro bridge opened in 1987 and cost 42 million euros.",
        ]
    )
    agent = ExplicitReActAgent(model, [facts, calculator], max_iterations=4)
    questions = [
        "How many more people live in Lumen City than in Port Verro?",
        "How many years ago, counted from 2026, did the Verro bridge open?",
        "What is the combined population of Lumen City and Port Verro?",
    ][: args.questions]
    started = time.perf_counter()
    for question in questions:
        agent.run(question)
    elapsed = time.perf_counter() - started
    block = model.client.n_batch
    read = {"no_reuse": 0, "aligned_blocks": 0, "longest_prefix": 0}
    by_block = dict.fromkeys(BLOCKS, 0)
    previous: list[int] = []
    for prompt in prompts:
        shared = next((i for i, (a, b) in enumerate(zip(previous, prompt, strict=False)) if a != b), None)
        longest = min(len(previous), len(prompt)) if shared is None else shared
        read["no_reuse"] += len(prompt)
        read["aligned_blocks"] += len(prompt) - aligned_reuse(previous, prompt, block)
        read["longest_prefix"] += len(prompt) - min(longest, len(prompt) - 1)
        for size in BLOCKS:
            by_block[size] += len(prompt) - aligned_reuse(previous, prompt, size)
        previous = prompt
    return {
        "questions": len(questions),
        "model_calls": len(prompts),
        "n_batch": block,
        "prompt_tokens_read": read,
        "prompt_tokens_read_by_block": {str(size): n for size, n in by_block.items()},
        "run_seconds": round(elapsed, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("part", choices=["speed", "check", "reuse", "batches", "first-action"])
    parser.add_argument("--model", default="qwen", choices=["qwen", "gemma"])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--generate", type=int, default=64)
    parser.add_argument("--questions", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    parts = {"speed": speed, "check": check, "reuse": reuse, "batches": batches, "first-action": first_action}
    figures = parts[args.part](args)
    report = {"part": args.part, "model": args.model, **figures}
    print(report)
    write_json(args.out or RESULTS / f"local_runtime_{args.part.replace('-', '_')}.json", report)


if __name__ == "__main__":
    main()
