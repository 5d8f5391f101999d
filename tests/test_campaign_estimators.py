"""Campaign estimators (core.campaign.estimators): the plain metrics when every response is scored, unbiasedness
and coverage on a small simulation, invariants, degenerate and bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from easl_toolkit.core.campaign.estimators import (
    MIN_DOUBLE,
    NO_FIRST,
    NO_SECOND,
    UNDEFINED,
    Ratio,
    bootstrap_intervals,
    check_width,
    estimate,
    fieller,
    intervals,
    skewed_quantiles,
    t_quantile,
)
from easl_toolkit.core.campaign.model import fit_model, predict
from easl_toolkit.core.campaign.moments import moment_predictions, moment_terms, prmse_ratio
from easl_toolkit.core.metrics.estimates.observed import (
    pearson_r,
    quadratic_weighted_kappa,
    root_mean_squared_error,
    standardized_mean_difference,
)
from easl_toolkit.core.metrics.estimates.true_score import prmse, variance_of_errors

ALL = ("mean", "r", "qwk", "rmse", "smd", "prmse", "prmse_double", "prmse_combined", "hh_r", "hh_qwk")


def world(rng: np.random.Generator, c: int, n: int, error_sd: float = 0.6, system_sd: float = 0.4):
    """c campaigns of n responses on a 1-6 scale: (systems (c, n, 2), first, second)."""
    t = np.clip(rng.normal(3.8, 0.74, (c, n)), 1, 6)
    first = np.clip(np.round(t + rng.normal(0, error_sd, (c, n))), 1, 6)
    second = np.clip(np.round(t + rng.normal(0, error_sd, (c, n))), 1, 6)
    systems = np.stack([t + rng.normal(0, system_sd, (c, n)), t + rng.normal(0, 1.0, (c, n))], axis=-1)
    return systems, first, second


def test_every_metric_equals_the_plain_metric_when_every_response_is_scored_with_probability_one() -> None:
    systems, first, second = world(np.random.default_rng(1), 1, 400)
    one = np.ones_like(first)
    h1, h2 = first[0], second[0]
    ve = variance_of_errors(np.stack([h1, h2], axis=1))
    model = fit_model(systems, first, second)
    m, v, _ = predict(model, systems)
    for predictions in (None, moment_predictions(systems, m, v, model.error_var)):
        est = estimate(systems, first, second, one, one, predictions=predictions, metrics=ALL)
        for j in range(2):
            s = systems[0, :, j]
            expected = {
                ("r", j): pearson_r(h1, s),
                ("qwk", j): quadratic_weighted_kappa(h1, s),
                ("rmse", j): root_mean_squared_error(h1, s),
                ("smd", j): standardized_mean_difference(h1, s),
                ("prmse", j): prmse(s, h1[:, None], ve),
                ("prmse_double", j): prmse(s, np.stack([h1, h2], axis=1)),
            }
            for key, value in expected.items():
                assert est.value[0, est.index(*key)] == pytest.approx(value, rel=1e-9, abs=1e-12), key
            combined = est.value[0, est.index("prmse_combined", j)]
            mu = np.array([[np.mean(x) for x in moment_terms(systems, first, second)[0]]])
            parts = [[float(g(mu)[0]) for g in prmse_ratio(name, j, 2, 400)] for name in ("prmse", "prmse_double")]
            (a1, b1), (a2, b2) = parts
            assert 1 - max(a1, a2) / min(b1, b2) - 1e-12 <= combined <= 1 - min(a1, a2) / max(b1, b2) + 1e-12
        assert est.value[0, est.index("mean")] == pytest.approx(h1.mean(), rel=1e-12)
        assert est.value[0, est.index("hh_r")] == pytest.approx(pearson_r(h1, h2), rel=1e-9)
        assert est.value[0, est.index("hh_qwk")] == pytest.approx(quadratic_weighted_kappa(h1, h2), rel=1e-9)


def _campaigns(rng: np.random.Generator, c: int, n: int, p: float, q: float):
    systems, first, second = world(rng, c, n)
    take1 = rng.random((c, n)) < p
    take2 = take1 & (rng.random((c, n)) < q)
    pf, ps = np.full((c, n), p), np.full((c, n), p * q)
    return systems, np.where(take1, first, np.nan), np.where(take2, second, np.nan), pf, ps


def test_prediction_powered_estimates_are_unbiased_and_their_intervals_cover_on_a_small_simulation() -> None:
    rng = np.random.default_rng(7)
    big_systems, big_first, big_second = world(rng, 1, 400_000)
    one = np.ones_like(big_first)
    metrics = ("mean", "r", "qwk", "rmse", "prmse", "prmse_combined")
    truth = estimate(big_systems, big_first, big_second, one, one, metrics=metrics[:-1]).value[0]
    truth = np.append(truth, truth[-2:])  # PRMSE combined estimates the PRMSE of both systems
    model = fit_model(big_systems, big_first, big_second)
    systems, first, second, pf, ps = _campaigns(rng, 400, 1500, 0.3, 0.5)
    tiled = type(model)(*(np.repeat(a, 400, axis=0) for a in (model.coef, model.edges, model.bin_var, model.error_var)))
    m, v, _ = predict(tiled, systems)
    est = estimate(
        systems, first, second, pf, ps, predictions=moment_predictions(systems, m, v, tiled.error_var), metrics=metrics
    )
    err = est.value - truth
    assert (np.abs(err.mean(axis=0)) < 4 * err.std(axis=0) / np.sqrt(400)).all()
    coverage = ((est.low <= truth) & (truth <= est.high)).mean(axis=0)
    assert ((coverage > 0.91) & (coverage < 0.985)).all(), coverage
    classical = estimate(systems, first, second, pf, ps, metrics=metrics)
    assert est.width[:, 0].mean() < classical.width[:, 0].mean()


def test_without_human_scores_every_metric_is_nan_with_a_reason() -> None:
    systems, first, second = world(np.random.default_rng(2), 1, 50)
    nan = np.full_like(first, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = estimate(systems, nan, nan, np.ones_like(nan), np.ones_like(nan), metrics=ALL)
    assert np.isnan(est.value).all()
    assert set(est.reason.ravel()) == {NO_FIRST}


def test_without_second_scores_only_the_metrics_that_need_them_are_nan() -> None:
    systems, first, _ = world(np.random.default_rng(3), 1, 80)
    nan = np.full_like(first, np.nan)
    one = np.ones_like(first)
    est = estimate(systems, first, nan, one, one, metrics=("r", "prmse", "hh_r"))
    assert np.isfinite(est.value[0, est.index("r", 0)])
    assert est.reason[0, est.index("prmse", 0)] == NO_SECOND
    assert est.reason[0, est.index("hh_r")] == NO_SECOND


def test_constant_human_scores_give_nan_with_a_reason_not_a_crash() -> None:
    systems, first, second = world(np.random.default_rng(4), 1, 60)
    const = np.full_like(first, 3.0)
    one = np.ones_like(first)
    est = estimate(systems, const, second, one, one, metrics=("r", "smd", "mean"))
    assert np.isnan(est.value[0, est.index("r", 0)])
    assert est.reason[0, est.index("r", 0)] == UNDEFINED
    assert est.value[0, est.index("mean")] == 3.0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s, f, p: (np.where(np.arange(s.size).reshape(s.shape) == 5, np.inf, s), f, p), "not finite"),
        (lambda s, f, p: (np.where(np.arange(s.size).reshape(s.shape) == 5, np.nan, s), f, p), "not finite"),
        (lambda s, f, p: (s, f, np.where(np.arange(p.size).reshape(p.shape) == 3, 0.0, p)), r"in \(0, 1\]"),
        (lambda s, f, p: (s, f, np.where(np.arange(p.size).reshape(p.shape) == 3, 1.5, p)), r"in \(0, 1\]"),
        (lambda s, f, p: (s, np.where(np.arange(f.size).reshape(f.shape) == 2, np.inf, f), p), "infinite"),
    ],
)
def test_bad_input_raises_one_located_value_error(change, message) -> None:
    systems, first, second = world(np.random.default_rng(5), 1, 20)
    one = np.ones_like(first)
    s, f, p = change(systems, first, one)
    with pytest.raises(ValueError, match=message) as info:
        estimate(s, f, second, p, one)
    assert "campaign 0, response" in str(info.value)


@pytest.mark.parametrize("width", [0.0, -0.1, float("nan"), float("inf")])
def test_a_target_width_that_is_not_positive_raises_value_error(width: float) -> None:
    with pytest.raises(ValueError, match="positive"):
        check_width(width)


def test_an_unknown_metric_raises_value_error_naming_the_known_ones() -> None:
    systems, first, second = world(np.random.default_rng(6), 1, 20)
    one = np.ones_like(first)
    with pytest.raises(ValueError, match="unknown metric 'kappa'"):
        estimate(systems, first, second, one, one, metrics=("kappa",))


def test_the_weighted_bootstrap_interval_is_close_to_the_delta_method_interval() -> None:
    rng = np.random.default_rng(8)
    systems, first, second, pf, ps = _campaigns(rng, 1, 4000, 0.4, 0.5)
    est = estimate(systems, first, second, pf, ps, metrics=("mean", "r"))
    low, high = bootstrap_intervals(systems, first, second, pf, ps, rng=rng, metrics=("mean", "r"), n_boot=400)
    assert np.allclose(high - low, est.width, rtol=0.2)
    assert ((low < est.value) & (est.value < high)).all()


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    scale=st.floats(0.1, 10.0),
    offset=st.floats(-5.0, 5.0),
    p=st.floats(0.2, 1.0),
)
def test_r_is_invariant_to_affine_changes_of_the_system_scores_and_to_the_order_of_responses(
    seed: int, scale: float, offset: float, p: float
) -> None:
    rng = np.random.default_rng(seed)
    systems, first, second, pf, ps = _campaigns(rng, 1, 60, p, 1.0)
    if np.sum(~np.isnan(first)) < 3:
        return
    base = estimate(systems, first, second, pf, ps, metrics=("r", "mean")).value
    moved = estimate(systems * scale + offset, first, second, pf, ps, metrics=("r", "mean")).value
    order = rng.permutation(60)
    shuffled = estimate(
        systems[:, order], first[:, order], second[:, order], pf[:, order], ps[:, order], metrics=("r", "mean")
    ).value
    np.testing.assert_allclose(moved, base, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(shuffled, base, rtol=1e-9, atol=1e-12)


def test_with_fewer_than_fifty_responses_scored_twice_agreement_and_prmse_get_no_interval_but_a_reason() -> None:
    systems, first, second = world(np.random.default_rng(11), 1, 400)
    one = np.ones_like(first)
    few = np.where(np.arange(400) < MIN_DOUBLE - 1, second, np.nan)
    est = estimate(systems, first, few, one, one, metrics=("r", "prmse_combined", "hh_r", "hh_qwk"))
    for name, j in (("prmse_combined", 0), ("hh_r", None), ("hh_qwk", None)):
        t = est.index(name, j)
        assert np.isfinite(est.value[0, t]) and np.isnan(est.low[0, t]) and np.isnan(est.high[0, t])
        assert f"{MIN_DOUBLE - 1} responses scored twice" in est.reason[0, t] and str(MIN_DOUBLE) in est.reason[0, t]
    assert np.isfinite(est.width[0, est.index("r", 0)]) and est.reason[0, est.index("r", 0)] == ""
    enough = np.where(np.arange(400) < MIN_DOUBLE, second, np.nan)
    est = estimate(systems, first, enough, one, one, metrics=("hh_r",))
    assert np.isfinite(est.width).all() and (est.n == MIN_DOUBLE).all()


def test_correlation_intervals_stay_within_minus_one_and_one_and_rmse_intervals_stay_positive() -> None:
    rng = np.random.default_rng(12)
    t = rng.normal(0, 1, (200, 30))
    first, second = t + rng.normal(0, 0.1, t.shape), t + rng.normal(0, 0.1, t.shape)
    systems = (t + rng.normal(0, 0.05, t.shape))[..., None]
    one = np.ones_like(first)
    est = estimate(systems, first, second, one, one, metrics=("r", "qwk", "rmse"))
    for name in ("r", "qwk"):
        col = est.index(name, 0)
        assert (est.high[:, col] <= 1.0).all() and (est.low[:, col] >= -1.0).all()
        assert ((est.high[:, col] - est.value[:, col]) < (est.value[:, col] - est.low[:, col])).all()
    assert (est.low[:, est.index("rmse", 0)] > 0).all()


@pytest.mark.parametrize("df", [5, 10, 30, 100, 1000])
def test_the_t_quantile_agrees_with_scipy(df: int) -> None:
    from scipy.stats import t

    assert t_quantile(np.array(float(df))) == pytest.approx(t.ppf(0.975, df), abs=3e-4)


def test_fiellers_interval_solves_its_quadratic_and_is_unbounded_where_the_denominator_is_not_clearly_positive():
    rng = np.random.default_rng(13)
    za, zb = rng.normal(0, 1, (2, 1, 400))
    q = np.array([1.96])
    n = za.shape[1]
    v_aa, v_ab, v_bb = (np.cov(za[0], zb[0])[i, j] / n for i, j in ((0, 0), (0, 1), (1, 1)))
    ratio = Ratio(a=np.array([0.5]), b=np.array([1.0]), za=za, zb=zb)
    low, high = fieller(ratio, q)
    for rho in (low[0], high[0]):
        assert (0.5 - rho) ** 2 == pytest.approx(1.96**2 * (v_aa - 2 * rho * v_ab + rho**2 * v_bb), rel=1e-9)
    assert low[0] < 0.5 < high[0]
    far = Ratio(a=np.array([0.5]), b=np.array([0.05]), za=za, zb=zb)  # B within 2 se of 0: no bounded interval
    assert np.isnan(fieller(far, q)).all()


@settings(max_examples=40, deadline=None)
@given(gamma=st.floats(-0.8, 0.8), x=st.floats(-4.0, 4.0))
def test_halls_quantiles_invert_his_monotone_transformation(gamma: float, x: float) -> None:
    lower, upper = skewed_quantiles(np.array([x]), np.array([gamma]))
    a, b = gamma / 3.0, gamma / 6.0
    for t_value, target in ((upper[0], x), (lower[0], -x)):
        assert t_value + a * t_value**2 + a * a * t_value**3 / 3.0 + b == pytest.approx(target, abs=1e-9)


def test_without_skewness_halls_quantiles_are_the_symmetric_t_quantiles() -> None:
    q = t_quantile(np.array([8.0, 40.0, np.inf]))
    lower, upper = skewed_quantiles(q, np.zeros(3))
    np.testing.assert_allclose(lower, -q, rtol=1e-12)
    np.testing.assert_allclose(upper, q, rtol=1e-12)
    lower, upper = skewed_quantiles(q, np.full(3, 0.2))
    assert (-lower > q).all() and (upper < q).all()  # a long right tail: the interval reaches further up


def test_only_the_rmse_interval_depends_on_the_skewness_of_its_terms() -> None:
    labels = (("mean", None), ("r", 0), ("qwk", 0), ("rmse", 0), ("smd", 0), ("hh_r", None))
    value = np.array([[3.5, 0.6, 0.55, 0.8, 0.1, 0.5]])
    se = np.full((1, 6), 0.05)
    df = np.full((1, 6), 50.0)
    plain = intervals(value, se, labels, df)
    skewed = intervals(value, se, labels, df, np.full((1, 6), 0.3))
    same = [t for t, (name, _) in enumerate(labels) if name != "rmse"]
    for a, b in zip(plain, skewed, strict=True):
        np.testing.assert_allclose(a[:, same], b[:, same], rtol=1e-12)
    rmse = labels.index(("rmse", 0))
    assert skewed[0][0, rmse] > plain[0][0, rmse] and skewed[1][0, rmse] > plain[1][0, rmse]
    assert np.log(skewed[1][0, rmse] / 0.8) > np.log(0.8 / skewed[0][0, rmse])


def test_rmse_intervals_cover_on_both_sides_when_the_squared_errors_are_heavy_tailed() -> None:
    rng = np.random.default_rng(14)

    def draw(shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        t = rng.normal(0, 1, shape)
        return t + rng.exponential(1.0, shape), (0.6 * t + rng.normal(0, 1, shape))[..., None]

    first, systems = draw((3000, 60))
    big_first, big_systems = draw((1, 400_000))
    one = np.ones_like(big_first)
    truth = estimate(big_systems, big_first, big_first, one, one, metrics=("rmse",)).value[0, 0]
    nan = np.full_like(first, np.nan)
    est = estimate(systems, first, nan, np.ones_like(first), np.ones_like(first), metrics=("rmse",))
    below, above = (est.high[:, 0] < truth).mean(), (est.low[:, 0] > truth).mean()
    assert 0.93 <= 1.0 - below - above <= 0.97
    assert below < 0.04 and above < 0.04, (below, above)  # the symmetric log-scale interval misses below 5%


def test_the_standard_error_of_r_and_human_human_agreement_is_the_delete_one_jackknifes() -> None:
    systems, first, second = world(np.random.default_rng(15), 1, 40)
    one = np.ones_like(first)
    est = estimate(systems, first, second, one, one, metrics=("r", "qwk", "hh_r", "mean"))
    h1, h2, s = first[0], second[0], systems[0, :, 0]
    keep = ~np.eye(40, dtype=bool)
    for label, metric, x, y in (
        (("r", 0), pearson_r, h1, s),
        (("qwk", 0), quadratic_weighted_kappa, h1, s),
        (("hh_r", None), pearson_r, h1, h2),
    ):
        loo = np.array([metric(x[k], y[k]) for k in keep])
        jackknife = np.sqrt(39 / 40 * np.sum((loo - loo.mean()) ** 2))
        assert est.se[0, est.index(*label)] == pytest.approx(jackknife, rel=1e-6), label
    assert est.se[0, est.index("mean")] == pytest.approx(np.std(h1, ddof=1) / np.sqrt(40), rel=1e-9)


def test_the_classical_standard_error_of_the_mean_is_the_textbook_one_of_the_scored_responses() -> None:
    rng = np.random.default_rng(16)
    systems, first, second, pf, ps = _campaigns(rng, 3, 500, 0.2, 0.5)
    est = estimate(systems, first, second, pf, ps, metrics=("mean", "hh_r"))
    for c in range(3):
        scored = first[c][~np.isnan(first[c])]
        textbook = np.std(scored, ddof=1) / np.sqrt(scored.size)
        assert est.se[c, est.index("mean")] == pytest.approx(textbook, rel=1e-9)
        assert est.n[c, est.index("hh_r")] == np.sum(~np.isnan(second[c]))


def test_predictions_that_know_nothing_leave_the_standard_errors_about_as_classical_ones() -> None:
    # lambda = 0 is the classical estimate (every moment, the system's too, from the scored responses), so the power
    # tuning can fall back on it; taking the system moments from all responses whatever lambda is made RMSE's and
    # PRMSE's standard errors about 1.4 times the classical ones here
    rng = np.random.default_rng(21)
    systems, first, second, pf, ps = _campaigns(rng, 100, 600, 0.15, 0.5)
    m = np.broadcast_to(np.nanmean(first, axis=1, keepdims=True), first.shape)  # the same for every response
    v = np.broadcast_to(np.nanvar(first, axis=1, keepdims=True), first.shape)
    metrics = ("mean", "rmse", "smd", "prmse")
    tuned = estimate(
        systems, first, second, pf, ps, predictions=moment_predictions(systems, m, v, 0.3), metrics=metrics
    )
    classical = estimate(systems, first, second, pf, ps, metrics=metrics)
    ratio = np.median(tuned.se / classical.se, axis=0)
    assert (ratio < 1.05).all(), dict(zip(tuned.labels, ratio.round(3), strict=True))
