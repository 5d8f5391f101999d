"""Degenerate inputs give NaN with a stated reason (UndefinedMetricWarning), never an exception or a silent number."""

import json
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import easl_toolkit.core.metrics as M
from easl_toolkit.core.metrics.notes import capture
from easl_toolkit.core.metrics.options import EvaluationOptions
from easl_toolkit.core.metrics.report import to_json_text

nan = np.nan


def reason_of(func, *args, **kwargs):
    value, reasons, _ = capture(func, *args, **kwargs)
    return value, reasons


@pytest.mark.parametrize("func", [M.pearson_r, M.spearman_rho, M.kendall_tau_b])
def test_constant_scores_correlations(func):
    value, why = reason_of(func, [1, 2, 3, 4], [2, 2, 2, 2])
    assert np.isnan(value) and "constant" in why[0]


@pytest.mark.parametrize(
    "func", [M.pearson_r, M.spearman_rho, M.kendall_tau_b, M.r2_score, M.standardized_mean_difference]
)
def test_one_response(func):
    value, why = reason_of(func, [3.0], [2.0])
    assert np.isnan(value) and why and "2 responses" in why[0]


def test_one_response_metrics_that_are_defined():
    assert M.mean_squared_error([3.0], [2.0]) == 1.0
    assert M.exact_agreement([3.0], [3.0]) == 100.0


def test_constant_human_r2_and_smd():
    for func in (M.r2_score, M.standardized_mean_difference):
        value, why = reason_of(func, [2, 2, 2], [1, 2, 3])
        assert np.isnan(value) and "constant" in why[0]


def test_no_double_scored_response():
    h = np.column_stack([[1, 2, 3, 4], [nan] * 4])
    for func, args in (
        (M.variance_of_errors, (h,)),
        (M.prmse, ([1, 2, 3, 4], h)),
        (M.true_score_variance, (h,)),
        (M.mse_true, ([1, 2, 3, 4], h)),
    ):
        value, why = reason_of(func, *args)
        assert np.isnan(value) and "two or more ratings" in why[0]
    value, why = reason_of(M.gwet_ac, h, [1, 2, 3, 4])
    assert np.isnan(value) and "two ratings" in why[0]
    value, why = reason_of(M.krippendorff_alpha, h, level="interval")
    assert np.isnan(value) and "two values" in why[0]


def test_all_missing_row_is_ignored():
    h = np.array([[1, 2], [nan, nan], [3, 3], [2, 1]], dtype=float)
    without = np.delete(h, 1, axis=0)
    assert M.gwet_ac(h, [1, 2, 3]) == pytest.approx(M.gwet_ac(without, [1, 2, 3]))
    assert M.krippendorff_alpha(h) == pytest.approx(M.krippendorff_alpha(without))
    assert M.variance_of_errors(h) == pytest.approx(M.variance_of_errors(without))
    m = np.array([1.0, 9.0, 3.0, 2.0])
    assert M.prmse(m, h) == pytest.approx(M.prmse(np.delete(m, 1), without))


def test_single_category_in_use():
    h = np.full((5, 2), 2.0)
    res, why, _ = capture(M.chance_corrected_agreement, h, [1, 2, 3])
    assert res["pa"] == 1.0
    assert np.isnan(res["fleiss"]) and np.isnan(res["krippendorff"]) and np.isnan(res["conger"])
    assert res["gwet"] == 1.0  # Gwet's AC is defined here (pe = 0): the paradox it was designed for
    assert any("chance agreement is 1" in w for w in why)


def test_gwet_with_one_category_scale():
    value, why = reason_of(M.gwet_ac, np.full((3, 2), 1.0), [1])
    assert np.isnan(value) and "2 categories" in why[0]


def test_prmse_nonpositive_true_variance():
    h = np.column_stack([[1, 2, 1, 2], [2, 1, 2, 1]])  # all variance is rater error
    value, why = reason_of(M.prmse, [1, 2, 3, 4], h)
    assert np.isnan(value) and "not positive" in why[0]


def test_values_outside_categories_are_a_usage_error():
    with pytest.raises(ValueError, match="not one of the categories"):
        M.gwet_ac(np.column_stack([[1, 2.5], [1, 2]]), [1, 2, 3])


def test_sample_size_warnings_are_warnings_not_errors():
    rng = np.random.default_rng(0)
    t = rng.normal(0, 1, 50)
    h = np.column_stack([t + rng.normal(0, 0.3, 50), t + rng.normal(0, 0.3, 50)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rec = M.true_score_evaluation(t, h)
    assert np.isfinite(rec["prmse"]) and rec["N_multiple"] == 50
    assert any(issubclass(w.category, M.SampleSizeWarning) and "500" in str(w.message) for w in caught)


def test_prmse_above_one_is_flagged():
    h = np.column_stack([[1.0, 2, 3, 4, 5, 6], [1.1, 2.2, 2.9, 4.1, 5.2, 5.9]])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rec = M.true_score_evaluation(h.mean(axis=1), h)
    assert rec["prmse"] > 1
    assert any("> 1" in str(w.message) for w in caught)


def test_evaluate_degenerate_data_gives_null_with_reason():
    h = np.column_stack([[1, 2, 3], [nan, nan, nan]])
    ev = M.evaluate(h, {"const": [2.0, 2.0, 2.0]}, options=EvaluationOptions(scale=M.Scale(1, 3), n_bootstrap=20))
    obs = ev.to_json()["systems"]["const"]["observed"]
    assert obs["corr"] is None and "constant" in obs["corr_reason"]
    ts = ev.to_json()["systems"]["const"]["true_score"]
    assert ts["prmse"] is None and "two or more ratings" in ts["prmse_reason"]
    assert ev.to_json()["human_human"]["N"] == 0 and ev.to_json()["human_human"]["corr"] is None
    json.loads(to_json_text(ev.to_json()))  # strict JSON (no NaN)


def test_evaluate_one_response():
    ev = M.evaluate(
        np.array([[2.0, 3.0]]), {"s": [2.4]}, options=EvaluationOptions(scale=M.Scale(1, 4), n_bootstrap=10)
    )
    text = to_json_text(ev.to_json())
    data = json.loads(text)
    assert data["n_responses"] == 1
    assert data["systems"]["s"]["observed"]["corr"] is None
    assert data["systems"]["s"]["observed"]["exact_agr"] == 100.0
    assert any("bootstrap skipped" in n for n in data["notes"])


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 6),
    raters=st.integers(1, 3),
    p_missing=st.sampled_from([0.0, 0.5, 0.9]),
    constant=st.booleans(),
    boot=st.sampled_from([0, 7]),
)
def test_evaluate_never_raises_on_small_or_degenerate_data(seed, n, raters, p_missing, constant, boot):
    rng = np.random.default_rng(seed)
    h = rng.integers(1, 4, size=(n, raters)).astype(float)
    h[rng.random((n, raters)) < p_missing] = nan
    m = np.full(n, 2.0) if constant else rng.normal(2, 1, n)
    groups = rng.choice(["a", "b"], n)
    ev = M.evaluate(
        h, {"s": m}, groups=groups, options=EvaluationOptions(scale=M.Scale(1, 3), n_bootstrap=boot, seed=seed)
    )
    data = json.loads(to_json_text(ev.to_json()))
    for block in (data["systems"]["s"]["observed"], data["systems"]["s"]["true_score"], data["human_human"]):
        for key, value in block.items():
            if value is None:
                assert block.get(key + "_reason"), key
