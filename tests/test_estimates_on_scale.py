"""Every method's estimates and 95% intervals stay on the score range, and the annotator-aware model's and
TrueSkill's map to the bounded scale (:mod:`core.models.aware.scale`) keeps the order of their locations.

Property tests over random observations (extreme scores 0 and 1 often, annotators with strong offsets), on the
models' unit scale and through a real project (``Project.create``, ``ingest``, then the figures of ``easl export``,
the monitor's table and the Label Studio predictions), and one aware project built so that its raw posterior
mean leaves the range.
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from easl_toolkit.core.models import METHODS, Hyper, Posterior, get_model
from easl_toolkit.core.models.aware.fit import AwareState
from easl_toolkit.core.models.aware.scale import EPS, bounded_interval, expected_score, expected_score_slope
from easl_toolkit.core.store import Project
from tests.store_helpers import make_items

KEYS = ("estimate", "mean", "variance", "ci_low", "ci_high")
RANGES = [(0.0, 100.0), (1.0, 5.0), (-2.0, 2.0), (0.0, 1.0)]

scores01 = st.one_of(st.sampled_from([0.0, 1.0]), st.floats(0.0, 1.0))
noise_sd = st.floats(0.01, 1.0)


def _g_closed_form(m: np.ndarray, s: float) -> np.ndarray:
    """``E[clip(m + e, 0, 1)]``, ``e ~ N(0, s^2)``, as the module docstring writes it."""
    a, b = -m / s, (1.0 - m) / s
    n = stats.norm
    return m * (n.cdf(b) - n.cdf(a)) + s * (n.pdf(a) - n.pdf(b)) + (1.0 - n.cdf(b))


def _check_unit(summ: Posterior, n: int) -> None:
    """Every figure finite and of length ``n``; estimate, mean and interval within [0, 1], the interval around the
    estimate, the variance >= 0."""
    for k in KEYS:
        assert getattr(summ, k).shape == (n,) and np.all(np.isfinite(getattr(summ, k))), k
    for k in ("estimate", "mean", "ci_low", "ci_high"):
        assert np.all((getattr(summ, k) >= 0.0) & (getattr(summ, k) <= 1.0)), (k, getattr(summ, k))
    assert np.all(summ.ci_low <= summ.estimate), (summ.ci_low, summ.estimate)
    assert np.all(summ.estimate <= summ.ci_high), (summ.estimate, summ.ci_high)
    assert np.all(summ.variance >= 0.0)


def _assert_same_order(location: np.ndarray, estimate: np.ndarray) -> None:
    """Sorted by ``location``, the estimates never decrease, and increase wherever the locations (within
    [-3, 3]) differ by 1e-5 or more."""
    order = np.argsort(location, kind="stable")
    loc, est = location[order], estimate[order]
    assert np.all(np.diff(est) >= 0.0)
    apart = (np.diff(loc) >= 1e-5) & (np.abs(loc[1:]) <= 3.0) & (np.abs(loc[:-1]) <= 3.0)
    assert np.all(np.diff(est)[apart] > 0.0)


# ---------------------------------------------------------------------------------------------------
# the map G
# ---------------------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(noise_sd)
def test_expected_score_is_the_censored_mean_strictly_increasing_inside_the_range(s):
    grid = np.linspace(-3.0, 3.0, 60_001)  # steps of 1e-4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = expected_score(grid, s)
        slope = expected_score_slope(grid, s)
    assert np.all((g >= 0.0) & (g <= 1.0))
    assert np.all(np.diff(g) > 0.0)  # strictly, in float64, even where the normal part saturates
    assert np.all(slope > 0.0)
    mid = np.abs(grid - 0.5) <= 1.5
    np.testing.assert_allclose(g[mid], _g_closed_form(grid[mid], s), rtol=0, atol=2 * EPS)
    h = 1e-6
    numeric = (expected_score(grid[mid] + h, s) - expected_score(grid[mid] - h, s)) / (2 * h)
    np.testing.assert_allclose(slope[mid], numeric, rtol=0, atol=1e-8)


@settings(max_examples=100, deadline=None)
@given(st.floats(-3.0, 3.0), st.floats(1e-5, 6.0), noise_sd)
def test_expected_score_orders_any_two_locations(m, d, s):
    lo, hi = expected_score(np.array([m, m + d]), s)
    assert 0.0 <= lo < hi <= 1.0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-1e300, 1e300), min_size=1, max_size=20),
    st.floats(0.0, 1e300),
    st.floats(1e-300, 1e6),
)
def test_extreme_locations_stay_in_range_without_warnings(m, half, s):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est, lo, hi = bounded_interval(np.array(m), half, s)
        slope = expected_score_slope(np.array(m), s)
    assert np.all((lo >= 0.0) & (lo <= est) & (est <= hi) & (hi <= 1.0))
    assert np.all((slope >= 0.0) & (slope <= 1.0))


def test_expected_score_refuses_a_noise_that_is_not_positive():
    for s in (0.0, -0.1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="standard deviation"):
            expected_score([0.5], s)


# ---------------------------------------------------------------------------------------------------
# every model on the unit scale
# ---------------------------------------------------------------------------------------------------


@st.composite
def observations(draw):
    """``(n_items, item, score, group, annotator)``: HITs of 2..4 distinct items; each annotator has an offset in
    [-0.5, 0.5] added to the item's latent, and half the scores are a bare 0 or 1."""
    n = draw(st.integers(2, 8))
    latent = np.array(draw(st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n)))
    offsets = np.array(draw(st.lists(st.floats(-0.5, 0.5), min_size=3, max_size=3)))
    item, score, group, annotator = [], [], [], []
    for g in range(draw(st.integers(1, 10))):
        members = draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=min(4, n), unique=True))
        a = draw(st.integers(0, 2))
        for i in members:
            extreme = draw(st.sampled_from([None, None, 0.0, 1.0]))
            noise = draw(st.floats(-0.1, 0.1))
            value = extreme if extreme is not None else float(np.clip(latent[i] + offsets[a] + noise, 0.0, 1.0))
            item.append(i)
            score.append(value)
            group.append(g)
            annotator.append(a)
    return n, np.array(item), np.array(score, dtype=np.float64), np.array(group), np.array(annotator)


