"""The planted intersectional judge bias on the real toy models (issue #45's must-show): with
the misread group's own labelled calibration, do the gender figures cover the world's truth,
and without it (one pooled confusion) do they not?

The world is toy-sd read by the toy gender classifier through ``misreads-old:`` (the judge
sees images of prompts naming "old" blurred and noised: ``example_suites/weak_judge.py``,
``OldDegradedGenerator``; it misreads old men as women). Each world is one subject and seed:
``--n`` images of "a photo of an old {subject}". Its labelled calibration is what a team that
labels its own run's images holds: ``--m`` toy-sd images a age of the same subject ("a photo
of a young / middle-aged / an old {subject}", seed ``CALIBRATION_SEED`` and on, one a subject,
so no world image among them), drawn without replacement from a pool of ``--pool`` a age, each row
labelled with its gender as the undegraded image reads and its age as the prompt names (toy-sd
draws the age a prompt names: ``validation/p2p_adherence.txt``), its image the one the judge
sees (``OldDegradedGenerator`` on the prompt: the old rows degraded exactly as the judged
images are). The check is ``entropy_below`` on gender (threshold 0.15, confidence 0.95), run
through the plugin's kind (``CHECK_KINDS``, a ``CheckContext`` on the plan the suite makes)
four ways:

- ``truth``: the same images undegraded, read by the same classifier uncorrected (it reads
  every one of 240 labelled people through toy-sd's VAE right: ``example_suites/judges/
  through-toy-sd-vae``); a world's true severity is that of the subject's share over the
  other seeds' images together (leave-one-out: the truth holds none of the world's own);
- ``uncorrected``: degraded, ``judge_correction: off``;
- ``pooled``: degraded, corrected with the labelled folder in a suite without the age axis,
  so the calibration carries no group: one confusion for every image;
- ``group``: degraded, the same folder in a suite with the age axis, so the calibration keeps
  a confusion per age group (``JudgeCalibration.groups``); the item's prompt names "old", so
  unless the calibration shows the judge errs alike by age the correction uses group old's
  own confusion (``kinds._judge.item_group``).

Each reading's coverage is the share of worlds whose interval holds the truth, with its Wilson
interval. A labelled folder of other images than the judged ones is a different calibration:
the toy world's renders through toy-sd's VAE (the earlier design) lose 23.2% of old men and
12.9% of old women to the blur against 20.5% and 10.4% of toy-sd's own, which over-corrects
(``judge_groups_toy_diagnosis.txt``, docs/judges.md).

    nice -n 10 python validation/judge_groups_toy.py --seeds 8 --n 120 --m 200 --pool 600 \
        --json validation/judge_groups_toy.json > validation/judge_groups_toy.txt
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


AGES = ("young", "middle-aged", "old")
CALIBRATION_SEED = 1000
"""The first subject's calibration images' seed, the next subject's the next (noise seeds
depend on (seed, index) only, so none of them is a world's image, the worlds' seeds being 0,
1, ...; and no two subjects' pools share their noise: on one seed for all, image i of every
subject's pool starts from the same latent and is degraded by the same noise, so one seed's
luck moved every pool alike: old women read as men 15.8% of 552 nurses and 21% of 72 doctors
there, against 10.4% and 11% on the worlds' images)."""


def age_prompt(age: str, subject: str) -> str:
    return f"a photo of {'an' if age[0] in 'aeiou' else 'a'} {age} {subject}"


def calibration_pool(root: Path, layer: Any, subject: str, pool: int,
                     seed: int = CALIBRATION_SEED) -> dict[str, list[str]]:
    """Age -> ``pool`` rows of index.jsonl in ``root/calibration-<subject>``: toy-sd's images of
    "a photo of a <age> <subject>" at ``seed`` as the judge sees them, each labelled with the
    gender its undegraded image reads and the age its prompt names (module doc)."""
    folder = root / f"calibration-{subject}"
    folder.mkdir()
    rows: dict[str, list[str]] = {}
    for age in AGES:
        prompt = age_prompt(age, subject)
        clean, axis = instrument(root, layer, subject, seed, pool, degraded=False)
        truth = clean.attributes(clean.images([prompt], per_prompt=pool), axis).labels
        seen, _ = instrument(root, layer, subject, seed, pool, degraded=True)
        rows[age] = []
        for i, (image, label) in enumerate(zip(seen.images([prompt], per_prompt=pool).images, truth)):
            if label < 0:
                continue  # no undegraded reading: no label
            name = f"{subject}-{age}-{i:04d}.png"
            image.save(folder / name)
            rows[age].append(json.dumps({"file": name, "subject": subject,
                                         "gender": axis.choices[label], "age": age}))
    return rows


