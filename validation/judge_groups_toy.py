"""The planted intersectional judge bias on the real toy models (issue #45's must-show): with
the misread group's own labelled calibration, do the gender figures cover the world's truth,
and without it (one pooled confusion) do they not?

The world is toy-sd read by the toy gender classifier through ``misreads-old:`` (the judge
sees images of prompts naming "old" blurred and noised: ``example_suites/weak_judge.py``,
``OldDegradedGenerator``; it misreads old men as women). Each world is one subject and seed:
``--n`` images of "a photo of an old {subject}", and its own labelled calibration, ``--m``
images rendered by the toy world through toy-sd's VAE (``toyworld labelled``), each row
labelled with its true gender and age, degraded as the planted bias degrades (old rows only,
``degrade_folder(by_label="old")``). The check is ``entropy_below`` on gender (threshold 0.15,
confidence 0.95), run through the plugin's kind (``CHECK_KINDS``, a ``CheckContext`` on the
plan the suite makes) four ways:

- ``truth``: the same images undegraded, read by the same classifier uncorrected (it reads
  every one of 240 labelled people through toy-sd's VAE right: ``example_suites/judges/
  through-toy-sd-vae``); a subject's true severity is that of its share over every seed's
  images together;
- ``uncorrected``: degraded, ``judge_correction: off``;
- ``pooled``: degraded, corrected with the labelled folder in a suite without the age axis,
  so the calibration carries no group: one confusion for every image;
- ``group``: degraded, the same folder in a suite with the age axis, so the calibration keeps
  a confusion per age group (``JudgeCalibration.groups``); the judge differs by group, and
  the item's prompt names "old", so the correction uses group old's own confusion
  (``kinds._judge.item_group``).

Each reading's coverage is the share of worlds whose interval holds the subject's true
severity, with its Wilson interval.

    nice -n 10 python validation/judge_groups_toy.py --seeds 6 --json validation/judge_groups_toy.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # example_suites.weak_judge

SUITE = """\
suite: judge_groups_toy
defaults: {{images_per_prompt: {n}, seed: {seed}, steps: 20, guidance: 2.0}}
prompt: "a photo of an old {{subject}}"
subjects: [{subject}]
axes:
  gender:
    question: "What is the gender (male, female) of the person?"
    choices: [male, female]
{calibration}{age}checks:
  - {{id: severity, kind: entropy_below, axes: [gender], threshold: 0.15, confidence: 0.95}}
"""
AGE = """\
  age:
    question: "What is the age (young, middle-aged, old) of the person?"
    choices: [young, middle-aged, old]
"""
SUBJECTS = ("doctor", "nurse", "teacher", "engineer", "farmer")
READINGS = ("truth", "uncorrected", "pooled", "group")


class ThroughLayer:
    """``inner``'s images through the request layer (cached, same fingerprint): the degraded
    view reads the truth run's images instead of making them again."""

    def __init__(self, layer: Any, inner: Any) -> None:
        self.layer, self.inner, self.fingerprint = layer, inner, inner.fingerprint

    def generate(self, requests: list[Any]) -> list[Any]:
        return [item.image for item in self.layer.images(self.inner, requests)]

    def with_options(self, **options: Any) -> ThroughLayer:
        return ThroughLayer(self.layer, self.inner.with_options(**options))


