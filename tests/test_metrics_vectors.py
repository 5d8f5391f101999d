"""Every public test vector of docs/design.md section 5 (and section 4.1), as a test."""

import numpy as np
import pytest

import easl_toolkit.core.metrics as M
from easl_toolkit.core.metrics.estimates.fairness import fairness_analysis

nan = np.nan
TOL = 1e-9


def close(a, b, tol=TOL):
    return np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=0, atol=tol, equal_nan=True)


# ---------------------------------------------------------------- RSMTool vectors
def test_prmse_external_error_variance():
    assert close(M.prmse([1, 2, 5], [2, 3, 5], rater_error_variance=0.5), 0.9090909090909091)
    assert close(M.true_score_variance([2, 3, 5], rater_error_variance=0.5), 1.833333333333333)
    assert close(M.mse_true([1, 2, 5], [2, 3, 5], rater_error_variance=0.5), 0.16666666666666666)


def test_number_of_ratings():
    h = np.column_stack([[1, 2, 3, 4], [1, nan, 2, nan], [nan, nan, 1, nan]])
    assert M.rating_counts(h).tolist() == [2, 1, 3, 1]


def test_smd_pooled_and_unpooled_ddof0():
    assert close(
        M.standardized_mean_difference([8, 4, 6, 3], [9, 4, 5, 12], method="pooled", ddof=0), 0.8523247028586811
    )
    assert close(
        M.standardized_mean_difference([8, 4, 6, 3], [9, 4, 5, 12], method="unpooled", ddof=0), 1.171700198827415
    )


def test_dsm_with_population_parameters():
    got = M.difference_of_standardized_means(
        [8, 4, 6, 3],
        [9, 4, 5, 12],
        population_y_true_mean=4.5,
        population_y_pred_mean=5.1,
        population_y_true_sd=1.2,
        population_y_pred_sd=1.8,
    )
    assert close(got, 0.7083333333333336)


def test_qwk_continuous():
    assert close(M.quadratic_weighted_kappa([8, 4, 6, 3], [9, 4, 5, 12]), -0.09210526315789469)


def test_constant_prediction_vector():
    h = [1, 3, 4, 2, 3, 1, 3, 4, 2, 1]
    m = [2.54] * 10
    assert close(M.r2_score(h, m), -0.015806451612903283)
    assert close(M.root_mean_squared_error(h, m), 1.122319027727856)
    assert close(M.standardized_mean_difference(h, m), 0.11927198519188371)
    assert M.adjacent_agreement(h, m) == 50
    assert M.exact_agreement(h, m) == 0
    with pytest.warns(M.UndefinedMetricWarning, match="constant"):
        assert np.isnan(M.pearson_r(h, m))
    assert close(np.std(h, ddof=1), 1.1737877907772674)
    assert M.cohen_kappa(h, m) == 0
    assert close(M.quadratic_weighted_kappa(h, m), 0)


def test_disattenuated_correlation():
    assert close(M.disattenuated_correlation([0.9, 0.4, 0.6], [0.81, 0.64, 0.36]), [1.0, 0.5, 1.0])
    with pytest.warns(M.UndefinedMetricWarning):
        assert np.isnan(M.disattenuated_correlation(0.5, -0.03))


def test_fairness_vector():
    fa = fairness_analysis([2, 3, 2, 3], [1, 1.5, 3, 3.5], ["K", "K", "E", "E"])
    assert fa["base_group"] == "E"
    assert close(fa["osa"]["estimates"]["K"], 1) and close(fa["osa"]["estimates"]["Intercept"], 0.625)
    assert close(fa["osd"]["estimates"]["K"], -2) and close(fa["osd"]["estimates"]["Intercept"], 0.75)
    assert close(fa["csd"]["estimates"]["K"], -2) and close(fa["csd"]["estimates"]["Intercept"], 1)