@pytest.mark.parametrize("method", [m for m in METHODS if m not in ("aware", "campaign")])
@settings(max_examples=60, deadline=None)
@given(obs=observations(), retract=st.integers(0, 40))
def test_incremental_models_stay_in_range(method, obs, retract):
    n, item, score, group, _ = obs
    model = get_model(Hyper(method=method))
    state = model.init_state(n)
    _check_unit(model.summary(state), n)  # the prior too (TrueSkill's was [-0.07, 1.07])
    model.apply(state, item, score, group)
    _check_unit(model.summary(state), n)
    if not model.whole_submissions and retract:  # a rounding error left by retraction stays inside
        k = min(retract, item.size)
        model.apply(state, item[:k], score[:k], group[:k], sign=-1)
        _check_unit(model.summary(state), n)
    if method == "trueskill":
        _assert_same_order(state["mu"], model.summary(state).estimate)


def test_easl_interval_reaches_a_mode_at_the_end_of_the_scale_and_da_a_single_extreme_score():
    """EASL, RA: an item scored only 1 (or only 0) has its mode at 1 (0), beyond the equal-tailed interval
    (``Beta(3, 1)``: [0.292, 0.992]), which is widened to it; DA: a single score of 0 widens [0.025, 0.975]."""
    for method in ("easl", "ra"):
        model = get_model(Hyper(method=method))
        state = model.init_state(4)
        model.apply(state, [0, 1, 2, 3, 0, 1], [1.0, 0.0, 0.5, 0.5, 1.0, 0.0], [0, 0, 0, 0, 1, 1])
        summ = model.summary(state)
        assert summ.estimate[0] == summ.ci_high[0] == pytest.approx(1.0, abs=1e-12)  # RA: within rounding
        assert summ.estimate[1] == summ.ci_low[1] == pytest.approx(0.0, abs=1e-12)
        assert summ.ci_low[0] < 0.99 and summ.ci_high[1] > 0.01
    model = get_model(Hyper(method="da"))
    state = model.init_state(2)
    model.apply(state, [0, 1], [0.0, 0.4], [0, 0])
    summ = model.summary(state)
    assert (summ.ci_low[0], summ.estimate[0], summ.ci_high[0]) == (0.0, 0.0, 0.975)
    assert (summ.ci_low[1], summ.ci_high[1]) == (0.025, 0.975)


