"""`easl simulate metrics`: the data of Yannakoudakis & Cummins (2015) section 4 and the behaviours it reports.

Checked against the paper (section 4): the synthetic systems have exactly the agreement the paper states (75%
percent agreement and MAE 0.5 in 4.1, constant MAE in 4.2 and 4.3), Brennan-Prediger is invariant to trait
prevalence and assigns 0.75 with quadratic weights (4.1), Cohen's kappa penalises and AC / quadratic BP promote
matching marginals while linear BP is unchanged (4.2), and quadratic-weighted coefficients decrease as each error
grows (4.3). Small sizes (1,000 responses) keep the tests fast.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from easl_toolkit.core.errors import EaslError, HyperParameterError
from easl_toolkit.core.simulate import agreement_properties as ap
from easl_toolkit.core.simulate import measures
from easl_toolkit.tui import cli

SMALL = dict(
    n=1000,
    prevalence_sds=(0.5, 1.0, 2.0, 5.0),
    marginal_means=(0.0, 2.0, 4.5, 7.0, 9.0),
    range_points=(40, 20, 10, 5, 3),
)


@pytest.fixture(scope="module")
def results():
    settings = ap.PropertySettings(**SMALL)
    return ap.run(settings, np.random.default_rng(7))


def test_gaussian_scores_stay_on_the_scale():
    rng = np.random.default_rng(0)
    x = ap.gaussian_scores(rng, 5000, 1, 5, 3.0, 5.0)
    assert set(np.unique(x)) == {1.0, 2.0, 3.0, 4.0, 5.0}
    counts = np.bincount(x.astype(int))[1:]
    assert counts.min() > 0.12 * 5000  # a wide sd gives a near-uniform distribution, not piles at the ends


def test_prevalence_systems_have_75_percent_agreement_and_mae_half():
    s = ap.PropertySettings(**SMALL)
    for _sd, gold, system in ap.prevalence_data(s, np.random.default_rng(1)):
        d = np.abs(gold - system)
        assert np.mean(d == 0) == pytest.approx(0.75, abs=1e-12)
        assert np.mean(d) == pytest.approx(0.5, abs=1e-12)
        assert set(np.unique(d)) <= {0.0, 2.0}
        assert system.min() >= 1 and system.max() <= 5


def test_marginal_and_magnitude_systems_keep_mae_constant():
    s = ap.PropertySettings(**SMALL)
    for _mu, gold, system in ap.marginal_data(s, np.random.default_rng(2)):
        assert np.mean(np.abs(gold - system)) == pytest.approx(1.0, abs=1e-12)
        assert system.min() >= 0 and system.max() <= 9
    for m, gold, system in ap.magnitude_data(s, np.random.default_rng(3)):
        d = np.abs(gold - system)
        assert np.mean(d) == pytest.approx(0.6, abs=1e-3)
        assert set(np.unique(d)) <= {0.0, float(m)}


def test_range_binning_gives_g_points():
    s = ap.PropertySettings(**SMALL)
    for g, gold, system in ap.range_data(s, np.random.default_rng(4)):
        assert gold.min() >= 1 and gold.max() <= g and system.min() >= 1 and system.max() <= g
        full = ap.bin_scores(np.arange(1, 41), 1, 40, g)
        assert np.unique(full).tolist() == list(range(1, g + 1))  # every bin used, fixed cut-points
        assert np.all(np.diff(full) >= 0) and np.ptp(np.bincount(full.astype(int))[1:]) <= 1


def test_trait_prevalence_findings(results):
    df = results.curves["trait_prevalence"]
    assert np.allclose(df["bp_quadratic"], 0.75)  # "assigns 75% agreement using quadratic weights"
    assert np.ptp(df["bp_linear"]) < 1e-12 and np.ptp(df["bp_identity"]) < 1e-12  # invariant
    assert np.ptp(df["cohen_quadratic"]) > 0.2  # kappa depends on the gold distribution
    assert (df["gwet_quadratic"] > df["cohen_quadratic"]).all()  # AC "rewards" relative to kappa
    assert np.ptp(df["gwet_quadratic"]) < np.ptp(df["cohen_quadratic"])  # AC less sensitive than kappa


def test_marginal_homogeneity_findings(results):
    df = results.curves["marginal_homogeneity"].set_index("incorrect_mean")
    centre, ends = df.loc[4.5], df.loc[[0.0, 9.0]].mean()
    assert centre["cohen_linear"] < ends["cohen_linear"] and centre["cohen_quadratic"] < ends["cohen_quadratic"]
    assert centre["gwet_linear"] > ends["gwet_linear"] and centre["gwet_quadratic"] > ends["gwet_quadratic"]
    assert centre["bp_quadratic"] > ends["bp_quadratic"]
    assert np.ptp(df["bp_linear"]) < 1e-12  # "BP linear remains unchanged"


def test_magnitude_findings(results):
    df = results.curves["misclassification_magnitude"].sort_values("error_size")
    for c in ("cohen_quadratic", "gwet_quadratic", "bp_quadratic", "scott_quadratic", "krippendorff_quadratic"):
        assert np.all(np.diff(df[c]) < 0), c  # quadratic weights penalise larger errors


def test_every_coefficient_is_in_the_property_table(results):
    table = results.table
    assert table["coefficient"].tolist() == measures.coefficient_names()
    bp = table.set_index("coefficient")
    assert bp.loc["bp_quadratic", "prevalence"] == "robust"
    assert bp.loc["cohen_quadratic", "marginal"] == "penalises matching marginals"
    assert bp.loc["gwet_quadratic", "marginal"] == "promotes matching marginals"
    assert bp.loc["cohen_quadratic", "magnitude"] == "penalises large errors"


def test_chance_agreement_is_zero_for_independent_ratings():
    rng = np.random.default_rng(5)
    gold, system = rng.integers(1, 6, 20000), rng.integers(1, 6, 20000)
    suite = measures.agreement_suite(gold, system, 1, 5)
    for name in measures.coefficient_names():
        assert abs(suite[name]) < 0.03, name


def test_invalid_settings():
    with pytest.raises(EaslError, match="range points"):
        ap.PropertySettings(range_points=(50,))
    with pytest.raises(HyperParameterError, match="magnitude_mae = 4.0: error size 1 cannot keep this MAE"):
        list(
            ap.magnitude_data(
                ap.PropertySettings(n=100, magnitude_mae=4.0, magnitude_sizes=(1,)), np.random.default_rng(0)
            )
        )


def test_cli_quick_writes_the_report(tmp_path):
    out = tmp_path / "metrics"
    assert cli.main(["simulate", "metrics", "--quick", "--out", str(out), "--seed", "3"]) == 0
    report = (out / "report.md").read_text()
    assert "easl simulate metrics" in report and "--seed 3" in report
    for name in ap.EXPERIMENTS:
        assert (out / "figures" / f"{name}_paper.png").stat().st_size > 1000
        assert len(pd.read_csv(out / "tables" / f"{name}.csv")) > 1
    assert len(pd.read_csv(out / "tables" / "property_table.csv")) == len(measures.coefficient_names())
