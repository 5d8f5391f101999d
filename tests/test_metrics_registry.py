"""The metric registry (core/metrics/registry.py) names exactly the figures `easl evaluate` reports."""

from __future__ import annotations

import warnings

import numpy as np

from easl_toolkit.core.metrics import evaluate
from easl_toolkit.core.metrics.registry import ALL_RATERS_COUNTS, MULTI_RATER, OBSERVED_KEYS, TRUE_SCORE_KEYS

# Structure of the all-raters block beside its figures (intervals, benchmarks, rater names).
ALL_RATERS_PARTS = {"analytic", "benchmark", "ci", "raters"}


def _evaluation():
    rng = np.random.default_rng(0)
    human = rng.integers(1, 7, (60, 3)).astype(float)
    system = human[:, 0] + rng.normal(0, 1, 60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return evaluate(human, {"m": system})


def test_multi_rater_registry_is_the_all_raters_block():
    block = _evaluation().human_human.all_raters_json(False)
    figures = set(block) - set(ALL_RATERS_COUNTS) - ALL_RATERS_PARTS
    assert figures == {m.name for m in MULTI_RATER}
    assert set(ALL_RATERS_COUNTS) <= set(block)


def test_registry_names_are_unique():
    for names in (OBSERVED_KEYS, TRUE_SCORE_KEYS, tuple(m.name for m in MULTI_RATER)):
        assert len(names) == len(set(names))