@settings(max_examples=40, deadline=None)
@given(obs=observations())
def test_aware_stays_in_range_and_keeps_the_order_of_mu(obs):
    n, item, score, _, annotator = obs
    model = get_model(Hyper(method="aware"))
    _check_unit(model.summary(model.init_state(n)), n)
    state = model.refit(None, item, annotator, score, n_items=n)  # type: ignore[attr-defined]
    summ = model.summary(state)
    _check_unit(summ, n)
    _assert_same_order(AwareState.from_arrays(state).mu, summ.estimate)


def test_aware_summary_is_the_map_of_mu_and_its_t_interval():
    from scipy import special

    rng = np.random.default_rng(3)
    model = get_model(Hyper(method="aware"))
    item, annotator = np.repeat(np.arange(10), 3), np.tile(np.arange(3), 10)
    score = np.clip(np.linspace(0, 1, 10)[item] + np.array([-0.3, 0.0, 0.3])[annotator] + rng.normal(0, 0.05, 30), 0, 1)
    st_ = AwareState.from_arrays(model.refit(None, item, annotator, score, n_items=10))  # type: ignore[attr-defined]
    summ = st_.summary()
    s = float(np.sqrt(st_.q0))
    half = np.sqrt(st_.var) * special.stdtrit(st_.df, 0.975)
    np.testing.assert_allclose(summ.estimate, _g_closed_form(st_.mu, s), atol=2 * EPS)
    np.testing.assert_array_equal(summ.mean, summ.estimate)
    np.testing.assert_allclose(summ.ci_low, _g_closed_form(st_.mu - half, s), atol=2 * EPS)
    np.testing.assert_allclose(summ.ci_high, _g_closed_form(st_.mu + half, s), atol=2 * EPS)
    slope = stats.norm.cdf((1 - st_.mu) / s) - stats.norm.cdf(-st_.mu / s)
    np.testing.assert_allclose(summ.variance, slope**2 * st_.var, rtol=1e-6)


# ---------------------------------------------------------------------------------------------------
# through a project: export, the monitor's table, the Label Studio predictions
# ---------------------------------------------------------------------------------------------------


def _check_score_range(frame: pd.DataFrame, lo: float, hi: float) -> None:
    for k in ("estimate", "mean", "ci_low", "ci_high"):
        x = frame[k].to_numpy(dtype=np.float64)
        assert np.all(np.isfinite(x) & (x >= lo) & (x <= hi)), (k, x)
    assert np.all(frame["ci_low"] <= frame["estimate"]) and np.all(frame["estimate"] <= frame["ci_high"])


def _answers(hits: list[dict], draw_score, lo: float, hi: float, annotators: int) -> list[dict]:
    rows = []
    for k, h in enumerate(hits):
        for x in h["items"]:
            rows.append(
                {
                    "hit_id": h["hit_id"],
                    "item_id": x["item_id"],
                    "score": lo + (hi - lo) * draw_score(),
                    "annotator": f"a{k % annotators}",
                }
            )
    return rows