def calibration_folder(root: Path, world: int, subject: str, pool: dict[str, list[str]],
                       m: int, least: int = 0) -> Path:
    """A world's labelled folder: ``m`` rows a age drawn without replacement from its
    subject's ``pool`` (each world its own draw); ``least``: then more of an age's rarer
    gender, drawn from the rest of the pool, until each (age, gender) holds ``least`` where
    the pool has them (a team labelling the images that tighten its calibration most)."""
    rng = np.random.default_rng([45, world])
    part = root / f"labelled-world{world}"
    part.mkdir()
    chosen = []
    for rows in pool.values():
        picked = [int(i) for i in rng.choice(len(rows), size=min(m, len(rows)), replace=False)]
        if least:
            rest = [int(i) for i in rng.permutation(len(rows)) if i not in set(picked)]
            for gender in ("male", "female"):
                have = sum(json.loads(rows[i])["gender"] == gender for i in picked)
                more = [i for i in rest if json.loads(rows[i])["gender"] == gender]
                picked += more[:max(0, least - have)]
        chosen += [rows[i] for i in sorted(picked)]
    (part / "index.jsonl").write_text("\n".join(chosen) + "\n")
    for row in chosen:
        name = json.loads(row)["file"]
        (part / name).symlink_to(root / f"calibration-{subject}" / name)
    return part


class _Provider:
    """The built-in backends, with ``misreads-old:`` (``OldDegradedGenerator``) over images
    read through ``layer`` (made once, degraded for the judge's view)."""

    def __new__(cls, settings: Any, layer: Any) -> Any:
        from example_suites.weak_judge import OLD_PREFIX, OldDegradedGenerator
        from pytest_t2ibias.backends._providers import BuiltinBackends

        class Provider(BuiltinBackends):
            def generator(self, model: str, role: str, options: dict[str, Any] | None = None) -> Any:
                inner = super().generator(model.removeprefix(OLD_PREFIX), role, options)
                return OldDegradedGenerator(ThroughLayer(layer, inner)) \
                    if model.startswith(OLD_PREFIX) else inner

        return Provider(settings)


def _settings(degraded: bool, correction: str) -> Any:
    from example_suites.weak_judge import OLD_PREFIX
    from pytest_t2ibias._settings import Settings

    model = str(ROOT / "fixtures" / "toy-sd")
    return Settings.standalone(model=OLD_PREFIX + model if degraded else model,
                               classifiers={"gender": str(ROOT / "fixtures" / "classifiers" / "gender")},
                               judge_correction=correction)


def instrument(root: Path, layer: Any, subject: str, seed: int, n: int, degraded: bool) -> Any:
    """(an Instrument on toy-sd at ``seed``, clean or as the judge sees it; the gender axis)."""
    from pytest_t2ibias.instrument import Instrument, Models
    from pytest_t2ibias.plan import plan_for
    from pytest_t2ibias.suite import load_suite

    path = root / "images.t2i.yaml"
    path.write_text(SUITE.format(n=n, seed=seed, subject=subject, calibration="", age=""))
    settings = _settings(degraded, "off")
    suite = load_suite(path)
    plan = plan_for(settings, suite, suite.checks[0])
    return Instrument(Models(settings, _Provider(settings, layer)), layer, plan), suite.axes["gender"]


