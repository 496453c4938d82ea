"""How far a judge's answers agree with a reference classifier's on the same images
(OpenBias Sec. 4.2: KL between the VQA's and a classifier's class distributions, and the
VQA's F1 taking the classifier as the truth)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .distances import kl_divergence


def agreement(judge: Sequence[int], reference: Sequence[int], classes: int) -> dict[str, Any]:
    """KL(reference shares || judge shares) in nats, macro F1 and accuracy of the judge's class
    indices against the reference's, over the images both answered (negative: abstained).
    A class neither ever names is left out of the F1 mean (nothing to score)."""
    judge, reference = np.asarray(judge, dtype=int), np.asarray(reference, dtype=int)
    both = (judge >= 0) & (reference >= 0)
    judge, reference = judge[both], reference[both]
    if not len(judge):
        return {"kl": float("nan"), "f1": float("nan"), "accuracy": float("nan"), "n": 0}
    ours = np.bincount(judge, minlength=classes) / len(judge)
    theirs = np.bincount(reference, minlength=classes) / len(reference)
    scores = []
    for c in range(classes):
        predicted, actual = judge == c, reference == c
        if not predicted.any() and not actual.any():
            continue
        true_positive = float(np.sum(predicted & actual))
        scores.append(2 * true_positive / (predicted.sum() + actual.sum()))
    return {"kl": kl_divergence(theirs, ours), "f1": float(np.mean(scores)),
            "accuracy": float(np.mean(judge == reference)), "n": int(len(judge)),
            "judge_shares": [float(x) for x in ours], "reference_shares": [float(x) for x in theirs]}
