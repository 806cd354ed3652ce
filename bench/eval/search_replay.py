"""Why a needed fact never came into view: the model's own searches, replayed.

For every record of a results file that failed as ``never_looked_up`` (a fact the question needs
never appeared in a search result the model got), each ``knowledge_search`` input the model wrote is
run again through the knowledge search as it is now (the evaluation's settings, the seed's files),
and every missing fact is put in one of three groups:

- ``found_now``: one of the model's own searches now returns a passage with the fact (a change to
  the search since the run, or to how it reads a query, would have given the model the fact);
- ``asked_missed``: a search named the fact's owner (the product, person, ...), yet no result holds
  the fact: a ranking or query-reading miss;
- ``never_asked``: no search named the owner: the model did not ask for it (a step it skipped, the
  wrong thing searched for, a chain link not followed).

No model is run. Use it on tuning seeds to choose; a fresh seed read here is no longer fresh.

    python bench/eval/search_replay.py bench/results/generated_local_qwen_tuning_*.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from explicit_react.tools import KnowledgeBaseTool

sys.path.insert(0, str(Path(__file__).resolve().parent))
from answers import contains
from failures import classify
from run import KNOWLEDGE_SETTINGS
from worlds import TUNING_SEEDS, World

GROUPS = ("found_now", "asked_missed", "never_asked")


def replay(paths: Sequence[Path], systems: set[str] | None) -> dict[str, Any]:
    """Counts per group, and one example input per (group, missing fact) for reading."""
    worlds: dict[int, World] = {}
    tools: dict[int, KnowledgeBaseTool] = {}
    groups: Counter[str] = Counter()
    records_rescued = records_seen = 0
    examples: list[dict[str, Any]] = []
    for path in paths:
        report = json.loads(path.read_text(encoding="utf-8"))
        for system, records in report["records"].items():
            if systems and system not in systems:
                continue
            for record in records:
                if "trace" not in record:
                    continue
                seed = record["seed"]
                world = worlds.setdefault(seed, World.generate(seed))
                question = next((q for q in world.questions if q.id == record["id"]), None)
                if question is None or question.question != record["question"]:
                    continue  # the world generator changed since this run
                if classify(question, record, world) != "never_looked_up":
                    continue
                records_seen += 1
                if seed not in tools:
                    tools[seed] = KnowledgeBaseTool.from_documents(world.documents(), **KNOWLEDGE_SETTINGS)
                queries = [str(s["input"]) for s in record["trace"] if s["action"] == "knowledge_search"]
                then = [str(s["observation"]) for s in record["trace"] if s["action"] == "knowledge_search"]
                now = [str(tools[seed].invoke(query)) for query in queries]
                missing = [key for key in question.facts if not any(world.in_view(key, r) for r in then)]
                still = 0
                for key in missing:
                    owner = world.facts[key].owner
                    if any(world.in_view(key, result) for result in now):
                        group = "found_now"
                    elif any(contains(query, owner) for query in queries):
                        group = "asked_missed"
                        still += 1
                    else:
                        group = "never_asked"
                        still += 1
                    groups[group] += 1
                    if len(examples) < 60:
                        examples.append(
                            {"group": group, "id": record["id"], "question": record["question"], "fact": list(key),
                             "queries": queries}
                        )  # fmt: skip
                records_rescued += still == 0
    return {
        "files": [str(p) for p in paths],
        "records_never_looked_up": records_seen,
        "records_every_fact_found_now": records_rescued,
        "missing_facts": dict(groups),
        "examples": examples,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Replay the searches of the records in the given results files; print the counts."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("results", nargs="+", type=Path)
    parser.add_argument("--systems", help="comma-separated systems to read (default: all)")
    parser.add_argument("--examples", action="store_true", help="print each missing fact's queries")
    args = parser.parse_args(argv)
    for path in args.results:
        seeds = set(json.loads(path.read_text(encoding="utf-8"))["seeds"])
        if not seeds <= set(TUNING_SEEDS):
            print(f"note: {path} holds seeds {sorted(seeds - set(TUNING_SEEDS))} that are not tuning seeds")
    result = replay(args.results, set(args.systems.split(",")) if args.systems else None)
    if args.examples:
        for example in result["examples"]:
            print(f"{example['group']:13} {example['id']:28} {example['fact']} {example['queries']}")
    print(json.dumps({key: value for key, value in result.items() if key != "examples"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
