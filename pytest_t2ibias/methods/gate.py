"""The fine-tune merge gate: IS_mit of a candidate model against its baseline (BiasConnect
A.5, A.9, Eqs. 5-6).

A fine-tune meant to fix axis x is a "really mitigated" model, so for every axis y

    IS_mit[x][y] = wbar_baseline(y) - wbar_candidate(y)

with wbar the normalised W1 to the ideal (Eq. 1). Positive: the candidate is closer to the
ideal on y; negative: it skewed y. Both models draw image i of the prompt from the same seed
(paired noise), so the bootstrap resamples image indices jointly and the shared noise cancels
(``metrics.mitigation_effect(paired=True)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .._types import Estimate
from ..metrics import mitigation_effect

if TYPE_CHECKING:
    from .._types import ImageSet
    from ..instrument import Instrument
    from ..suite_spec import Suite


def mitigation_effect_for(
    instrument: Instrument,
    suite: Suite,
    subject: str,
    *,
    axes: Sequence[str] | None = None,
    confidence: float,
    n_resamples: int,
    calibration: dict[str, np.ndarray] | None = None,
) -> dict[str, Estimate]:
    """IS_mit(y) for every axis y in ``axes`` (default: all of the suite's axes);
    ``calibration``: the judge's confusion counts per axis (``metrics.judge``)."""
    axes = list(axes or suite.axes)
    prompt = suite.prompt_for(subject)
    baseline = instrument.images([prompt], role="baseline")
    candidate = instrument.images([prompt], role="candidate")

    def labels_of(images: ImageSet) -> dict[str, np.ndarray]:
        return {y: instrument.attributes(images, suite.axes[y], suite.filter).labels for y in axes}

    return mitigation_effect(
        initial=labels_of(baseline),
        mitigated=labels_of(candidate),
        choices={y: suite.axes[y].choices for y in axes},
        ideal={y: instrument.ideal(suite.axes[y], suite.filter) for y in axes},
        ordered={y: suite.axes[y].ordered for y in axes},
        paired=True,  # image i of both models shares its noise seed
        confidence=confidence,
        n_resamples=n_resamples,
        calibration=calibration,
    )