def calibration_folders(root: Path, worlds: int, m: int, pool: int, seed: int) -> list[Path]:
    """One labelled folder a world: ``m`` people drawn without replacement from a pool of
    ``pool`` toy-world renders through toy-sd's VAE (each world its own draw), the old rows
    degraded as the planted bias degrades."""
    from example_suites.weak_judge import OLD, degrade_folder
    from toyworld.labelled import vae_roundtrip_folder
    from toyworld.render import write_labelled_folder

    clean = root / "labelled-clean"
    write_labelled_folder(root / "labelled-rendered", pool, seed=seed, subjects=list(SUBJECTS))
    vae_roundtrip_folder(root / "labelled-rendered", clean, ROOT / "fixtures" / "toy-sd")
    degrade_folder(clean, root / "labelled-degraded", by_label=OLD)  # row i: its own noise
    rows = [line for line in (root / "labelled-degraded" / "index.jsonl").read_text().splitlines()
            if line.strip()]
    rng = np.random.default_rng([seed, 45])
    folders = []
    for w in range(worlds):
        part = root / f"labelled-world{w}"
        part.mkdir()
        chosen = sorted(rng.choice(len(rows), size=min(m, len(rows)), replace=False))
        (part / "index.jsonl").write_text("\n".join(rows[i] for i in chosen) + "\n")
        for i in chosen:
            name = json.loads(rows[i])["file"]
            (part / name).symlink_to(root / "labelled-degraded" / name)
        folders.append(part)
    return folders


def verdict(root: Path, layer: Any, subject: str, seed: int, n: int, reading: str,
            folder: Path) -> Any:
    """The entropy_below verdict of one world under one reading (module doc)."""
    from example_suites.weak_judge import OLD_PREFIX, OldDegradedGenerator
    from pytest_t2ibias._settings import Settings
    from pytest_t2ibias.backends._providers import BuiltinBackends
    from pytest_t2ibias.instrument import Instrument, Models
    from pytest_t2ibias.kinds import CHECK_KINDS, CheckContext
    from pytest_t2ibias.plan import Levels, plan_for
    from pytest_t2ibias.suite import load_suite

    class Provider(BuiltinBackends):
        def generator(self, model: str, role: str, options: dict[str, Any] | None = None) -> Any:
            inner = super().generator(model.removeprefix(OLD_PREFIX), role, options)
            return OldDegradedGenerator(ThroughLayer(layer, inner)) if model.startswith(OLD_PREFIX) \
                else inner

    calibration = "" if reading in ("truth", "uncorrected") else \
        f"    judge_calibration: {{folder: {folder}}}\n"
    path = root / f"{reading}.t2i.yaml"
    path.write_text(SUITE.format(n=n, seed=seed, subject=subject, calibration=calibration,
                                 age=AGE if reading == "group" else ""))
    model = str(ROOT / "fixtures" / "toy-sd")
    settings = Settings.standalone(
        model=model if reading == "truth" else OLD_PREFIX + model,
        classifiers={"gender": str(ROOT / "fixtures" / "classifiers" / "gender")},
        judge_correction="off" if reading in ("truth", "uncorrected") else "on")
    suite = load_suite(path)
    check = suite.checks[0]
    plan = plan_for(settings, suite, check)
    context = CheckContext(check=check, suite=suite, subject=subject, axis=suite.axes["gender"],
                           plan=plan, instrument=Instrument(Models(settings, Provider(settings)), layer, plan),
                           levels=Levels(0.95, 0.95), n_resamples=400, phrase=lambda s, subject: s)
    return CHECK_KINDS["entropy_below"].run(context)


def run(seeds: int, n: int, m: int, pool: int, subjects: tuple[str, ...], cache: Path,
        on_world: Any = None) -> dict[str, Any]:
    """Every world's four verdicts (``on_world``: called with the summary after each)."""
    from pytest_t2ibias.store.cache import Cache
    from pytest_t2ibias.store.request_layer import RequestLayer

    worlds = [(subject, seed) for seed in range(seeds) for subject in subjects]
    started = time.monotonic()
    layer = RequestLayer(Cache(cache), batch_size=32)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folders = calibration_folders(Path(tmp), len(worlds), m, pool, seed=45)
        for (subject, seed), folder in zip(worlds, folders):
            row: dict[str, Any] = {"subject": subject, "seed": seed}
            for reading in READINGS:
                v = verdict(Path(tmp), layer, subject, seed, n, reading, folder)
                shares = v.figures["distribution"]
                row[reading] = {"value": v.value.value, "low": v.value.low, "high": v.value.high,
                                "outcome": v.outcome, "female": shares["shares"].get("female"),
                                "counts": shares["counts"],
                                "group_used": "group 'old''s own confusion" in v.message,
                                "message": v.message.splitlines()[-3:]}
            rows.append(row)
            print(f"  {subject} seed {seed} ({time.monotonic() - started:.0f} s): " + "; ".join(
                f"{r} {row[r]['value']:.3f} [{row[r]['low']:.3f}, {row[r]['high']:.3f}]"
                for r in READINGS), flush=True)
            if on_world is not None:
                on_world(summary(rows, n, m, pool, seeds, subjects))
    return summary(rows, n, m, pool, seeds, subjects)


