"""The evaluation-campaign study (core.simulate.campaign_study) and its report, on a small version."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from easl_toolkit.core.campaign.estimators import MIN_DOUBLE
from easl_toolkit.core.simulate.campaign_report import _cost_for_width, budget_ratios, cells, never_worse, report
from easl_toolkit.core.simulate.campaign_study import (
    DOUBLE_DESIGNS,
    OBSERVED_DESIGNS,
    draw_world,
    quick_settings,
    run_setting,
    truth,
)


@pytest.fixture(scope="module")
def quick():
    s = quick_settings()
    return s, run_setting(s, "high", 0.9)


def test_every_design_reports_every_metric_for_every_campaign_and_budget(quick) -> None:
    s, df = quick
    observed = df[df["family"] == "observed"]
    assert set(observed["design"]) == set(OBSERVED_DESIGNS)
    assert set(df[df["family"] == "double"]["design"]) == set(DOUBLE_DESIGNS)
    assert set(observed["metric"]) == {"mean", "r", "qwk", "rmse", "smd"}
    per_cell = df.groupby(["family", "design", "metric", "budget"]).size()
    assert (per_cell == s.n_campaigns).all()


def test_designs_spend_their_budget_and_cover_the_truth_in_most_campaigns(quick) -> None:
    s, df = quick
    c = cells(df)
    spent = c["cost"] / (c["budget"] * s.n_responses)
    assert spent.between(0.8, 1.15).all(), c[~spent.between(0.8, 1.15)]
    observed = c[c["family"] == "observed"]
    assert observed["coverage"].mean() > 0.85


def test_prediction_powered_designs_narrow_the_interval_of_the_mean_with_a_good_system(quick) -> None:
    _, df = quick
    c = cells(df)
    mean = c[(c["metric"] == "mean") & (c["budget"] == 0.3)].set_index("design")["width"]
    assert mean["uniform"] < mean["classical"] and mean["active"] < mean["classical"]


def test_the_report_has_coverage_ratio_and_never_worse_tables(quick) -> None:
    _, df = quick
    text = report(df)
    for heading in ("Coverage", "Budget ratio", "Never worse than uniform"):
        assert heading in text
    nw = never_worse(df)
    assert {"mean", "low", "high", "worse"} <= set(nw.columns)
    assert len(budget_ratios(cells(df))) > 0


def test_the_cost_for_a_width_interpolates_on_log_log_axes() -> None:
    cost = np.array([100.0, 400.0])
    width = np.array([0.2, 0.1])  # width ~ cost^-1/2
    assert _cost_for_width(cost, width, 0.1414213562) == pytest.approx(200.0, rel=1e-6)
    assert _cost_for_width(cost, width, 0.05) == pytest.approx(1600.0, rel=1e-6)


def test_the_true_values_of_a_world_agree_between_the_two_prmse_forms() -> None:
    s = quick_settings()
    values = truth(draw_world(s, 0.46, 0.9, (1, 200_000), np.random.default_rng(0)))
    assert 0.6 < values["hh_r"] < 0.7  # the "average" rater category of the paper: r 0.65
    assert 0.75 < values["prmse"] < 0.85  # R2 of the system against the true score: 0.81


@pytest.fixture(scope="module")
def weak_system():
    """Where the earlier robust rule lost a little to uniform sampling: a weak system (r 0.3), a 10% budget."""
    s = replace(
        quick_settings(),
        n_responses=2000,
        n_campaigns=200,
        chunk=100,
        budgets=(0.1,),
        system_r=(0.3,),
        truth_responses=200_000,
        oracle_responses=50_000,
    )
    return s, run_setting(s, "high", 0.3)


def test_active_and_wrong_designs_are_never_worse_than_uniform_paired_over_campaigns(weak_system) -> None:
    _, df = weak_system
    for design in ("active", "wrong"):
        nw = never_worse(df, design)
        assert not nw["worse"].any(), nw[nw["worse"]]


def test_reported_intervals_cover_at_a_small_budget_and_thin_ones_are_withheld_with_a_reason(weak_system) -> None:
    s, df = weak_system
    shown = df[np.isfinite(df["width"])]
    coverage = shown.groupby(["family", "metric", "design"])["covered"].mean()
    assert coverage.between(0.9, 0.99).all(), coverage[~coverage.between(0.9, 0.99)]
    assert (df.loc[~np.isfinite(df["width"]), "n"] < MIN_DOUBLE).all()
    assert (shown.loc[shown["family"] == "double", "n"] >= MIN_DOUBLE).all()


def test_single_target_campaigns_of_several_iterations_report_each_target_once_per_design() -> None:
    s = replace(quick_settings(), iterations=3, single_target=True, observed_designs=("classical", "uniform", "active"))
    df = run_setting(s, "high", 0.9)
    observed = df[df["family"] == "observed"]
    per_design = observed.groupby(["design", "metric", "budget"])["campaign"].nunique()
    assert (per_design == s.n_campaigns).all()
    assert set(observed["design"]) == {"classical", "uniform", "active"}
    assert set(observed[observed["design"] == "active"]["metric"]) == {"mean", "r", "qwk", "rmse"}
    double = df[(df["family"] == "double") & (df["design"] == "active")]
    assert set(double["metric"]) == {"prmse", "prmse_first"}
    spent = observed[(observed["design"] == "active") & (observed["metric"] == "r")].groupby("budget")["cost"].mean()
    for budget, cost in spent.items():
        assert abs(cost / (budget * s.n_responses) - 1.0) < 0.1
