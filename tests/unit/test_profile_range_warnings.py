"""The profile interval on degenerate draws (a class never seen): its numerical dead ends are
dropped quietly, never printed as numpy warnings in a user's run."""

from __future__ import annotations

import warnings

import numpy as np

from pytest_t2ibias.metrics.posterior import profile_range


def test_draws_on_a_face_of_the_simplex_give_a_range_and_no_numpy_warning():
    draws = np.array([  # Dirichlet(0.01) draws, at full precision: the third class ~never
        [0.9990445538761095, 0.0009554461238905354, 0.0],
        [8.97569432382201e-15, 0.999999999999991, 0.0],
        [0.9999999999109993, 2.8684310723930515e-15, 8.899782727109589e-11],
        [0.9999999999980136, 2.0053906126745667e-24, 1.9864110356573247e-12]])

    def distance_from_half(groups):
        return np.abs(groups[0][:, 0] - 0.5)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        low, high = profile_range(distance_from_half, [draws], 3.84)
    assert 0.0 <= low <= high <= 0.5 + 1e-9