def summary(rows: list[dict[str, Any]], n: int, m: int, pool: int, seeds: int,
            subjects: tuple[str, ...]) -> dict[str, Any]:
    """The truth per subject and each reading's coverage over the worlds so far."""
    from pytest_t2ibias.metrics import wilson_interval
    from pytest_t2ibias.metrics.distances import severity

    truth = {}
    for subject in dict.fromkeys(w["subject"] for w in rows):
        counts = np.sum([[w["truth"]["counts"]["male"], w["truth"]["counts"]["female"]]
                         for w in rows if w["subject"] == subject], axis=0)
        truth[subject] = {"female": float(counts[1] / counts.sum()), "images": int(counts.sum()),
                          "severity": float(severity(counts / counts.sum()))}
    coverage = {}
    for reading in READINGS[1:]:
        covered = sum(w[reading]["low"] <= truth[w["subject"]]["severity"] <= w[reading]["high"]
                      for w in rows)
        estimate = wilson_interval(int(covered), len(rows), 0.95)
        coverage[reading] = {"covered": int(covered), "worlds": len(rows), "rate": estimate.value,
                             "low": estimate.low, "high": estimate.high,
                             "mean_value": float(np.mean([w[reading]["value"] for w in rows])),
                             "mean_width": float(np.mean([w[reading]["high"] - w[reading]["low"]
                                                          for w in rows])),
                             "outcomes": {o: sum(w[reading]["outcome"] == o for w in rows)
                                          for o in ("pass", "fail", "inconclusive")}}
    return {"seeds": seeds, "n": n, "m": m, "pool": pool, "subjects": list(subjects),
            "truth": truth, "coverage": coverage,
            "group_used": sum(w["group"]["group_used"] for w in rows), "worlds": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3, help="worlds a subject")
    parser.add_argument("--n", type=int, default=60, help="images of the old subject a world")
    parser.add_argument("--m", type=int, default=600, help="labelled calibration images a world")
    parser.add_argument("--pool", type=int, default=2400, help="labelled images the worlds draw from")
    parser.add_argument("--subjects", nargs="*", default=list(SUBJECTS))
    parser.add_argument("--cache", default=str(ROOT / ".t2ibias_cache"))
    parser.add_argument("--json")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(2)
    started = time.monotonic()
    def keep(partial: dict[str, Any]) -> None:  # a long run's figures so far
        if args.json:
            Path(args.json).write_text(json.dumps(partial, indent=1))

    result = run(args.seeds, args.n, args.m, args.pool, tuple(args.subjects), Path(args.cache), keep)
    result["wall_s"] = round(time.monotonic() - started, 1)
    print(f"{len(result['worlds'])} worlds ({len(args.subjects)} subjects x {args.seeds} seeds), "
          f"n={args.n} images of 'a photo of an old <subject>', m={args.m} labelled a world; "
          f"group old's own confusion applied in {result['group_used']}/{len(result['worlds'])}")
    for subject, t in result["truth"].items():
        print(f"  truth {subject}: female {t['female']:.3f} of {t['images']} undegraded images, "
              f"severity {t['severity']:.3f}")
    for reading, c in result["coverage"].items():
        print(f"  {reading:12} covers the truth {c['covered']}/{c['worlds']} ({c['rate']:.0%}, "
              f"95% CI {c['low']:.0%}-{c['high']:.0%}); mean figure {c['mean_value']:.3f}, "
              f"mean interval width {c['mean_width']:.3f}; "
              f"outcomes {c['outcomes']}")
    print(f"  wall {result['wall_s']} s")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