# ---------------------------------------------------------------- SKLL kappa vectors
PAIRS = [
    ([1, 2, 3], [1, 2, 3]),
    ([1, 2, 1], [1, 2, 2]),
    ([1, 2, 3, 1, 2, 2, 3], [1, 2, 3, 1, 2, 3, 2]),
    ([1, 2, 3, 3, 2, 1], [1, 1, 1, 2, 2, 2]),
    ([-1, 0, 1, 2], [-1, 0, 0, 2]),
    ([5, 6, 7, 8], [5, 6, 6, 8]),
    ([1, 1, 2, 2], [3, 3, 4, 4]),
    ([1, 1, 3, 3], [2, 2, 4, 4]),
    ([1, 1, 4, 4], [2, 2, 3, 3]),
    ([1, 2, 4], [1, 2, 4]),
    ([1, 2, 4], [1, 2, 2]),
]
SKLL = {
    "quadratic": [1.0, 0.4, 0.75, 0.0, 0.9, 0.9, 0.11111111, 0.6666666666667, 0.6, 1.0, 0.4],
    "linear": [1.0, 0.4, 0.65, 0.0, 0.8, 0.8, 0.0, 0.3333333, 0.3333333, 1.0, 0.4],
    None: [1.0, 0.4, 0.5625, 0.0, 0.6666666666667, 0.6666666666667, 0.0, 0.0, 0.0, 1.0, 0.5],
}
OFF_BY_ONE_QUADRATIC = [1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.3333333333333333, 1.0, 1.0, 1.0, 0.5]


@pytest.mark.parametrize("weights", ["quadratic", "linear", None])
def test_skll_kappa(weights):
    got = [M.cohen_kappa(a, b, weights=weights) for a, b in PAIRS]
    assert close(got, SKLL[weights], 1e-7)


def test_skll_kappa_off_by_one():
    got = [M.cohen_kappa(a, b, weights="quadratic", allow_off_by_one=True) for a, b in PAIRS]
    assert close(got, OFF_BY_ONE_QUADRATIC)


# ---------------------------------------------------------------- categories from the scale (section 1)
def test_ac1_depends_on_explicit_categories():
    h1 = [1, 2, 3, 4, 3, 2, 4, 1, 2, 3, 5, 4]
    h2 = [1, 3, 3, 4, 4, 2, 4, 2, 2, 3, 4, 5]
    pair = np.column_stack([h1, h2])
    assert close(M.gwet_ac(pair, np.arange(1, 6)), 0.4844253491)
    assert close(M.gwet_ac(pair, np.arange(1, 7)), 0.5077932732)


def test_half_to_even_rounding_and_clipping():
    s = M.Scale(1, 4)
    assert s.to_categories([2.5, 3.5, 0.2, 7.0, nan]).tolist()[:4] == [2.0, 4.0, 1.0, 4.0]


# ---------------------------------------------------------------- Gwet's handbook data
R1 = [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan]
R2 = [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, nan]
R3 = [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, 3]
R4 = [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan]
HANDBOOK = np.column_stack([R1, R2, R3, R4])
TABLE = {  # weights: (AC, pa, pe, BP, Fleiss, Krippendorff, Conger)
    "identity": (0.775444, 0.818182, 0.190321, 0.772727, 0.761169, 0.743421, 0.762817),
    "linear": (0.858739, 0.939394, 0.570964, 0.848485, 0.817945, 0.800384, 0.813776),
    "quadratic": (0.914001, 0.975379, 0.713704, 0.901515, 0.864935, 0.849107, 0.857711),
}


@pytest.mark.parametrize("weights", ["identity", "linear", "quadratic"])
def test_gwet_handbook_table(weights):
    res = M.chance_corrected_agreement(HANDBOOK, np.arange(1, 6), weights=weights)
    want = TABLE[weights]
    got = (res["gwet"], res["pa"], res["pe_gwet"], res["bp"], res["fleiss"], res["krippendorff"], res["conger"])
    assert close(got, want, 5e-7)
    assert close(M.gwet_ac(HANDBOOK, np.arange(1, 6), weights=weights), want[0], 5e-7)
    assert close(M.brennan_prediger(HANDBOOK, np.arange(1, 6), weights=weights), want[3], 5e-7)
    assert close(M.fleiss_kappa(HANDBOOK, np.arange(1, 6), weights=weights), want[4], 5e-7)
    assert close(
        M.chance_corrected_agreement(HANDBOOK, np.arange(1, 6), weights=weights)["krippendorff"], want[5], 5e-7
    )
    assert close(M.conger_kappa(HANDBOOK, np.arange(1, 6), weights=weights), want[6], 5e-7)


