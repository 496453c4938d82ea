"""The exact group-sequential boundaries of the adaptive looks (``recursive_levels``): the
chance of first excluding the truth at each look equals that look's share of alpha under the
canonical joint law of the looks' estimates, where the union bound spent less than alpha."""

import numpy as np
import pytest
from scipy.stats import multivariate_normal, norm

from pytest_t2ibias.metrics.sequential import (
    doubling_looks,
    look_confidences,
    recursive_levels,
    spent_alpha,
)


def test_the_published_obrien_fleming_type_boundaries():
    """Five equally spaced looks, two-sided 0.05, the O'Brien-Fleming-type function at 0.025 a
    side (R's ldbounds and gsDesign tabulate 4.877, 3.357, 2.680, 2.290, 2.031)."""
    t = np.arange(1, 6) / 5
    per_side = 2 - 2 * norm.cdf(norm.isf(0.025 / 2) / np.sqrt(t))
    increments = tuple(2 * np.diff(np.r_[0.0, per_side]))
    z = [norm.isf((1 - level) / 2) for level in recursive_levels(increments, tuple(t))]
    assert z == pytest.approx([4.8769, 3.3569, 2.6803, 2.2898, 2.0310], abs=2e-4)


@pytest.mark.parametrize("cap", [60, 250, 750])
def test_the_looks_together_spend_alpha_exactly(cap):
    """P(every look's |Z| inside its boundary) = 1 - alpha, by an independent method (the
    multivariate normal of the looks, Genz's integration), where the union bound's levels
    leave more than 1 - alpha inside."""
    looks = doubling_looks(cap)
    n = np.array(looks, dtype=float)
    covariance = np.sqrt(np.minimum.outer(n, n) / np.maximum.outer(n, n))
    law = multivariate_normal(np.zeros(len(looks)), covariance, seed=0)

    def inside(levels):
        z = np.minimum(norm.isf((1 - np.array(levels)) / 2), 12.0)
        return law.cdf(z, lower_limit=-z)

    exact = look_confidences(0.95, looks, calibration=1)
    union = look_confidences(0.95, looks, calibration=1, exact=False)
    assert inside(exact) == pytest.approx(0.95, abs=2e-4)
    assert inside(union) > 0.95 + 1e-3  # the conservatism the exact boundaries remove
    assert exact[0] == pytest.approx(1 - spent_alpha(0.05, looks[0] / cap), abs=1e-12)


def test_the_cap_reads_a_narrower_interval_where_a_late_look_sits_near_it():
    """A cap of 750 looks at 512 too: the union bound read the cap at 97.67%, the exact
    boundary at 97.04%; with the looks far apart (a cap of 600, last early look 256) they
    differ by less."""
    exact, union = (look_confidences(0.95, doubling_looks(750), exact=e)[-1] for e in (1, 0))
    assert exact == pytest.approx(0.9704, abs=1e-4) and union == pytest.approx(0.9767, abs=1e-4)
    exact, union = (look_confidences(0.95, doubling_looks(600), exact=e)[-1] for e in (1, 0))
    assert 0 < union - exact < 0.001


def test_levels_are_cached_and_deterministic():
    looks = doubling_looks(750)
    assert look_confidences(0.95, looks) == look_confidences(0.95, looks)
    assert recursive_levels.cache_info().hits >= 1
    assert look_confidences(0.95, looks, "bonferroni") == look_confidences(
        0.95, looks, "bonferroni", exact=False)  # even spending stays the union bound