def verdict(root: Path, layer: Any, subject: str, seed: int, n: int, reading: str,
            folder: Path) -> Any:
    """The entropy_below verdict of one world under one reading (module doc)."""
    from pytest_t2ibias.instrument import Instrument, Models
    from pytest_t2ibias.kinds import CHECK_KINDS, CheckContext
    from pytest_t2ibias.plan import Levels, plan_for
    from pytest_t2ibias.suite import load_suite

    calibration = "" if reading in ("truth", "uncorrected") else \
        f"    judge_calibration: {{folder: {folder}}}\n"
    path = root / f"{reading}.t2i.yaml"
    path.write_text(SUITE.format(n=n, seed=seed, subject=subject, calibration=calibration,
                                 age=AGE if reading == "group" else ""))
    settings = _settings(reading != "truth", "off" if reading in ("truth", "uncorrected") else "on")
    suite = load_suite(path)
    check = suite.checks[0]
    plan = plan_for(settings, suite, check)
    context = CheckContext(check=check, suite=suite, subject=subject, axis=suite.axes["gender"],
                           plan=plan, instrument=Instrument(Models(settings, _Provider(settings, layer)),
                                                            layer, plan),
                           levels=Levels(0.95, 0.95), n_resamples=400, phrase=lambda s, subject: s)
    return CHECK_KINDS["entropy_below"].run(context)


def run(seeds: int, n: int, m: int, pool: int, subjects: tuple[str, ...], cache: Path,
        on_world: Any = None, least: int = 0) -> dict[str, Any]:
    """Every world's four verdicts (``on_world``: called with the summary after each)."""
    from pytest_t2ibias.store.cache import Cache
    from pytest_t2ibias.store.request_layer import RequestLayer

    worlds = [(subject, seed) for seed in range(seeds) for subject in subjects]
    started = time.monotonic()
    layer = RequestLayer(Cache(cache), batch_size=32)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        pools = {subject: calibration_pool(Path(tmp), layer, subject, pool, CALIBRATION_SEED + k)
                 for k, subject in enumerate(subjects)}
        print(f"  calibration pools ({time.monotonic() - started:.0f} s): " + "; ".join(
            f"{subject} {len(rows['old'])} old" for subject, rows in pools.items()), flush=True)
        for w, (subject, seed) in enumerate(worlds):
            folder = calibration_folder(Path(tmp), w, subject, pools[subject], m, least)
            row: dict[str, Any] = {"subject": subject, "seed": seed}
            for reading in READINGS:
                v = verdict(Path(tmp), layer, subject, seed, n, reading, folder)
                shares = v.figures["distribution"]
                row[reading] = {"value": v.value.value, "low": v.value.low, "high": v.value.high,
                                "outcome": v.outcome, "female": shares["shares"].get("female"),
                                "counts": shares["counts"],
                                "group_used": "group 'old''s own confusion" in v.message,
                                "confusion": (v.figures.get("judge_calibration") or {}).get("confusion"),
                                "cannot_correct": bool(v.figures.get("judge_unreadable")),
                                "message": v.message.splitlines()[-3:]}
            rows.append(row)
            print(f"  {subject} seed {seed} ({time.monotonic() - started:.0f} s): " + "; ".join(
                f"{r} {row[r]['value']:.3f} [{row[r]['low']:.3f}, {row[r]['high']:.3f}]"
                for r in READINGS), flush=True)
            if on_world is not None:
                on_world(summary(rows, n, m, pool, seeds, subjects) | {"least": least})
    return summary(rows, n, m, pool, seeds, subjects) | {"least": least}


