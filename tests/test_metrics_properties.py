"""Property tests (hypothesis) of the evaluation library: invariances, chance level, reductions, identities."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import easl_toolkit.core.metrics as M
from easl_toolkit.core.metrics.bootstrap import resample_chunks
from easl_toolkit.core.metrics.estimates.true_score import TrueScoreTotals, finish_true_score, true_score_sums
from easl_toolkit.core.metrics.notes import quiet

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
WEIGHTS = ("identity", "linear", "quadratic")
seeds = st.integers(0, 2**32 - 1)


def rated_matrix(seed, n, q, raters, p_missing=0.3):
    """Integer ratings 1..q for n subjects x raters, some missing; every subject keeps >= 1 rating."""
    rng = np.random.default_rng(seed)
    h = rng.integers(1, q + 1, size=(n, raters)).astype(float)
    miss = rng.random((n, raters)) < p_missing
    miss[:, 0] = False
    h[miss] = np.nan
    return h


def family(h, q, w):
    return quiet(M.chance_corrected_agreement, h, np.arange(1, q + 1), weights=w)


@SETTINGS
@given(seed=seeds, q=st.integers(2, 6), raters=st.integers(2, 4), w=st.sampled_from(WEIGHTS))
def test_row_and_rater_order_invariance(seed, q, raters, w):
    h = rated_matrix(seed, 40, q, raters)
    rng = np.random.default_rng(seed + 1)
    perm_rows = rng.permutation(h.shape[0])
    perm_cols = rng.permutation(h.shape[1])
    a = family(h, q, w)
    b = family(h[perm_rows][:, perm_cols], q, w)
    for key in a:
        assert np.isclose(a[key], b[key], rtol=0, atol=1e-12, equal_nan=True), key
    for level in ("nominal", "ordinal", "interval", "ratio"):
        x = quiet(M.krippendorff_alpha, h, level=level)
        y = quiet(M.krippendorff_alpha, h[perm_rows][:, perm_cols], level=level)
        assert np.isclose(x, y, rtol=0, atol=1e-12, equal_nan=True)
    m = h[:, 0] + rng.normal(0, 1, h.shape[0])
    for f in (
        M.pearson_r,
        M.quadratic_weighted_kappa,
        M.r2_score,
        M.spearman_rho,
        M.kendall_tau_b,
        M.standardized_mean_difference,
        M.mean_squared_error,
    ):
        assert np.isclose(
            quiet(f, h[:, 0], m), quiet(f, h[perm_rows, 0], m[perm_rows]), rtol=0, atol=1e-12, equal_nan=True
        )
    # PRMSE divides by an estimated variance that can be near 0 here: compare relatively
    assert np.isclose(
        quiet(M.prmse, m, h),
        quiet(M.prmse, m[perm_rows], h[perm_rows][:, perm_cols]),
        rtol=1e-9,
        atol=1e-12,
        equal_nan=True,
    )


@settings(max_examples=8, deadline=None)
@given(seed=seeds, q=st.integers(2, 6), raters=st.integers(2, 3), w=st.sampled_from(WEIGHTS))
def test_independent_uniform_ratings_give_zero(seed, q, raters, w):
    """Chance correction works for every weight family (a library that drops the weights from pe fails this)."""
    h = rated_matrix(seed, 20_000, q, raters, p_missing=0.2)
    res = family(h, q, w)
    for key in ("gwet", "bp", "fleiss", "conger", "krippendorff"):
        assert abs(res[key]) < 0.05, (key, res[key])
    if w == "identity":
        assert abs(M.krippendorff_alpha(h, level="nominal")) < 0.05
    if w == "quadratic":
        assert abs(M.krippendorff_alpha(h, level="interval")) < 0.05
        assert abs(M.krippendorff_alpha(h, level="ordinal")) < 0.05


@SETTINGS
@given(seed=seeds, n=st.integers(3, 200))
def test_prmse_all_double_scored_equals_simple_formula(seed, n):
    rng = np.random.default_rng(seed)
    t = rng.normal(0, 1, n)
    h1, h2 = t + rng.normal(0, 0.5, n), t + rng.normal(0, 0.5, n)
    m = t + rng.normal(0, 0.7, n)
    hbar = (h1 + h2) / 2
    ve = np.mean((h1 - h2) ** 2) / 2
    var_t = np.var(hbar, ddof=1) - ve / 2
    mse_t = np.mean((hbar - m) ** 2) - ve / 2
    h = np.column_stack([h1, h2])
    assert np.isclose(M.variance_of_errors(h), ve, rtol=1e-10, atol=1e-12)
    assert np.isclose(quiet(M.true_score_variance, h), var_t, rtol=1e-9, atol=1e-12)
    assert np.isclose(M.mse_true(m, h), mse_t, rtol=1e-9, atol=1e-12)
    if var_t > 1e-6:
        assert np.isclose(M.prmse(m, h), 1 - mse_t / var_t, rtol=1e-9, atol=1e-10)


@SETTINGS
@given(seed=seeds, n=st.integers(2, 300), lo=st.integers(-3, 3), span=st.integers(1, 8))
def test_quadratic_kappa_on_integers_equals_continuous_qwk(seed, n, lo, span):
    rng = np.random.default_rng(seed)
    a = rng.integers(lo, lo + span + 1, n).astype(float)
    b = np.clip(a + rng.integers(-2, 3, n), lo, lo + span)
    qwk = quiet(M.quadratic_weighted_kappa, a, b)
    kap = quiet(M.cohen_kappa, a, b, weights="quadratic")
    if np.isfinite(qwk) and (np.unique(a).size > 1 or np.unique(b).size > 1):
        assert np.isclose(kap, qwk, rtol=0, atol=1e-10)
    # and the two-rater Conger kappa with quadratic weights is the same number
    cats = np.arange(lo, lo + span + 1)
    if np.isfinite(qwk) and np.unique(np.concatenate([a, b])).size > 1:
        assert np.isclose(quiet(M.conger_kappa, np.column_stack([a, b]), cats, weights="quadratic"), qwk, atol=1e-10)


@SETTINGS
@given(seed=seeds, q=st.integers(2, 7), raters=st.integers(2, 5), w=st.sampled_from(WEIGHTS))
def test_perfect_agreement_gives_one(seed, q, raters, w):
    rng = np.random.default_rng(seed)
    col = rng.integers(1, q + 1, 30).astype(float)
    col[:2] = [1, q]  # at least two categories in use
    h = np.repeat(col[:, None], raters, axis=1)
    res = family(h, q, w)
    for key in ("gwet", "bp", "fleiss", "conger", "krippendorff", "pa"):
        assert np.isclose(res[key], 1.0, atol=1e-12), key
    for level in ("nominal", "ordinal", "interval", "ratio"):
        assert np.isclose(M.krippendorff_alpha(h, level=level), 1.0, atol=1e-12)
    for f in (M.pearson_r, M.spearman_rho, M.kendall_tau_b, M.quadratic_weighted_kappa, M.r2_score):
        assert np.isclose(f(col, col), 1.0, atol=1e-12)
    for weights in (None, "linear", "quadratic"):
        assert M.cohen_kappa(col, col, weights=weights) == 1.0


@SETTINGS
@given(seed=seeds, raters=st.integers(2, 4))
def test_interval_alpha_moment_form_equals_table_form(seed, raters):
    """The O(N x raters) interval/ordinal alpha agrees with the coincidence-matrix definition on categories."""
    h = rated_matrix(seed, 60, 5, raters, p_missing=0.4)
    cats = np.arange(1, 6)
    assert np.isclose(
        quiet(M.krippendorff_alpha, h, level="interval"),
        quiet(M.chance_corrected_agreement, h, cats, weights="quadratic")["krippendorff"],
        atol=1e-12,
        equal_nan=True,
    )
    assert np.isclose(
        quiet(M.krippendorff_alpha, h, level="nominal"),
        quiet(M.chance_corrected_agreement, h, cats, weights="identity")["krippendorff"],
        atol=1e-12,
        equal_nan=True,
    )


@SETTINGS
@given(seed=seeds, n=st.integers(5, 80))
def test_vectorised_bootstrap_equals_recomputation(seed, n):
    """A resample evaluated through count weights equals the metric recomputed on the resampled rows."""
    rng = np.random.default_rng(seed)
    t = rng.normal(0, 1, n)
    h = np.column_stack([t + rng.normal(0, 0.5, n), np.where(rng.random(n) < 0.6, t + rng.normal(0, 0.5, n), np.nan)])
    h[0, 1] = h[0, 0] + 0.3
    m = t + rng.normal(0, 0.5, n)
    sums, _ = true_score_sums(h, m)
    index, counts = next(resample_chunks(n, 3, np.random.default_rng(seed)))
    batch = quiet(finish_true_score, TrueScoreTotals.of(sums.totals(counts)))["prmse"]
    for b in range(3):
        direct = quiet(M.prmse, m[index[b]], h[index[b]])
        assert np.isclose(batch[b], direct, rtol=1e-9, atol=1e-9, equal_nan=True)


def test_unused_categories_change_gwet_but_not_krippendorff():
    h = rated_matrix(3, 50, 4, 2)
    a = M.chance_corrected_agreement(h, np.arange(1, 5))
    b = M.chance_corrected_agreement(h, np.arange(1, 7))
    assert a["krippendorff"] == pytest.approx(b["krippendorff"], abs=1e-12)
    assert a["fleiss"] == pytest.approx(b["fleiss"], abs=1e-12)
    assert a["gwet"] != pytest.approx(b["gwet"], abs=1e-6)


@SETTINGS
@given(seed=seeds, q=st.integers(1, 6), raters=st.integers(1, 4), p_missing=st.sampled_from([0.0, 0.4]))
def test_direct_totals_equal_row_sums(seed, q, raters, p_missing):
    """The fast point-estimate tables equal the bootstrap machinery's sums."""
    from easl_toolkit.core.metrics.data import category_index
    from easl_toolkit.core.metrics.estimates.agreement_totals import agreement_sums, agreement_totals

    h = rated_matrix(seed, 30, q, raters, p_missing)
    idx = category_index(h, np.arange(1, q + 1))
    a = agreement_totals(idx, q)
    b = agreement_sums(idx, q).totals()
    assert a.keys() == b.keys()
    for key in a:
        assert np.allclose(a[key], b[key], rtol=0, atol=1e-12), key


