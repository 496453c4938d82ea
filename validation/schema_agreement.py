"""Do the suite JSON Schema and the loader agree? Structural mutants of the example suites.

Each mutant of ``example_suites/**/*.t2i.yaml`` (a key dropped, renamed or added; a value
swapped for one of another type or range; a list emptied or an item doubled; one or two such
edits) is judged by ``load_suite`` and by the committed schema
(``pytest_t2ibias/data/t2i-suite.schema.json``), and counted as

* ``both accept`` / ``both refuse``: agreement;
* ``loader only``: refused at collection for what a schema cannot see (an unknown axis
  named by a check, a duplicate id, statements missing a choice ...), listed by message;
* ``schema only``: an editor would mark a suite red that pytest runs. This must be 0.

    python validation/schema_agreement.py --count 2000 --seed 0

``mutants`` is also what ``tests/plugin/test_reference.py`` runs on a smaller sample.
"""

from __future__ import annotations

import argparse
import collections
import copy
import json
import random
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "example_suites").rglob("*.t2i.yaml"))
SCHEMA = ROOT / "pytest_t2ibias" / "data" / "t2i-suite.schema.json"
VALUES = ("text", "", 0, -1, 1, 2, 0.5, 1.5, True, None, [], {}, ["gender"], ["x", "x"],
          {"gender": 1}, "auto", "llm", "uniform", "model", "{subject}")
"""What a mutated value becomes: every YAML type, in and out of the usual ranges, and the
words the format gives meaning to."""
ADDED_KEYS = ("extra", "threshold", "on", "none", "kind")


def base_suites() -> list[dict[str, Any]]:
    """The example suites as data, their ``models`` paths made absolute (mutants are written
    elsewhere)."""
    from pytest_t2ibias.suite._yaml import load_yaml

    suites = []
    for path in EXAMPLES:
        data = load_yaml(path).data
        for role, model in (data.get("models") or {}).items():
            data["models"][role] = str((path.parent / model).resolve())
        suites.append(data)
    return suites


def mutants(count: int, seed: int) -> list[dict[str, Any]]:
    """``count`` mutants, the same for the same ``seed``."""
    rng = random.Random(seed)
    bases = base_suites()
    found = []
    for _ in range(count):
        suite = copy.deepcopy(rng.choice(bases))
        for _ in range(rng.randint(1, 2)):
            _mutate(suite, rng)
        found.append(suite)
    return found


def _mutate(suite: dict[str, Any], rng: random.Random) -> None:
    """One edit at a node reached by a random walk from the top."""
    nodes: list[Any] = [suite]
    node: Any = suite
    while isinstance(node, (dict, list)) and node and rng.random() < 0.75:
        node = rng.choice(list(node.values()) if isinstance(node, dict) else node)
        if isinstance(node, (dict, list)):
            nodes.append(node)
    target = rng.choice(nodes)
    if isinstance(target, dict) and target:
        key = rng.choice(list(target))
        action = rng.choice(("drop", "rename", "replace", "add"))
        if action == "drop":
            del target[key]
        elif action == "rename":
            target[f"{key}s"] = target.pop(key)
        elif action == "replace":
            target[key] = copy.deepcopy(rng.choice(VALUES))
        else:
            target[rng.choice(ADDED_KEYS)] = copy.deepcopy(rng.choice(VALUES))
    elif isinstance(target, list) and target:
        index = rng.randrange(len(target))
        action = rng.choice(("replace", "double", "empty"))
        if action == "replace":
            target[index] = copy.deepcopy(rng.choice(VALUES))
        elif action == "double":
            target.append(copy.deepcopy(target[index]))
        else:
            target.clear()


def judge(suite: dict[str, Any], folder: Path, validator: Any) -> tuple[list[str], list[str]]:
    """(the loader's problems, the schema's errors) for ``suite`` written into ``folder``."""
    import yaml

    from pytest_t2ibias.suite import SuiteError, load_suite
    from pytest_t2ibias.suite._yaml import load_yaml

    path = folder / "mutant.t2i.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False, allow_unicode=True))
    try:
        load_suite(path)
        loader: list[str] = []
    except SuiteError as exc:
        loader = [problem for problem in str(exc).splitlines() if problem.strip()]
    schema = [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
              for e in validator.iter_errors(load_yaml(path).data)]
    return loader, schema


def agreement(count: int, seed: int) -> dict[str, Any]:
    """Counts of the four outcomes, the loader-only messages (their shape) and the
    schema-only mutants."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text(encoding="utf-8")))
    counts = collections.Counter()
    loader_only: collections.Counter[str] = collections.Counter()
    schema_only = []
    with tempfile.TemporaryDirectory() as folder:
        for suite in mutants(count, seed):
            loader, schema = judge(suite, Path(folder), validator)
            if loader and schema:
                counts["both refuse"] += 1
            elif loader:
                counts["loader only"] += 1
                loader_only.update(_shape(problem) for problem in loader)
            elif schema:
                counts["schema only"] += 1
                schema_only.append({"schema": schema, "suite": suite})
            else:
                counts["both accept"] += 1
    return {"count": count, "seed": seed, **{k: counts[k] for k in
            ("both accept", "both refuse", "loader only", "schema only")},
            "loader only messages": dict(loader_only.most_common()),
            "schema only suites": schema_only}


def _shape(problem: str) -> str:
    """A loader message without its file, line and quoted names: what kind of problem."""
    message = problem.split(": ", 1)[-1] if re.match(r"^\S+:\d+: ", problem) else problem
    message = re.split(r"; | \(|, got ", message)[0]
    message = re.sub(r"^check '[^']*': ", "", message)
    return re.sub(r"\[[^\]]*\]", "[…]", re.sub(r"'[^']*'", "'…'", message))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write the counts here")
    args = parser.parse_args(argv)
    result = agreement(args.count, args.seed)
    for key in ("both accept", "both refuse", "loader only", "schema only"):
        print(f"{key:>12}: {result[key]:5d} ({result[key] / args.count:.1%})")
    print("loader only, by message:")
    for message, n in result["loader only messages"].items():
        print(f"  {n:4d}  {message}")
    for case in result["schema only suites"]:
        print("SCHEMA ONLY:", case["schema"], file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False, default=str) + "\n")
    return 1 if result["schema only"] else 0


if __name__ == "__main__":
    sys.exit(main())