def test_gwet_ac1_standard_error():
    assert close(M.gwet_standard_errors(HANDBOOK, np.arange(1, 6))["gwet"], 0.142950, 5e-7)


def test_handbook_krippendorff_levels():
    assert close(M.krippendorff_alpha(HANDBOOK, level="ordinal"), 0.8153875037548814)
    assert close(M.krippendorff_alpha(HANDBOOK, level="interval"), 0.8491071428571428)


# ---------------------------------------------------------------- two-rater contingency tables
def _from_table(table):
    table = np.asarray(table)
    q = table.shape[0]
    k, l2 = np.nonzero(table)
    reps = table[k, l2]
    return np.column_stack([np.repeat(k + 1, reps), np.repeat(l2 + 1, reps)]).astype(float), np.arange(1, q + 1)


def test_three_by_three_table():
    pairs, cats = _from_table([[13, 0, 0], [0, 20, 7], [0, 4, 56]])
    ident = M.chance_corrected_agreement(pairs, cats, weights="identity")
    assert close(
        [ident["gwet"], ident["bp"], ident["conger"], ident["fleiss"], ident["krippendorff"], ident["pa"]],
        [0.8493305482, 0.835, 0.7964094022, 0.7962396962, 0.7972584977, 0.89],
        1e-9,
    )
    quad = M.chance_corrected_agreement(pairs, cats, weights="quadratic")
    assert close([quad["gwet"], quad["bp"], quad["conger"]], [0.9402368793, 0.9175, 0.8921568627], 1e-9)
    assert close(M.cohen_kappa(pairs[:, 0], pairs[:, 1]), 0.7964094022)
    assert close(M.cohen_kappa(pairs[:, 0], pairs[:, 1], weights="quadratic"), 0.8921568627)


def test_four_by_four_table():
    pairs, cats = _from_table([[40, 4, 4, 17], [6, 25, 2, 13], [4, 1, 21, 12], [15, 5, 9, 45]])
    ident = M.chance_corrected_agreement(pairs, cats, weights="identity")
    assert close(
        [ident["gwet"], ident["bp"], ident["conger"], ident["fleiss"]],
        [0.4561576355, 0.4499252616, 0.4315007759, 0.4303405573],
        1e-9,
    )


# ---------------------------------------------------------------- Krippendorff 3 coders x 15 units
A = [nan, nan, nan, nan, nan, 3, 4, 1, 2, 1, 1, 3, 3, nan, 3]
B = [1, nan, 2, 1, 3, 3, 4, 3, nan, nan, nan, nan, nan, nan, nan]
C = [nan, nan, 2, 1, 3, 4, 4, nan, 2, 1, 1, 3, 3, nan, 4]
KRIPP = np.column_stack([A, B, C])


@pytest.mark.parametrize(
    "level,want",
    [
        ("nominal", 0.691358024691358),
        ("ordinal", 0.8067214199413153),
        ("interval", 0.8108448928121059),
        ("ratio", 0.8089436707842471),
    ],
)
def test_krippendorff_levels(level, want):
    assert close(M.krippendorff_alpha(KRIPP, level=level), want)


@pytest.mark.parametrize(
    "level,want",
    [
        ("nominal", 0.691358024691358),
        ("ordinal", 0.8067214199413153),
        ("interval", 0.8108448928121059),
        ("ratio", 0.8089436707842471),
    ],
)
def test_krippendorff_levels_from_coincidence_tables(level, want):
    """The category-table route used by ``easl evaluate`` gives the same values as the moment route."""
    from easl_toolkit.core.metrics.data import category_index
    from easl_toolkit.core.metrics.estimates.agreement_totals import agreement_sums
    from easl_toolkit.core.metrics.estimates.krippendorff import coincidence_delta, finish_alpha_from_coincidence

    cats = np.arange(1.0, 5.0)
    t = agreement_sums(category_index(KRIPP, cats), cats.size).totals()
    got = finish_alpha_from_coincidence(t["coinc"].reshape(4, 4), coincidence_delta(cats, level))
    assert close(got, want)
