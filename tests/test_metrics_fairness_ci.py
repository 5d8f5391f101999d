"""Bootstrap intervals of the fairness analyses (OSA, OSD, CSD): batched resampling against a plain per-resample
recomputation, coverage of the point estimate, reproducibility, width, degenerate inputs, and the pipeline."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import easl_toolkit.core.metrics as M
from easl_toolkit.core.metrics.bootstrap import percentile_interval, resample_chunks
from easl_toolkit.core.metrics.estimates.fairness import FAIRNESS_KEYS, fairness_analysis
from easl_toolkit.core.metrics.estimates.fairness_resampled import fairness_design, fairness_resampled
from easl_toolkit.core.metrics.notes import capture, quiet
from easl_toolkit.core.metrics.options import EvaluationOptions


def biased_data(n, seed=0, shift=0.6):
    """Human scores 1-5, a system that over-scores group "b" by ``shift``: a clear fairness effect."""
    rng = np.random.default_rng(seed)
    t = rng.normal(3, 1, n)
    h = np.clip(np.round(t + rng.normal(0, 0.5, n)), 1, 5)
    g = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    m = t + rng.normal(0, 0.5, n) + shift * (g == "b") + 0.8 * (g == "c") * rng.normal(0, 1, n)
    return h, m, g


def per_resample(h, m, g, index):
    """The plain recomputation: fairness_analysis on every resample's rows."""
    rows = [quiet(fairness_analysis, h[i], m[i], g[i]) for i in index]
    return {k: np.array([r[k]["value"] for r in rows]) for k in FAIRNESS_KEYS}


def assert_same(batched, plain):
    for k in FAIRNESS_KEYS:
        np.testing.assert_array_equal(np.isnan(batched[k]), np.isnan(plain[k]), err_msg=k)
        # atol 1e-7: in a resample whose groups explain the error exactly (R2 = 1), the batched path's residual
        # sum of squares is a difference of moment sums, exact to ~1e-9 of the total (n=4, seed 66933989: 5.8e-9)
        np.testing.assert_allclose(batched[k], plain[k], rtol=0, atol=1e-7, equal_nan=True, err_msg=k)


def test_counts_of_ones_give_the_point_estimate():
    h, m, g = biased_data(120, seed=1)
    fa = fairness_analysis(h, m, g)
    one = fairness_resampled(h, m, g, np.ones((1, h.size)))
    for k in FAIRNESS_KEYS:
        assert one[k][0] == pytest.approx(fa[k]["value"], abs=1e-12)


def test_batched_resamples_equal_plain_recomputation():
    h, m, g = biased_data(40, seed=2)
    index, counts = next(resample_chunks(h.size, 60, np.random.default_rng(7)))
    assert_same(quiet(fairness_resampled, h, m, g, counts), per_resample(h, m, g, index))