def summary(rows: list[dict[str, Any]], n: int, m: int, pool: int, seeds: int,
            subjects: tuple[str, ...]) -> dict[str, Any]:
    """The truth per subject and each reading's coverage over the worlds so far."""
    from pytest_t2ibias.metrics import wilson_interval
    from pytest_t2ibias.metrics.distances import severity

    def shares(worlds: list[dict[str, Any]]) -> np.ndarray:
        return np.sum([[w["truth"]["counts"]["male"], w["truth"]["counts"]["female"]]
                       for w in worlds], axis=0)

    truth = {}
    for subject in dict.fromkeys(w["subject"] for w in rows):
        counts = shares([w for w in rows if w["subject"] == subject])
        truth[subject] = {"female": float(counts[1] / counts.sum()), "images": int(counts.sum()),
                          "severity": float(severity(counts / counts.sum()))}
    for w in rows:  # leave-one-out: the subject's other worlds' undegraded images
        others = [o for o in rows if o["subject"] == w["subject"] and o is not w]
        counts = shares(others) if others else np.array([np.nan, np.nan])
        w["truth_severity"] = float(severity(counts / counts.sum())) if others else None
    judged = [w for w in rows if w["truth_severity"] is not None]
    coverage = {}
    for reading in READINGS[1:]:
        covered = sum(w[reading]["low"] <= w["truth_severity"] <= w[reading]["high"] for w in judged)
        estimate = wilson_interval(int(covered), len(judged), 0.95) if judged else None
        # a row that says its judge cannot be corrected decides nothing and shows the
        # uncorrected figure: counted as a miss above, and apart here
        applied = [w for w in judged if not w[reading].get("cannot_correct")]
        covered_applied = sum(w[reading]["low"] <= w["truth_severity"] <= w[reading]["high"]
                              for w in applied)
        coverage[reading] = {"covered": int(covered), "worlds": len(judged),
                             "cannot_correct": len(judged) - len(applied),
                             "covered_where_corrected": int(covered_applied),
                             "rate": estimate.value if estimate else None,
                             "low": estimate.low if estimate else None,
                             "high": estimate.high if estimate else None,
                             "mean_value": float(np.mean([w[reading]["value"] for w in rows])),
                             "mean_error": float(np.mean([w[reading]["value"] - w["truth_severity"]
                                                          for w in judged])) if judged else None,
                             "mean_width": float(np.mean([w[reading]["high"] - w[reading]["low"]
                                                          for w in rows])),
                             "outcomes": {o: sum(w[reading]["outcome"] == o for w in rows)
                                          for o in ("pass", "fail", "inconclusive")}}
    return {"seeds": seeds, "n": n, "m": m, "pool": pool, "subjects": list(subjects),
            "truth": truth, "coverage": coverage,
            "group_used": sum(w["group"]["group_used"] for w in rows), "worlds": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=8, help="worlds a subject")
    parser.add_argument("--n", type=int, default=120, help="images of the old subject a world")
    parser.add_argument("--m", type=int, default=200, help="labelled calibration images an age a world")
    parser.add_argument("--pool", type=int, default=600,
                        help="labelled images an age of a subject the worlds draw from")
    parser.add_argument("--least", type=int, default=0,
                        help="labelled images an (age, gender) a world at least, where the pool has them")
    parser.add_argument("--subjects", nargs="*", default=list(SUBJECTS))
    parser.add_argument("--cache", default=str(ROOT / ".t2ibias_cache"))
    parser.add_argument("--json")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)  # one core of the shared box
    started = time.monotonic()
    def keep(partial: dict[str, Any]) -> None:  # a long run's figures so far
        if args.json:
            Path(args.json).write_text(json.dumps(partial, indent=1))

    result = run(args.seeds, args.n, args.m, args.pool, tuple(args.subjects), Path(args.cache), keep,
                 least=args.least)
    result["wall_s"] = round(time.monotonic() - started, 1)
    print(f"{len(result['worlds'])} worlds ({len(args.subjects)} subjects x {args.seeds} seeds), "
          f"n={args.n} images of 'a photo of an old <subject>', m={args.m} labelled an age a world "
          f"(of {args.pool} an age a subject)"
          + (f", topped up to {args.least} an (age, gender)" if args.least else "") + "; "
          f"group old's own confusion applied in {result['group_used']}/{len(result['worlds'])}")
    for subject, t in result["truth"].items():
        print(f"  truth {subject}: female {t['female']:.3f} of {t['images']} undegraded images, "
              f"severity {t['severity']:.3f}")
    print("  (each world against the truth of its subject's other worlds)")
    for reading, c in result["coverage"].items():
        print(f"  {reading:12} covers the truth {c['covered']}/{c['worlds']} ({c['rate']:.0%}, "
              f"95% CI {c['low']:.0%}-{c['high']:.0%}); mean figure {c['mean_value']:.3f}, "
              f"mean error {c['mean_error']:+.3f}, "
              f"mean interval width {c['mean_width']:.3f}; "
              f"outcomes {c['outcomes']}"
              + (f"; says it cannot correct in {c['cannot_correct']}, covers "
                 f"{c['covered_where_corrected']}/{c['worlds'] - c['cannot_correct']} of the others"
                 if c["cannot_correct"] else ""))
    print(f"  wall {result['wall_s']} s")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
