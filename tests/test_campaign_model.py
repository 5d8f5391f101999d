"""The human-score model of a campaign (core.campaign.model): cross-fitted control variates."""

from __future__ import annotations

import numpy as np

from easl_toolkit.core.campaign.model import cross_fitted_predictions, fit_model, predict
from easl_toolkit.core.campaign.moments import moment_predictions


def _scores(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t = rng.normal(3.5, 0.8, n)
    systems = (t + rng.normal(0, 0.4, n))[None, :, None]
    first = np.where(rng.random(n) < 0.4, np.round(t + rng.normal(0, 0.5, n)), np.nan)[None]
    second = np.where(~np.isnan(first) & (rng.random(n) < 0.5), np.round(t + rng.normal(0, 0.5, n)), np.nan)
    return systems, first, second


def test_a_cross_fitted_prediction_does_not_move_with_the_scores_of_its_own_fold() -> None:
    systems, first, second = _scores(np.random.default_rng(1), 400)
    base = cross_fitted_predictions(systems, first, second)
    even = np.arange(400) % 2 == 0
    changed = np.flatnonzero(~np.isnan(second[0]) & even)[:5]
    changed_first, changed_second = first.copy(), second.copy()
    changed_first[0, changed] += 3.0
    changed_second[0, changed] -= 3.0
    moved = cross_fitted_predictions(systems, changed_first, changed_second)
    np.testing.assert_array_equal(moved[..., even], base[..., even])
    assert not np.allclose(moved[..., ~even], base[..., ~even])


def test_each_fold_is_predicted_by_the_model_fitted_on_the_other() -> None:
    systems, first, second = _scores(np.random.default_rng(2), 300)
    got = cross_fitted_predictions(systems, first, second)
    odd = np.arange(300) % 2 == 1
    model = fit_model(systems, np.where(odd, first, np.nan), np.where(odd, second, np.nan))
    m, v, _ = predict(model, systems[:, ~odd])
    np.testing.assert_allclose(got[..., ~odd], moment_predictions(systems[:, ~odd], m, v, model.error_var))