@settings(max_examples=40, deadline=None)
@given(st.integers(4, 18), st.integers(2, 4), st.booleans(), st.integers(0, 2**32 - 1))
def test_property_batched_equals_plain(n, k_groups, integer_system, seed):
    rng = np.random.default_rng(seed)
    h = rng.integers(1, 5, n).astype(np.float64)
    m = h + (rng.integers(-1, 2, n) if integer_system else rng.normal(0, 1, n))
    k = min(k_groups, n // 2)
    names = np.array([f"g{j}" for j in range(k)])
    g = rng.choice(names, n)
    g[: 2 * k] = np.repeat(names, 2)  # every group at least twice (no design problem); resamples may lose one
    index, counts = next(resample_chunks(n, 25, rng))
    assert_same(quiet(fairness_resampled, h, m, g, counts), per_resample(h, m, g, index))


def test_chunking_does_not_change_the_values(monkeypatch):
    import easl_toolkit.core.metrics.estimates.fairness_resampled as F

    h, m, g = biased_data(50, seed=3)
    _, counts = next(resample_chunks(h.size, 30, np.random.default_rng(0)))
    whole = fairness_resampled(h, m, g, counts)
    monkeypatch.setattr(F, "SUBCHUNK_ENTRIES", 7 * h.size)  # sub-chunks of 7 resamples
    for k, v in fairness_resampled(h, m, g, counts).items():
        np.testing.assert_array_equal(v, whole[k])


def test_intervals_contain_the_point_estimate():
    h, m, g = biased_data(600, seed=4)
    res = M.bootstrap_fairness(h, m, g, n_resamples=400, seed=11)
    assert res["reasons"] == {}
    for k in FAIRNESS_KEYS:
        lo, hi = res["ci"][k]
        assert lo < res["point"][k]["value"] < hi, k
        assert res["samples"][k].shape == (400,)


def test_reproducible_by_seed():
    h, m, g = biased_data(150, seed=5)
    a = M.bootstrap_fairness(h, m, g, n_resamples=100, seed=3)
    b = M.bootstrap_fairness(h, m, g, n_resamples=100, seed=3)
    c = M.bootstrap_fairness(h, m, g, n_resamples=100, seed=4)
    for k in FAIRNESS_KEYS:
        np.testing.assert_array_equal(a["samples"][k], b["samples"][k])
        assert a["ci"][k] == b["ci"][k]
        assert not np.array_equal(a["samples"][k], c["samples"][k])


def test_intervals_widen_with_fewer_responses():
    h, m, g = biased_data(1600, seed=6)
    big = M.bootstrap_fairness(h, m, g, n_resamples=300, seed=1)
    small = M.bootstrap_fairness(h[:200], m[:200], g[:200], n_resamples=300, seed=1)
    for k in FAIRNESS_KEYS:
        width = lambda r, k=k: r["ci"][k][1] - r["ci"][k][0]  # noqa: E731
        assert width(small) > 1.5 * width(big), k


@pytest.mark.parametrize("case", ["one_group", "singleton_group", "constant_errors", "two_responses"])
def test_degenerate_inputs_give_nan_with_a_reason(case):
    h, m, g = biased_data(30, seed=7)
    if case == "one_group":
        g = np.full(h.size, "a")
    elif case == "singleton_group":
        g = np.where(np.arange(h.size) == 0, "z", g)
    elif case == "constant_errors":
        m = h + 0.3  # errors equal up to float rounding
    else:
        h, m, g = h[:2], m[:2], np.array(["a", "b"])
    res, _, _ = capture(M.bootstrap_fairness, h, m, g, n_resamples=50, seed=0)
    for k in FAIRNESS_KEYS:
        assert all(np.isnan(res["ci"][k]))
        assert isinstance(res["reasons"][k], str) and res["reasons"][k]
    if case == "singleton_group":
        assert "z has 1" in res["reasons"]["osa"]
        assert np.isfinite(res["point"]["osa"]["value"])  # the point estimate itself stays defined


def test_constant_errors_point_estimate_is_nan_not_rounding_noise():
    h = np.array([1, 2, 3, 1, 2, 3, 2, 2.0])
    fa, why, _ = capture(fairness_analysis, h, h + 0.3, list("aabbabab"))
    assert all(np.isnan(fa[k]["value"]) and np.isnan(fa[k]["p_value"]) for k in FAIRNESS_KEYS)
    assert why


def test_design_problem_and_resampled_warns():
    h, m, _ = biased_data(10, seed=8)
    assert fairness_design(h, m, np.full(10, "x")).problem
    with pytest.warns(M.UndefinedMetricWarning):
        out = fairness_resampled(h, m, np.full(10, "x"), np.ones((2, 10)))
    assert all(np.isnan(v).all() for v in out.values())


def test_evaluate_fairness_ci_uses_the_shared_resamples():
    """The pipeline's fairness intervals are the percentiles of fairness_analysis recomputed on the very resamples
    of the evaluation (the same seeded draws as every other metric's interval)."""
    h, m, g = biased_data(60, seed=9)
    human = np.column_stack([h, np.where(np.arange(60) % 2, h, np.nan)])
    ev = M.evaluate(
        human,
        {"sys": m},
        groups=g,
        group_name="G",
        options=EvaluationOptions(scale=M.Scale(1, 5), n_bootstrap=40, seed=13),
    )
    fj = ev.to_json()["fairness"]["G"]["sys"]
    index = np.concatenate([i for i, _ in resample_chunks(60, 40, np.random.default_rng(13))])
    plain = per_resample(h, m, g, index)
    for k in FAIRNESS_KEYS:
        assert fj["ci"][k] == pytest.approx(list(percentile_interval(plain[k])), abs=1e-9)
    lib = M.bootstrap_fairness(h, m, g, n_resamples=40, seed=13)
    assert [list(lib["ci"][k]) for k in FAIRNESS_KEYS] == [fj["ci"][k] for k in FAIRNESS_KEYS]
    # the PRMSE interval of the same evaluation comes from the same draws: recompute it on those rows
    prmse = [quiet(M.prmse, m[i], human[i]) for i in index]
    assert ev.to_json()["systems"]["sys"]["ci"]["prmse"] == pytest.approx(
        list(percentile_interval(np.array(prmse))), abs=1e-9
    )
    table = ev.tables["fairness_G"]
    assert {"ci_low", "ci_high", "ci_reason"} <= set(table.columns)
    assert table.loc[0, "ci_low"] == pytest.approx(fj["ci"]["osa"][0])


def test_evaluate_fairness_ci_reasons_and_no_bootstrap():
    h, m, g = biased_data(30, seed=10)
    g = np.where(np.arange(30) == 0, "solo", g)
    ev = M.evaluate(
        h, {"sys": m}, groups=g, group_name="G", options=EvaluationOptions(scale=M.Scale(1, 5), n_bootstrap=20, seed=0)
    )
    fj = ev.to_json()["fairness"]["G"]["sys"]
    assert fj["ci"]["csd"] == [None, None] and "solo has 1" in fj["ci_reason"]["csd"]
    assert ev.tables["fairness_G"]["ci_reason"].str.contains("solo has 1").all()
    ev0 = M.evaluate(h, {"sys": m}, groups=g, group_name="G", options=EvaluationOptions(scale=M.Scale(1, 5)))
    assert ev0.to_json()["fairness"]["G"]["sys"]["ci"] == {}
    assert "ci_low" not in ev0.tables["fairness_G"].columns
