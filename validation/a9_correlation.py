"""BiasConnect A.9 on the toy world: does IS predicted from counterfactuals match real mitigation?

For every subject of a suite and every pair of axes (x, y), x != y:

  predicted  IS[x][y]     = wbar_init(y) - wbar_x(y)          (Eq. 4; counterfactuals pooled)
  observed   IS_mit[x][y] = wbar_init(y) - wbar(D_mit(x)(y))  (A.5, A.9)

with two real mitigations:

* prompt modification (PM, A.7): the counterfactual prompts of x, N images split equally;
* the fine-tune: x = gender only, candidate = the toy "debiased" pipeline, baseline = the toy
  pipeline, paired seeds.

Every observation is an independent sample: its initial images and its mitigated images are
drawn under *fresh* seeds, so no image noise is shared with the prediction (sharing wbar_init
would correlate the two by construction).

The paper reports +0.95 (PM) and +0.65 (ITI-GEN) as "the average correlation ... across all
intersectional relationships Bx -> By present for each prompt" (A.9): one Pearson r per prompt
(subject) over its (x, y) pairs, averaged over prompts. We print that statistic (with a 95%
bootstrap interval over subjects; a subject needs 3 pairs, so the gender fine-tune's 2 pairs a
subject give none) beside the pooled Pearson r over every (subject, x, y) pair with its
Fisher interval, the number of pairs, and every pair; ``--json`` keeps them.

    python validation/a9_correlation.py --fixtures fixtures \\
        --suite example_suites/toy_occupations.t2i.yaml --json validation/a9_results.json
    python validation/a9_correlation.py --from-json validation/a9_results.json  # no models
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table
from scipy.stats import bootstrap, pearsonr

from pytest_t2ibias.facade import T2IBias
from pytest_t2ibias.methods.biasconnect import counterfactual_prompts
from pytest_t2ibias.metrics import mitigation_effect
from pytest_t2ibias.suite.load import load_suite

FRESH_SEED_OFFSET = 1000


def labels_by_axis(t2ibias, suite, images, axes):
    return {y: t2ibias.attributes(images, suite.axes[y], suite.filter).labels for y in axes}


def observed_effect(t2ibias, suite, axes, initial, mitigated, paired=False):
    """IS_mit(y) for every axis (A.9), with its bootstrap interval."""
    return mitigation_effect(
        initial=initial,
        mitigated=mitigated,
        choices={y: suite.axes[y].choices for y in axes},
        ideal={y: t2ibias.instrument(suite).ideal(suite.axes[y], suite.filter) for y in axes},
        ordered={y: suite.axes[y].ordered for y in axes},
        paired=paired,
        n_resamples=t2ibias.settings.bootstrap,
    )


def measure_subject(t2ibias, suite, fresh_suite, finetune_suite, subject):
    axes = list(suite.axes)
    matrix = t2ibias.biasconnect(suite, subject)
    fresh = t2ibias.instrument(fresh_suite)
    n = fresh.images_per_prompt
    prompt = suite.prompt_for(subject)
    # The observation's own initial images: fresh seeds, nothing shared with the prediction.
    initial = labels_by_axis(t2ibias, suite, fresh.images([prompt]), axes)
    rows = []
    for x, by_value in counterfactual_prompts(suite, subject, axes).items():
        per_prompt = math.ceil(n / len(by_value))
        mitigated_images = fresh.images(list(by_value.values()), per_prompt=per_prompt)
        observed = observed_effect(t2ibias, suite, axes, initial,
                                   labels_by_axis(t2ibias, suite, mitigated_images, axes))
        for y in axes:
            if y != x:
                rows.append({"subject": subject, "x": x, "y": y, "mitigation": "prompt modification",
                             "predicted": matrix.entry(x, y).to_dict(),
                             "observed": observed[y].to_dict()})
    if "gender" in axes and finetune_suite is not None:
        candidate = t2ibias.instrument(finetune_suite).images([prompt])  # same fresh seeds: paired
        observed = observed_effect(t2ibias, suite, axes, initial,
                                   labels_by_axis(t2ibias, suite, candidate, axes), paired=True)
        for y in axes:
            if y != "gender":
                rows.append({"subject": subject, "x": "gender", "y": y, "mitigation": "fine-tune",
                             "predicted": matrix.entry("gender", y).to_dict(),
                             "observed": observed[y].to_dict()})
    return rows


def correlation(rows):
    predicted = np.array([r["predicted"]["value"] for r in rows])
    observed = np.array([r["observed"]["value"] for r in rows])
    keep = ~(np.isnan(predicted) | np.isnan(observed))
    if keep.sum() < 3 or np.std(predicted[keep]) == 0 or np.std(observed[keep]) == 0:
        return {"r": float("nan"), "low": float("nan"), "high": float("nan"), "pairs": int(keep.sum())}
    result = pearsonr(predicted[keep], observed[keep])
    ci = result.confidence_interval(confidence_level=0.95)
    return {"r": float(result.statistic), "low": float(ci.low), "high": float(ci.high),
            "p": float(result.pvalue), "pairs": int(keep.sum())}


def mean_per_prompt_correlation(rows, min_pairs=3):
    """The paper's A.9 statistic: Pearson r of predicted vs observed over each subject's
    (x, y) pairs, averaged over the subjects that have ``min_pairs`` finite pairs and spread
    in both (a correlation of 2 points is always +-1), with a 95% percentile bootstrap
    interval over subjects."""
    by_subject = {}
    for r in rows:
        by_subject.setdefault(r["subject"], []).append(r)
    per_subject = {}
    for subject, pairs in by_subject.items():
        predicted = np.array([p["predicted"]["value"] for p in pairs])
        observed = np.array([p["observed"]["value"] for p in pairs])
        keep = ~(np.isnan(predicted) | np.isnan(observed))
        if keep.sum() >= min_pairs and np.std(predicted[keep]) > 0 and np.std(observed[keep]) > 0:
            per_subject[subject] = float(pearsonr(predicted[keep], observed[keep]).statistic)
    values = np.array(list(per_subject.values()))
    nan = float("nan")
    if len(values) == 0:
        return {"mean_r": nan, "low": nan, "high": nan, "prompts": 0, "per_prompt": {}}
    if len(values) < 2 or np.ptp(values) == 0:
        low = high = float(values.mean())
    else:
        ci = bootstrap((values,), np.mean, confidence_level=0.95, n_resamples=9999,
                       method="percentile", random_state=0).confidence_interval
        low, high = float(ci.low), float(ci.high)
    return {"mean_r": float(values.mean()), "low": low, "high": high,
            "prompts": len(values), "per_prompt": per_subject}


def both_statistics(rows):
    """Per mitigation: the paper's mean per-prompt r and the pooled r, side by side."""
    return {mitigation: {"pooled": correlation(chosen),
                         "mean_per_prompt": mean_per_prompt_correlation(chosen)}
            for mitigation in ("prompt modification", "fine-tune")
            for chosen in [[r for r in rows if r["mitigation"] == mitigation]]}


