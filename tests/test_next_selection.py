"""Algorithm 1's scalable sampler at the sizes ``easl next`` meets: ``core.selection.select_hits`` draws from the
law of the literal algorithm (``select_hits_literal``, successive sampling with ``Generator.choice``) for both
partner pools, with and without excluded items, ties in the variance, and a posterior whose partners are far apart
(many rejections; stragglers finished by the literal computation). Checked by the property that defines it: the
anchors are the same (the items of largest variance), and the distance between each anchor and its partners has
the same distribution under both (two-sample Kolmogorov-Smirnov over thousands of draws, fixed seeds). The exact
law on small cases is checked in ``tests/test_selection.py``."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from easl_toolkit.core.selection import HitRequest, Sampler, select_hits, select_hits_literal


def keys(n: int, seed: int, kind: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if kind == "beta":  # Beta posteriors after a few scores, as EASL's (mode, variance)
        a = 1.0 + rng.uniform(0, 4, n)
        b = 1.0 + rng.uniform(0, 4, n)
        mode = (a - 1) / np.maximum(a + b - 2, 1e-9)
        var = a * b / ((a + b) ** 2 * (a + b + 1))
        return mode, var
    if kind == "ties":  # a few distinct variances: ties at the k-th largest
        return rng.uniform(0, 1, n), rng.integers(1, 4, n) / 100.0
    # narrow posteriors far apart: low acceptance
    return rng.uniform(0, 100, n), rng.uniform(0, 1e-4, n)


CASES = [
    # (n, kind, hits, pool, exclude share)
    (20_000, "beta", 4_000, "paper", 0.0),
    (20_000, "beta", 4_000, "all", 0.0),
    (20_000, "ties", 3_000, "paper", 0.1),
    (5_000, "far", 1_000, "paper", 0.0),
    (5_000, "beta", 3, "paper", 0.2),  # fewer anchors than direct_below: the literal computation
    (5_000, "far", 1_000, "all", 0.0),  # with max_rounds=2 below: stragglers finished by the literal computation
]
ROUNDS = {5: 2}


def choose(case: int, literal: bool, seed: int = 9) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The HITs of ``CASES[case]`` by the scalable sampler or the literal algorithm (different generators), with
    the locations and variances they were drawn from."""
    n, kind, n_hits, pool, share = CASES[case]
    location, variance = keys(n, n + n_hits, kind)
    exclude = np.random.default_rng(1).random(n) < share if share else None
    rng = np.random.default_rng([seed + literal, n_hits])
    request = HitRequest(hit_size=5, n_hits=n_hits, gamma=0.1, pool=pool, exclude=exclude)
    if literal:
        hits = select_hits_literal(location, variance, request, rng)
    else:
        hits = select_hits(location, variance, request, rng, Sampler(max_rounds=ROUNDS.get(case, 64)))
    return hits, location, variance


@pytest.mark.parametrize("case", range(len(CASES)))
def test_scalable_sampler_draws_the_literal_algorithms_partners(case: int) -> None:
    fast, location, variance = choose(case, literal=False)
    literal, _, _ = choose(case, literal=True)
    assert fast.shape == literal.shape == (CASES[case][2], 5)
    assert np.array_equal(np.sort(variance[fast[:, 0]]), np.sort(variance[literal[:, 0]]))
    assert all(len(set(row)) == 5 for row in fast.tolist())
    gaps = [np.abs(location[h[:, 1:]] - location[h[:, :1]]).ravel() for h in (fast, literal)]
    if CASES[case][2] >= 1000:
        assert stats.ks_2samp(*gaps).pvalue > 1e-3


def test_fewer_anchors_than_the_direct_threshold_take_the_literal_path_draw_for_draw() -> None:
    """Below ``DIRECT_BELOW`` anchors the scalable sampler is the literal computation: the same generator gives
    the same HITs."""
    assert np.array_equal(choose(4, literal=False)[0], choose(4, literal=True, seed=8)[0])