@SETTINGS
@given(seed=seeds, n=st.integers(1, 300), integer=st.booleans())
def test_midranks_equal_scipy(seed, n, integer):
    from scipy.stats import rankdata

    from easl_toolkit.core.metrics.estimates.association import midranks

    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, n).astype(float) if integer else np.round(rng.normal(size=n), 1)
    assert np.allclose(midranks(x), rankdata(x), rtol=0, atol=1e-12)


@SETTINGS
@given(seed=seeds, n=st.integers(1, 60), ties=st.booleans())
def test_resampled_spearman_equals_recomputation(seed, n, ties):
    from easl_toolkit.core.metrics.estimates.association import spearman_rho_resampled

    rng = np.random.default_rng(seed)
    a = rng.integers(1, 4, n).astype(float) if ties else rng.normal(size=n)
    b = a + rng.normal(0, 1, n) if not ties else rng.integers(1, 3, n).astype(float)
    index, counts = next(resample_chunks(n, 6, np.random.default_rng(seed)))
    fast = spearman_rho_resampled(a, b, counts)
    for k in range(index.shape[0]):
        direct = quiet(M.spearman_rho, a[index[k]], b[index[k]])
        assert np.isclose(fast[k], direct, rtol=0, atol=1e-9, equal_nan=True), (k, fast[k], direct)
