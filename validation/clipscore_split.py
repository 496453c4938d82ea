"""Why a fine-tune lost prompt alignment: CLIPScore of each model's images of a prompt, split
by the judge's reading of an axis (issue #38; validation/README.md, docs/STATISTICS.md "Tolerances
on the toy merge gate").

    python validation/clipscore_split.py [--cache-dir DIR] [--subject doctor] [--n 200]

For toy_merge_gate.t2i.yaml's baseline and candidate: per axis value (the judge's argmax
answer) the images' mean CLIPScore with Student's t interval (descriptive: a group's images
are not paired across models), and the candidate's mean re-weighted at the baseline's
per-value means (what the mix alone would cost).
"""

from __future__ import annotations

import argparse

import numpy as np

from pytest_t2ibias.facade import T2IBias
from pytest_t2ibias.metrics.costs import clip_scores, mean_estimate
from pytest_t2ibias.suite.load import load_suite

SUITE = "example_suites/toy_merge_gate.t2i.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cache-dir", default=".t2ibias_cache")
    parser.add_argument("--subject", default="doctor")
    parser.add_argument("--n", type=int, default=200)
    args = parser.parse_args()
    suite = load_suite(SUITE)
    t2i = T2IBias.standalone(model="fixtures/toy-sd-debiased", baseline_model="fixtures/toy-sd",
                             vqa="fixtures/toy-clip", cache_dir=args.cache_dir, device="cpu")
    instrument = t2i.instrument(suite, n=args.n)
    prompt = suite.prompt_for(args.subject)
    text = instrument.text_embeddings([prompt])
    for name in ("gender", "age"):
        axis = suite.axes[name]
        statements = [axis.statements.get(c) for c in axis.choices] if axis.statements else None
        means: dict[str, np.ndarray] = {}
        for role in ("baseline", "candidate"):
            images = instrument.images([prompt], role=role)
            scores = clip_scores(instrument.image_embeddings(images), text)
            answers = instrument.ask(images, axis.question, axis.choices, statements=statements)
            read = np.argmax(np.asarray(answers.probabilities), axis=1)
            rows, counts = [], np.bincount(read, minlength=len(axis.choices))
            means[role] = np.array([scores[read == k].mean() if counts[k] else np.nan
                                    for k in range(len(axis.choices))])
            for k, choice in enumerate(axis.choices):
                if counts[k] > 1:
                    e = mean_estimate(scores[read == k])
                    rows.append(f"{choice} {counts[k]}: {e.value:.4f} [{e.low:.4f}, {e.high:.4f}]")
                else:
                    rows.append(f"{choice} {counts[k]}")
            print(f"{args.subject} {role} by {name}: " + "; ".join(rows)
                  + f"; all {scores.mean():.4f}")
            if role == "baseline":
                baseline_mean = float(scores.mean())
            else:
                at_base = float(np.nansum(counts / counts.sum() * means["baseline"]))
                print(f"  the candidate's {name} mix at the baseline's means: {at_base:.4f} "
                      f"({at_base / baseline_mean - 1:+.2%})")


if __name__ == "__main__":
    main()