def _check_project_outputs(p: Project) -> None:
    from easl_toolkit.easl_plugin.campaign import Figures
    from easl_toolkit.tui.screens.monitor_data import live_columns

    lo, hi = p.hyper.score_min, p.hyper.score_max
    est = p.estimates()
    _check_score_range(est, lo, hi)
    table = p.estimates_table()  # what easl export writes to a .csv
    frame = table.table.to_pandas() if table.table is not None else table.frame
    _check_score_range(frame, lo, hi)
    ids = est["item_id"].to_numpy(dtype=object)
    cols = live_columns(p, ids, est["text"].to_numpy(dtype=object))  # the monitor's table
    shown = {"estimate": cols.estimate, "mean": cols.estimate, "ci_low": cols.ci_low, "ci_high": cols.ci_high}
    _check_score_range(pd.DataFrame(shown), lo, hi)
    values = Figures(p).values  # the Label Studio predictions: estimate, ci_low, ci_high
    assert np.all((values >= lo) & (values <= hi))
    if p.hyper.method == "aware":
        _assert_same_order(AwareState.from_arrays(p.state()).mu, est["estimate"].to_numpy())
    if p.hyper.method == "trueskill":
        _assert_same_order(p.state()["mu"], est["estimate"].to_numpy())


@pytest.mark.parametrize("method", [m for m in METHODS if m != "campaign"])  # (campaign: test_campaign_project.py)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), score_range=st.sampled_from(RANGES))
def test_every_method_exports_shows_and_predicts_on_the_score_range(method, data, score_range):
    lo, hi = score_range
    with tempfile.TemporaryDirectory() as tmp:
        hyper = Hyper(method=method, hit_size=3, seed=data.draw(st.integers(0, 99)), score_min=lo, score_max=hi)
        with Project.create(Path(tmp) / "p.easl", make_items(9, extra=False), hyper) as p:
            for it in range(2):
                hits = p.open_hits() if it == 0 else p.next_hits()
                p.ingest(_answers(hits, lambda: data.draw(scores01), lo, hi, annotators=3), source="t")
            _check_project_outputs(p)


def _strong_offset_rows(items: pd.DataFrame) -> list[dict]:
    """Two harsh annotators score every item 0.4 below a neutral one (1-5 scale); the three best items are scored
    only by the harsh pair, at the top of the scale: their consensus ``mu`` lies beyond the range."""
    rng = np.random.default_rng(0)
    n = len(items)
    latent = np.linspace(0.05, 0.95, n)
    rows = []
    for i in range(n):
        for name, offset in (("neutral", 0.0), ("harsh1", -0.4), ("harsh2", -0.4)):
            if i >= n - 3 and name == "neutral":
                continue
            s = 1.0 if i >= n - 3 else float(np.clip(latent[i] + offset + rng.normal(0, 0.02), 0, 1))
            rows.append({"item_id": items["item_id"][i], "score": 1 + 4 * s, "annotator": name})
    return rows


def test_aware_project_with_a_strong_annotator_offset_exports_in_range(tmp_path):
    from easl_toolkit.tui.cli import main

    items = make_items(20, extra=False)
    path = tmp_path / "p.easl"
    with Project.create(path, items, Hyper(method="aware", hit_size=5, seed=1, score_min=1, score_max=5)) as p:
        p.ingest(_strong_offset_rows(items), source="t")
        st_ = AwareState.from_arrays(p.state())
        half = np.sqrt(st_.var) * 2.0
        assert st_.mu.max() > 1.05 and (st_.mu + half).max() > 1.1  # the raw posterior mean leaves the range
        mu = st_.mu.copy()
        _check_project_outputs(p)
    out = tmp_path / "est.csv"
    assert main(["export", str(path), "--output", str(out)]) == 0
    est = pd.read_csv(out)
    _check_score_range(est, 1.0, 5.0)
    _assert_same_order(mu, est["estimate"].to_numpy())
    top = est["estimate"].to_numpy()[mu > 1.0]
    assert np.all(top > 4.99)  # pushed to the top of the scale, not beyond: 1 + 4 * 1.083 = 5.33 before