def print_statistics(console, results):
    for mitigation, both in results.items():
        c, m = both["pooled"], both["mean_per_prompt"]
        console.print(f"{mitigation}: mean per-prompt r (the paper's A.9) = {m['mean_r']:+.3f} "
                      f"[95% CI {m['low']:+.3f}, {m['high']:+.3f}] over {m['prompts']} prompts; "
                      f"pooled Pearson r = {c['r']:+.3f} [95% CI {c['low']:+.3f}, "
                      f"{c['high']:+.3f}] over {c['pairs']} (subject, x, y) pairs")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fixtures", type=Path, default=Path("fixtures"))
    parser.add_argument("--suite", type=Path, default=Path("example_suites/toy_occupations.t2i.yaml"))
    parser.add_argument("--cache-dir", type=Path, default=Path(".t2ibias_cache"))
    parser.add_argument("--subjects", nargs="*", help="a subset of the suite's subjects")
    parser.add_argument("--json", type=Path, help="write every pair and the correlations here")
    parser.add_argument("--from-json", type=Path,
                        help="recompute both statistics from a saved --json file (no models)")
    args = parser.parse_args(argv)
    if args.from_json:
        rows = json.loads(args.from_json.read_text())["pairs"]
        print_statistics(Console(), both_statistics(rows))
        return 0

    fixtures = args.fixtures
    classifiers = {axis.name: str(axis) for axis in (fixtures / "classifiers").iterdir()}
    t2ibias = T2IBias.standalone(model=str(fixtures / "toy-sd"), vqa=str(fixtures / "toy-clip"),
                                 classifiers=classifiers, cache_dir=args.cache_dir, device="cpu",
                                 offline=True, bootstrap=500)
    suite = load_suite(args.suite)
    seed = (suite.defaults.seed or 0) + FRESH_SEED_OFFSET
    fresh_suite = dataclasses.replace(suite, defaults=dataclasses.replace(suite.defaults, seed=seed))
    debiased = fixtures / "toy-sd-debiased"
    finetune_suite = (dataclasses.replace(fresh_suite, models={"candidate": str(debiased)})
                      if debiased.exists() else None)

    subjects = args.subjects or suite.subjects
    rows = [row for subject in subjects
            for row in measure_subject(t2ibias, suite, fresh_suite, finetune_suite, subject)]
    results = both_statistics(rows)

    console = Console()
    table = Table(title="BiasConnect A.9 on the toy world: predicted IS vs observed IS_mit")
    for column in ("mitigation", "subject", "x -> y", "predicted IS", "observed IS_mit"):
        table.add_column(column)
    for r in rows:
        p, o = r["predicted"], r["observed"]
        table.add_row(r["mitigation"], r["subject"], f"{r['x']} -> {r['y']}",
                      f"{p['value']:+.3f} [{p['low']:+.3f}, {p['high']:+.3f}]",
                      f"{o['value']:+.3f} [{o['low']:+.3f}, {o['high']:+.3f}]")
    console.print(table)
    print_statistics(console, results)
    console.print(f"work: {t2ibias.requests.counters}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"correlation": results, "pairs": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
