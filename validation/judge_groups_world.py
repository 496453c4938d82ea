"""A toy world with a planted intersectional judge bias (issue #45): does the judge-by-group
audit name the group, and does the group's own calibration make the gender figures cover the
world's truth where the pooled calibration does not?

The world, as example_suites/weak_judge.py builds a misreading judge but by group: doctors of
two skin tones, 20% female in each. The judge reads light-skinned doctors' gender 95% right
both ways; dark-skinned women it reads as men ``--misread`` of the time (default 45%), dark
men as women 5%. Each repetition draws

- a calibration: ``--m`` images a (skin tone, gender) group, each judged through that group's
  confusion (as the judge audit's counterfactual sets are);
- the check's images: ``--n`` dark-skinned doctors (a check whose prompt names the group),
  judged the same way;

and reads the severity of the gender shares (``entropy_below``, the kind's own evaluate)
three ways: uncorrected; corrected with the pooled calibration (today: one confusion for
every image); and under the judge reading with groups (``kinds._judge.JudgeReading``, the
item's group named). It counts how often each interval covers the true severity and how
often the audit (``metrics.judge_groups.depends_on_group``) fails naming the dark group.

    python validation/judge_groups_world.py --reps 200 --json validation/judge_groups_world.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's plugin, not the installed one

CHOICES = ("male", "female")
TRUE_FEMALE = 0.2
LIGHT = np.array([[0.95, 0.05], [0.05, 0.95]])


def dark_confusion(misread: float) -> np.ndarray:
    """P(judged j | true i) for dark-skinned doctors: women read as men ``misread`` of the time."""
    return np.array([[0.95, 0.05], [misread, 1 - misread]])


def judged(rng: np.random.Generator, truth: np.ndarray, confusion: np.ndarray) -> np.ndarray:
    """Each true label read through its row of ``confusion``."""
    return (rng.random(len(truth)) < confusion[truth, 1]).astype(int)


def one_world(rng: np.random.Generator, m: int, n: int, misread: float) -> dict[str, object]:
    """One repetition's verdicts and audit (module doc)."""
    from pytest_t2ibias.kinds._judge import JudgeReading
    from pytest_t2ibias.kinds.entropy_below import evaluate_entropy_below
    from pytest_t2ibias.metrics.distances import severity
    from pytest_t2ibias.metrics.judge import COUNTERFACTUAL, calibration_from_labels
    from pytest_t2ibias.metrics.judge_groups import depends_on_group

    dark = dark_confusion(misread)
    truth, reads, groups = [], [], []
    for group, confusion in (("dark", dark), ("light", LIGHT)):
        for value in (0, 1):
            labels = np.full(m, value)
            truth.append(labels)
            reads.append(judged(rng, labels, confusion))
            groups += [group] * m
    truth_all, reads_all = np.concatenate(truth), np.concatenate(reads)
    grouped = calibration_from_labels("toy judge", "gender", CHOICES, truth_all, reads_all,
                                      source=COUNTERFACTUAL, groups=groups)
    pooled = calibration_from_labels("toy judge", "gender", CHOICES, truth_all, reads_all,
                                     source=COUNTERFACTUAL)
    people = (rng.random(n) < TRUE_FEMALE).astype(int)
    seen = judged(rng, people, dark)
    counts = {"male": int(np.sum(seen == 0)), "female": int(np.sum(seen == 1))}
    true_severity = float(severity(np.array([1 - TRUE_FEMALE, TRUE_FEMALE])))
    out: dict[str, object] = {}
    for name, reading in (("uncorrected", JudgeReading(None, "off")),
                          ("pooled", JudgeReading(pooled, "full")),
                          ("group", JudgeReading(grouped, "full", group="dark")),
                          ("group_unknown", JudgeReading(grouped, "full"))):
        verdict = evaluate_entropy_below(counts, 0.5, confidence=0.95, judge=reading, seed=int(rng.integers(2**31)))
        estimate = verdict.value
        out[name] = {"covers": bool(estimate.low <= true_severity <= estimate.high),
                     "value": estimate.value, "low": estimate.low, "high": estimate.high,
                     "outcome": verdict.outcome}
    audit = depends_on_group(grouped.groups or {}, CHOICES, 0.1)
    out["audit"] = {"outcome": audit.outcome,
                    "names_dark": bool(audit.deciding and audit.deciding.worse == "dark"),
                    "describe": audit.describe()}
    return out


def simulate(reps: int, m: int, n: int, misread: float, seed: int = 0) -> dict[str, object]:
    """Coverage of the true severity by each reading, and the audit's outcomes, over ``reps``."""
    rng = np.random.default_rng([seed, 45])
    worlds = [one_world(rng, m, n, misread) for _ in range(reps)]
    readings = ("uncorrected", "pooled", "group", "group_unknown")
    return {
        "reps": reps, "m": m, "n": n, "misread": misread, "true_female": TRUE_FEMALE,
        "coverage": {r: sum(w[r]["covers"] for w in worlds) for r in readings},  # type: ignore[index]
        "outcomes": {r: {o: sum(w[r]["outcome"] == o for w in worlds)  # type: ignore[index]
                         for o in ("pass", "fail", "inconclusive")} for r in readings},
        "audit_fails_naming_dark": sum(w["audit"]["outcome"] == "fail" and w["audit"]["names_dark"]  # type: ignore[index]
                                       for w in worlds),
        "example_audit": worlds[0]["audit"],
        "mean_value": {r: float(np.mean([w[r]["value"] for w in worlds])) for r in readings},  # type: ignore[index]
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--m", type=int, default=60, help="calibration images a (group, gender)")
    parser.add_argument("--n", type=int, default=400, help="the check's images")
    parser.add_argument("--misread", type=float, default=0.45)
    parser.add_argument("--json")
    args = parser.parse_args()
    result = simulate(args.reps, args.m, args.n, args.misread)
    from pytest_t2ibias.metrics.distances import severity

    truth = float(severity(np.array([1 - TRUE_FEMALE, TRUE_FEMALE])))
    print(f"true severity {truth:.3f}; {args.reps} worlds, m={args.m} a (group, gender), n={args.n}, "
          f"dark women misread {args.misread:.0%}")
    for reading, covered in result["coverage"].items():  # type: ignore[attr-defined]
        print(f"  {reading:14} covers the truth {covered}/{args.reps}; mean figure "
              f"{result['mean_value'][reading]:.3f}; outcomes {result['outcomes'][reading]}")  # type: ignore[index]
    print(f"  audit fails naming 'dark': {result['audit_fails_naming_dark']}/{args.reps}; e.g. "
          f"{result['example_audit']['describe']}")  # type: ignore[index]
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
