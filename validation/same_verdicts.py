"""Two JSON reports of the same suites give the same verdicts: every check's status,
outcome and pass, and every number in its value, interval and figures, equal to ``--tol``
(default 1e-9); strings (messages aside) equal. Exit 1 on any difference, each one listed.

    python validation/same_verdicts.py BEFORE.json AFTER.json [--root CHECKOUT ...]

Used for refactors that must not change a verdict (issue #34)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

COMPARED = ("status", "outcome", "passed", "value", "low", "high", "n", "threshold", "margin",
            "confidence", "interval_confidence", "burden", "about", "figures")


def differences(old: Any, new: Any, where: str, tol: float) -> list[str]:
    if isinstance(old, bool) or isinstance(new, bool):
        return [] if old == new else [f"{where}: {old!r} -> {new!r}"]
    if isinstance(old, (int, float)) and isinstance(new, (int, float)):
        if math.isnan(old) and math.isnan(new):
            return []
        return [] if abs(old - new) <= tol or old == new else [f"{where}: {old!r} -> {new!r}"]
    if isinstance(old, dict) and isinstance(new, dict):
        found = [f"{where}.{k}: only in one" for k in set(old) ^ set(new)]
        for key in sorted(set(old) & set(new), key=str):
            found += differences(old[key], new[key], f"{where}.{key}", tol)
        return found
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return [f"{where}: {len(old)} items -> {len(new)}"]
        return [d for i, (a, b) in enumerate(zip(old, new))
                for d in differences(a, b, f"{where}[{i}]", tol)]
    return [] if old == new else [f"{where}: {old!r} -> {new!r}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--tol", type=float, default=1e-9)
    parser.add_argument("--root", action="append", default=[],
                        help="a checkout the runs were made in (repeatable): shown as <root>, "
                             "so two checkouts of the same suites compare equal")
    args = parser.parse_args(argv)

    def read(path: str) -> dict[str, Any]:
        text = open(path).read()
        for root in args.root:
            text = text.replace(json.dumps(root.rstrip("/"))[1:-1], "<root>")
        return json.loads(text)

    before = {c["nodeid"]: c for c in read(args.before)["checks"]}
    after_report = read(args.after)
    after = {c["nodeid"]: c for c in after_report["checks"]}
    found = [f"{nodeid}: only in one report" for nodeid in set(before) ^ set(after)]
    for nodeid in sorted(set(before) & set(after)):
        for key in COMPARED:
            found += differences(before[nodeid].get(key), after[nodeid].get(key),
                                 f"{nodeid} {key}", args.tol)
    for line in found:
        print(line)
    work = after_report.get("work", {})
    print(f"{len(before)} checks compared, {len(found)} differences (tolerance {args.tol:g}); "
          f"after: {json.dumps(work)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
