"""BiasConnect (Shukla et al. 2025, Sec. 3): counterfactual prompts -> VQA -> IS matrix.

1. For the original prompt P and every counterfactual prompt CF_x^v (one per value v of each
   axis x that has counterfactuals), generate N images under the same seeds (paired noise).
2. Read every axis off every image (person filter first; filtered images are reported).
3. Eqs. 1-4 in ``metrics.intersectional``: IS[x][y] = wbar_init(y) - wbar_x(y).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..metrics import ISMatrix, intersectional_sensitivity

if TYPE_CHECKING:
    from ..instrument import Instrument
    from ..suite_spec import Suite


def counterfactual_prompts(suite: Suite, subject: str, axes: Sequence[str]) -> dict[str, dict[str, str]]:
    """CF_x^v for every axis x in ``axes`` that has counterfactual templates (Table 2);
    ``counterfactuals: llm`` axes must be filled in first (the suite's lock file)."""
    suite.require_phrased(axes)
    return {
        x: {value: template.format(subject=subject) for value, template in suite.axes[x].counterfactuals.items()}
        for x in axes
        if suite.axes[x].counterfactuals
    }


def intersectional_sensitivity_for(
    instrument: Instrument,
    suite: Suite,
    subject: str,
    *,
    axes: Sequence[str] | None = None,
    mitigate: Sequence[str] | None = None,
    role: str = "candidate",
    confidence: float,
    n_resamples: int,
    calibration: dict[str, np.ndarray] | None = None,
) -> ISMatrix:
    """The IS matrix of ``subject`` over ``axes`` (default: all of the suite's axes).

    ``mitigate`` limits the rows computed (and the counterfactual images generated) to those
    axes; the other rows stay NaN. A check of IS[gender][age] needs gender's rows only.
    ``calibration``: the judge's confusion counts per axis (``metrics.judge``).
    """
    axes = list(axes or suite.axes)
    original = suite.prompt_for(subject)
    counterfactuals = counterfactual_prompts(suite, subject, list(mitigate) if mitigate else axes)
    prompts = [original] + [p for by_value in counterfactuals.values() for p in by_value.values()]
    by_prompt = instrument.images(list(dict.fromkeys(prompts)), role=role).by_prompt()

    def labels_of(prompt: str) -> dict[str, np.ndarray]:
        return {y: instrument.attributes(by_prompt[prompt], suite.axes[y], suite.filter).labels
                for y in axes}

    return intersectional_sensitivity(
        initial=labels_of(original),
        counterfactual={x: {v: labels_of(p) for v, p in by_value.items()}
                        for x, by_value in counterfactuals.items()},
        choices={y: suite.axes[y].choices for y in axes},
        ideal={y: instrument.ideal(suite.axes[y], suite.filter) for y in axes},
        ordered={y: suite.axes[y].ordered for y in axes},
        confidence=confidence,
        n_resamples=n_resamples,
        calibration=calibration,
    )
