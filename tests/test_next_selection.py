"""Algorithm 1's choices are pinned: ``core.selection.select_hits`` gives the same HITs for the same generator as
before the speed-ups of ``easl next`` (the expected digests were computed with the code before them, on the commit
after 4e896a8), for both partner pools, with and without excluded items, ties in the variance, and a posterior
whose partners are far apart (many rejections, stragglers finished by the literal computation)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from core.selection import select_hits


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
EXPECTED = {
    0: "a943659379aa7826",
    1: "20fa96e57d9632d0",
    2: "eb1124bdd37044dd",
    3: "9baa0984d301f3d1",
    4: "69cab24c010c228d",
    5: "1f031d169be6751e",
}


def digest(hits: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(hits, dtype="<i8").tobytes()).hexdigest()[:16]


def choose(n: int, kind: str, n_hits: int, pool: str, share: float, max_rounds: int = 64) -> np.ndarray:
    location, variance = keys(n, n + n_hits, kind)
    exclude = np.random.default_rng(1).random(n) < share if share else None
    return select_hits(
        location,
        variance,
        hit_size=5,
        n_hits=n_hits,
        gamma=0.1,
        pool=pool,
        rng=np.random.default_rng([9, n_hits]),
        exclude=exclude,
        max_rounds=max_rounds,
    )


@pytest.mark.parametrize("case", range(len(CASES)))
def test_select_hits_is_unchanged(case):
    hits = choose(*CASES[case], max_rounds=ROUNDS.get(case, 64))
    assert hits.shape == (CASES[case][2], 5)
    assert digest(hits) == EXPECTED[case]
