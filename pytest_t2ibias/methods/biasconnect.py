"""BiasConnect (Shukla et al. 2025, Sec. 3): counterfactual prompts -> VQA -> IS matrix.

1. For the original prompt P and every counterfactual prompt CF_x^v (one per value v of each
   axis x that has counterfactuals), generate N images under the same seeds (paired noise).
2. Read every axis off every image (person filter first; filtered images are reported).
3. Eqs. 1-4 in ``metrics.intersectional``: IS[x][y] = wbar_init(y) - wbar_x(y).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .._types import ImageSet
from ..metrics import ISMatrix, intersectional_sensitivity, pooled_shares
from .counterfactuals import require_phrased

if TYPE_CHECKING:
    from ..facade import T2IBias
    from ..suite.spec import AxisSpec, Suite


def counterfactual_prompts(suite: Suite, subject: str, axes: Sequence[str]) -> dict[str, dict[str, str]]:
    """CF_x^v for every axis x in ``axes`` that has counterfactual templates (Table 2);
    ``counterfactuals: llm`` axes must be filled in first (``T2IBias.counterfactual_suite``)."""
    require_phrased(suite, axes)
    return {
        x: {value: template.format(subject=subject) for value, template in suite.axes[x].counterfactuals.items()}
        for x in axes
        if suite.axes[x].counterfactuals
    }


def intersectional_sensitivity_for(
    t2ibias: T2IBias,
    suite: Suite,
    subject: str,
    *,
    axes: Sequence[str] | None = None,
    mitigate: Sequence[str] | None = None,
    baseline: bool = False,
) -> ISMatrix:
    """The IS matrix of ``subject`` over ``axes`` (default: all of the suite's axes).

    ``mitigate`` limits the rows computed (and the counterfactual images generated) to those
    axes; the other rows stay NaN. A check of IS[gender][age] needs gender's rows only.
    """
    axes = list(axes or suite.axes)
    original = suite.prompt_for(subject)
    counterfactuals = counterfactual_prompts(suite, subject, list(mitigate) if mitigate else axes)
    prompts = [original] + [p for by_value in counterfactuals.values() for p in by_value.values()]
    images = t2ibias.generate_for(suite, list(dict.fromkeys(prompts)), baseline=baseline)
    by_prompt = images.by_prompt()

    def labels_of(prompt: str) -> dict[str, np.ndarray]:
        return {y: t2ibias.attributes(by_prompt[prompt], suite.axes[y], suite.filter).labels for y in axes}

    settings = t2ibias.settings
    return intersectional_sensitivity(
        initial=labels_of(original),
        counterfactual={x: {v: labels_of(p) for v, p in by_value.items()}
                        for x, by_value in counterfactuals.items()},
        choices={y: suite.axes[y].choices for y in axes},
        ideal={y: ideal_distribution(t2ibias, suite.axes[y], suite) for y in axes},
        ordered={y: suite.axes[y].ordered for y in axes},
        confidence=settings.confidence,
        n_resamples=settings.bootstrap,
    )


def ideal_distribution(t2ibias: T2IBias, axis: AxisSpec, suite: Suite):
    """D* of an axis: uniform, given, or measured on real reference images (paper A.10)."""
    if isinstance(axis.ideal, dict) and "reference" in axis.ideal:
        folder = Path(axis.ideal["reference"])
        images = reference_images(folder)
        answers = t2ibias.attributes(images, axis, suite.filter)
        return pooled_shares([answers.labels], len(axis.choices))
    return axis.ideal


def reference_images(folder: Path) -> ImageSet:
    """Every image under ``folder``, as an ``ImageSet`` the extractors can read."""
    from PIL import Image

    from .._cache import content_hash
    from .._types import GeneratedImage

    paths = sorted(p for p in folder.rglob("*") if p.suffix.lower() in {".png", ".jpg", ".jpeg", ".webp"})
    if not paths:
        raise FileNotFoundError(f"ideal reference folder {folder} holds no images (.png/.jpg/.webp)")
    items = []
    for i, path in enumerate(paths):
        with Image.open(path) as opened:
            picture = opened.convert("RGB")
        digest = content_hash(picture)
        items.append(GeneratedImage(f"reference:{folder}", 0, i, picture, digest, digest))
    return ImageSet(tuple(items))
