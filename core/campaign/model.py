"""The human-score model of a campaign, fitted on the human scores of earlier iterations only (cross-fitting).

It gives, for every response, a conditional mean m(S) and variance v(S) of one human score given the systems'
scores, and the rater error variance V_e; :func:`core.campaign.moments.moment_predictions` turns these into the
control variates f of every moment, and :func:`binned_spread` into the predicted spread of a response's
contribution to a metric, which the design allocates by (Zrnic & Candès 2024, section 3: inclusion probability
proportional to the predicted conditional spread of the residual).

- m(S) = beta_0 + sum_k beta_k S_k, ordinary least squares of the first score on the systems' scores;
- v(S): the mean squared residual in bins of m (quantiles of m over all responses), shrunk towards the overall
  mean squared residual with a prior weight of :data:`SHRINK` responses: v_b = (n_b v_b + SHRINK v) / (n_b +
  SHRINK); bins capture the smaller spread at the ends of a bounded score scale;
- V_e = mean (A - B)^2 / 2 over the double-scored responses (Loukina et al. 2020, eq. 4-5), else v / 2.

Every function works on a batch of campaigns at once: arrays (C, N, ...) with C campaigns of N responses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from easl_toolkit.core.campaign.moments import Layout, moment_predictions

#: Prior weight (in responses) of the overall residual variance in each bin.
SHRINK = 20.0
#: Number of bins of the conditional variance and of the spreads.
N_BINS = 10


@dataclass(frozen=True)
class HumanScoreModel:
    """Fitted model of a batch of C campaigns: ``coef`` (C, K+1), ``edges`` (C, N_BINS-1), ``bin_var`` (C, N_BINS),
    ``error_var`` (C,)."""

    coef: NDArray[Any]
    edges: NDArray[Any]
    bin_var: NDArray[Any]
    error_var: NDArray[Any]


def _design_matrix(systems: NDArray[Any]) -> NDArray[Any]:
    return np.concatenate([np.ones(systems.shape[:-1] + (1,)), systems], axis=-1)


def bin_index(values: NDArray[Any], edges: NDArray[Any]) -> NDArray[Any]:
    """(C, N) bin of each value given per-campaign inner edges (C, B-1); bins are 0..B-1."""
    out = np.zeros(values.shape, dtype=np.int64)
    for j in range(edges.shape[-1]):
        out += values > edges[:, j : j + 1]
    return out


def binned_mean(values: NDArray[Any], bins: NDArray[Any], mask: NDArray[Any], n_bins: int) -> NDArray[Any]:
    """Per-campaign, per-bin mean of ``values`` (C, N, T) over ``mask``, shrunk to the campaign's overall mean.

    Returns (C, n_bins, T); NaN where a campaign has no masked response.
    """
    c, n, t = values.shape
    flat = (np.arange(c)[:, None] * n_bins + bins)[mask]
    counts = np.bincount(flat, minlength=c * n_bins).reshape(c, n_bins).astype(np.float64)
    sums = np.stack(
        [np.bincount(flat, weights=values[..., j][mask], minlength=c * n_bins) for j in range(t)], axis=-1
    ).reshape(c, n_bins, t)
    total = counts.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        overall = sums.sum(axis=1) / total[:, None]
    return np.asarray((sums + SHRINK * overall[:, None, :]) / (counts + SHRINK)[..., None], dtype=np.float64)


def fit_model(
    systems: NDArray[Any], first: NDArray[Any], second: NDArray[Any], *, n_bins: int = N_BINS
) -> HumanScoreModel:
    """Fit m, v and V_e on the scored responses of each campaign (systems (C, N, K), scores (C, N), NaN = none).

    A campaign with fewer than K + 2 first scores gets m = its mean score (or 0) and v = its variance (or 1).
    """
    x = _design_matrix(systems)
    scored = ~np.isnan(first)
    y = np.where(scored, first, 0.0)
    w = scored.astype(np.float64)
    xtx = np.einsum("cnk,cn,cnl->ckl", x, w, x)
    xty = np.einsum("cnk,cn->ck", x, w * y)
    n_scored = w.sum(axis=1)
    ok = n_scored >= x.shape[-1] + 1
    trace = np.trace(xtx, axis1=1, axis2=2)[:, None, None]
    ridge = np.where(trace > 0, 1e-9 * trace, 1.0) * np.eye(x.shape[-1])  # (1: no scored response, a fallback below)
    coef = np.linalg.solve(xtx + ridge, xty[..., None])[..., 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_y = np.where(n_scored > 0, xty[:, 0] / np.maximum(n_scored, 1), 0.0)
    fallback = np.zeros_like(coef)
    fallback[:, 0] = mean_y
    coef = np.where(ok[:, None], coef, fallback)
    m = np.einsum("cnk,ck->cn", x, coef)
    edges = np.quantile(m, np.linspace(0, 1, n_bins + 1)[1:-1], axis=1).T
    resid2 = np.where(scored, (y - m) ** 2, 0.0)
    bin_var = binned_mean(resid2[..., None], bin_index(m, edges), scored, n_bins)[..., 0]
    bin_var = np.where(np.isfinite(bin_var), bin_var, 1.0)
    both = scored & ~np.isnan(second)
    n_both = both.sum(axis=1)
    d2 = np.where(both, (np.nan_to_num(first) - np.nan_to_num(second)) ** 2 / 2.0, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        error_var = np.where(n_both > 0, d2 / np.maximum(n_both, 1), bin_var.mean(axis=1) / 2.0)
    return HumanScoreModel(coef=coef, edges=edges, bin_var=bin_var, error_var=error_var)


def predict(model: HumanScoreModel, systems: NDArray[Any]) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
    """(m, v, bin) for every response: conditional mean, conditional variance, bin index; each (C, N)."""
    m = np.einsum("cnk,ck->cn", _design_matrix(systems), model.coef)
    bins = bin_index(m, model.edges)
    v = np.take_along_axis(model.bin_var, bins, axis=1)
    return m, v, bins


def binned_spread(
    residuals: NDArray[Any], bins: NDArray[Any], mask: NDArray[Any], n_bins: int = N_BINS
) -> NDArray[Any]:
    """Predicted squared spread E[u^2 | bin] of residuals u (C, N, T) from the responses in ``mask``: (C, N, T).

    The table of bin means (shrunk, :func:`binned_mean`) is looked up for every response; a campaign without a
    masked response gets spread 1 everywhere (uniform allocation).
    """
    table = binned_mean(residuals * residuals, bins, mask, n_bins)
    table = np.where(np.isfinite(table), table, 1.0)
    return np.take_along_axis(table, bins[..., None], axis=1)


def cross_fitted_predictions(
    systems: NDArray[Any], first: NDArray[Any], second: NDArray[Any], n_folds: int = 2
) -> NDArray[Any]:
    """Control variates f (C, d, N) of every moment, each response's from a model fitted without its fold.

    Response i is in fold i mod ``n_folds``; the model of fold k is fitted on the scores of the other folds and
    predicts the responses of fold k, scored or not. A response's prediction then does not depend on its own
    scores, so its residual is not shrunk by the fit (cross-prediction, Zrnic & Candès 2024b, "Cross-prediction-
    powered inference", PNAS 121(15); Chernozhukov et al. 2018 for cross-fitting): with an in-sample fit on few
    scores the binned variances absorb part of each scored response's squared residual, and the intervals of
    r and PRMSE under-cover.
    """
    c, n, k = systems.shape
    fold = np.arange(n) % n_folds
    out = np.empty((c, Layout(k).d, n))
    for j in range(n_folds):
        own = fold == j
        model = fit_model(systems, np.where(own, np.nan, first), np.where(own, np.nan, second))
        m, v, _ = predict(model, systems[:, own])
        out[:, :, own] = moment_predictions(systems[:, own], m, v, model.error_var)
    return out
