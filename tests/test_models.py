"""Tests of easl_toolkit.core.models: reference values of docs/design.md sections 2 and 5, exactness of the vectorised
pairwise replay against a literal sequential loop, retraction, and invariants (hypothesis)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from easl_toolkit.core.errors import EaslError, HyperParameterError
from easl_toolkit.core.models import (
    METHODS,
    Hyper,
    Posterior,
    beta_interval,
    beta_mean,
    beta_mode,
    beta_variance,
    draw_margin,
    get_model,
    pair_schedule,
    rao_kupper,
    rate_1vs1,
    v_draw,
    v_win,
    w_draw,
    w_win,
)
from easl_toolkit.core.models.aware.scale import expected_score
from easl_toolkit.core.selection import match_quality

# ---------------------------------------------------------------------------------------------------
# Hyper
# ---------------------------------------------------------------------------------------------------


def test_hyper_defaults_are_the_papers():
    h = Hyper()
    assert (h.method, h.hit_size, h.gamma, h.epsilon, h.alpha0, h.beta0) == ("easl", 5, 0.1, 0.1, 1.0, 1.0)
    assert h.partner_pool == "paper" and h.hits_per_iteration is None


def test_hyper_json_round_trip():
    h = Hyper(method="ra", hit_size=4, gamma=0.2, score_min=-2, score_max=2, hits_per_iteration=7, seed=3)
    back = Hyper.from_json(h.to_json())
    assert back == h
    assert json.loads(h.to_json())["method"] == "ra"
    assert Hyper.from_json("{}") == Hyper()


@pytest.mark.parametrize(
    "field,value",
    [
        ("method", "elo"),
        ("hit_size", 1),
        ("hit_size", 2.5),
        ("hit_size", True),
        ("gamma", 0.0),
        ("gamma", float("nan")),
        ("epsilon", -0.1),
        ("alpha0", 0.5),
        ("beta0", "one"),
        ("score_max", 0.0),
        ("partner_pool", "everyone"),
        ("hits_per_iteration", 0),
        ("seed", -1),
    ],
)
def test_hyper_rejects_bad_values_naming_the_field(field, value):
    with pytest.raises(EaslError, match=field):
        Hyper(**{field: value})


def test_hyper_errors_carry_the_field_and_name_no_flag():
    with pytest.raises(HyperParameterError) as info:
        Hyper(hit_size=1)
    err = info.value
    assert (err.field, err.value) == ("hit_size", 1) and "2" in err.need
    assert "--" not in str(err) and "hit_size" in str(err)
    with pytest.raises(HyperParameterError) as info:
        Hyper.from_json('{"epsilon": 0}', source="proj.easl")
    assert info.value.field == "epsilon" and str(info.value).startswith("proj.easl: ")


def test_hyper_from_json_errors_name_the_source():
    with pytest.raises(EaslError, match="proj.easl"):
        Hyper.from_json("{not json", source="proj.easl")
    with pytest.raises(EaslError, match="colour"):
        Hyper.from_json('{"colour": 1}')
    with pytest.raises(EaslError, match="gamma"):
        Hyper.from_json('{"gamma": -1}', source="proj.easl")
    with pytest.raises(EaslError, match="object"):
        Hyper.from_json("[1, 2]")


def test_hyper_score_range_conversion():
    h = Hyper(score_min=-2, score_max=2)
    np.testing.assert_allclose(h.to_unit([-2, 0, 2]), [0, 0.5, 1])
    np.testing.assert_allclose(h.from_unit([0, 0.5, 1]), [-2, 0, 2])
    np.testing.assert_allclose(h.variance_from_unit(1 / 12), 16 / 12)


# ---------------------------------------------------------------------------------------------------
# Beta helpers and EASL (docs/design.md section 5)
# ---------------------------------------------------------------------------------------------------


def test_beta_reference_values():
    assert beta_mode(1.5, 2.5) == pytest.approx(0.25)
    assert beta_mode(2.5, 1.5) == pytest.approx(0.75)
    assert beta_mode(1.0, 1.0) == 0.5
    assert beta_variance(1, 1) == pytest.approx(1 / 12)
    assert beta_variance(1.5, 1.5) == pytest.approx(0.0625)
    assert beta_variance(1.5, 2.5) == pytest.approx(0.046875)
    # variance depends on the scores, not only the count
    assert beta_variance(1, 3) == pytest.approx(0.0375)
    assert beta_variance(2.5, 2.5) == pytest.approx(0.0416667, abs=1e-7)
    assert beta_mean(1.8, 1.2) == pytest.approx(0.6)


def test_beta_interval_matches_scipy():
    a = np.array([1.0, 1.8, 7.3, 30.0])
    b = np.array([1.0, 1.2, 2.1, 45.0])
    lo, hi = beta_interval(a, b)
    np.testing.assert_allclose(lo, stats.beta.ppf(0.025, a, b), rtol=1e-10)
    np.testing.assert_allclose(hi, stats.beta.ppf(0.975, a, b), rtol=1e-10)


def test_easl_single_update_reference():
    m = get_model(Hyper())
    s = m.init_state(2)
    m.apply(s, [0], [0.8], [0])
    np.testing.assert_allclose([s["alpha"][0], s["beta"][0]], [1.8, 1.2])
    summ = m.summary(s)
    assert summ.estimate[0] == pytest.approx(0.8)
    assert summ.variance[0] == pytest.approx(0.06)
    assert summ.estimate[1] == 0.5 and summ.variance[1] == pytest.approx(1 / 12)
    loc, var = m.selection_keys(s)
    np.testing.assert_allclose(loc, summ.estimate)
    np.testing.assert_allclose(var, summ.variance)
    assert summ.ci_low[0] < 0.6 < summ.ci_high[0]


def test_easl_repeated_items_in_one_batch_and_retraction():
    m = get_model(Hyper())
    s = m.init_state(4)
    items = np.array([0, 1, 0, 0, 3])
    scores = np.array([0.2, 0.9, 0.4, 1.0, 0.0])
    m.apply(s, items, scores, np.zeros(5, dtype=np.int64))
    np.testing.assert_allclose(s["alpha"], [1 + 1.6, 1.9, 1, 1])
    np.testing.assert_allclose(s["beta"], [1 + 1.4, 1.1, 1, 2])
    np.testing.assert_array_equal(s["count"], [3, 1, 0, 1])
    # retract a subset, then the rest: back to the prior exactly
    m.apply(s, items[:2], scores[:2], np.zeros(2, dtype=np.int64), sign=-1)
    np.testing.assert_allclose(s["alpha"], [1 + 1.4, 1, 1, 1])
    assert s["alpha"][1] == 1.0 and s["beta"][1] == 1.0  # reset exactly at count 0
    m.apply(s, items[2:], scores[2:], np.zeros(3, dtype=np.int64), sign=-1)
    for key, val in m.init_state(4).items():
        np.testing.assert_array_equal(s[key], val)
    assert np.all(m.summary(s).estimate == 0.5)


def test_apply_rejects_malformed_batches():
    m = get_model(Hyper())
    s = m.init_state(3)
    with pytest.raises(ValueError):
        m.apply(s, [0, 3], [0.1, 0.2], [0, 0])
    with pytest.raises(ValueError):
        m.apply(s, [0], [1.5], [0])
    with pytest.raises(ValueError):
        m.apply(s, [0], [float("nan")], [0])
    with pytest.raises(ValueError):
        m.apply(s, [0, 1], [0.5], [0, 0])
    ra = get_model(Hyper(method="ra"))
    with pytest.raises(ValueError, match="retract"):
        ra.apply(ra.init_state(3), [0, 1], [0.1, 0.2], [0, 0], sign=-1)


@pytest.mark.parametrize("method", METHODS)
def test_empty_batch_is_a_no_op(method):
    m = get_model(Hyper(method=method, systems=("s",) if method == "campaign" else ()))
    s = m.init_state(3)
    before = {k: v.copy() for k, v in s.items()}
    m.apply(s, np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0, dtype=np.int64))
    for k in s:
        np.testing.assert_array_equal(s[k], before[k])
    summ = m.summary(s)
    assert isinstance(summ, Posterior) and summ._fields == ("estimate", "mean", "variance", "ci_low", "ci_high")
    assert all(v.shape == (3,) and v.dtype == np.float64 for v in summ)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.floats(0, 1)), min_size=1, max_size=30))
def test_easl_variance_never_increases_in_expectation(obs):
    """E[Var after one more score] <= Var when the score follows the posterior predictive (0 or 1 with
    the posterior mean), and a score at the posterior mean never increases it."""
    m = get_model(Hyper())
    s = m.init_state(6)
    items = np.array([o[0] for o in obs])
    m.apply(s, items, np.array([o[1] for o in obs]), np.zeros(len(obs), dtype=np.int64))
    _, var = m.selection_keys(s)
    a, b = s["alpha"], s["beta"]
    # a score s adds 1 to alpha + beta; expected variance over s ~ the posterior predictive (mean a/(a+b))
    mean = a / (a + b)
    exp_var = mean * beta_variance(a + 1, b) + (1 - mean) * beta_variance(a, b + 1)
    assert np.all(exp_var <= var + 1e-15)
    # and a score at the posterior mean never increases it
    assert np.all(beta_variance(a + mean, b + 1 - mean) <= var + 1e-15)


# ---------------------------------------------------------------------------------------------------
# DA
# ---------------------------------------------------------------------------------------------------


def test_da_mean_variance_and_retraction():
    m = get_model(Hyper(method="da"))
    s = m.init_state(3)
    scores = np.array([0.2, 0.4, 0.9, 0.6])
    m.apply(s, [0, 0, 0, 1], scores, [0, 0, 1, 1])
    summ = m.summary(s)
    x = scores[:3]
    assert summ.estimate[0] == pytest.approx(x.mean())
    assert summ.variance[0] == pytest.approx(x.var(ddof=1) / 3)
    half = stats.t.ppf(0.975, 2) * math.sqrt(x.var(ddof=1) / 3)
    assert summ.ci_low[0] == pytest.approx(max(0.0, x.mean() - half))
    assert summ.ci_high[0] == pytest.approx(min(1.0, x.mean() + half))
    assert summ.estimate[1] == pytest.approx(0.6) and summ.variance[1] == pytest.approx(1 / 12)
    assert summ.estimate[2] == 0.5 and summ.variance[2] == pytest.approx(1 / 12)
    assert (summ.ci_low[2], summ.ci_high[2]) == (0.025, 0.975)
    loc, var = m.selection_keys(s)
    np.testing.assert_allclose(loc, summ.estimate)
    np.testing.assert_allclose(var, summ.variance)
    m.apply(s, [0, 0, 0, 1], scores, [0, 0, 1, 1], sign=-1)
    for k, v in m.init_state(3).items():
        np.testing.assert_array_equal(s[k], v)


def test_da_constant_scores_have_zero_variance_not_negative():
    m = get_model(Hyper(method="da"))
    s = m.init_state(1)
    m.apply(s, [0] * 5, [0.1] * 5, [0] * 5)
    assert m.summary(s).variance[0] == pytest.approx(0.0, abs=1e-15)
    assert m.summary(s).variance[0] >= 0


# ---------------------------------------------------------------------------------------------------
# TrueSkill (docs/design.md section 5: the reference library's values)
# ---------------------------------------------------------------------------------------------------


def test_trueskill_v_w_reference_values():
    assert v_win(0, 0) == pytest.approx(0.7978845608, abs=1e-10)
    assert w_win(0, 0) == pytest.approx(0.6366197724, abs=1e-10)
    assert v_win(1, 0.5) == pytest.approx(0.5091604338, abs=1e-10)
    assert w_win(1, 0.5) == pytest.approx(0.5138245643, abs=1e-10)
    assert v_win(-1, 0.5) == pytest.approx(1.9386771666, abs=1e-10)
    assert v_draw(1, 0.5) == pytest.approx(-0.9206446052, abs=1e-10)
    assert w_draw(1, 0.5) == pytest.approx(0.9230579021, abs=1e-10)
    assert v_draw(3, 0.2) == pytest.approx(-2.9611273599, abs=1e-10)
    assert w_draw(3, 0.2) == pytest.approx(0.9876321050, abs=1e-10)
    assert v_draw(-3, 0.2) == pytest.approx(2.9611273599, abs=1e-10)  # odd
    assert w_draw(-3, 0.2) == pytest.approx(0.9876321050, abs=1e-10)  # even


def test_trueskill_default_library_values():
    mu, sigma, beta, tau = 25.0, 25 / 3, 25 / 6, 25 / 300
    eps = draw_margin(0.10, beta)
    assert match_quality(mu, sigma**2, mu, sigma**2, beta) == pytest.approx(0.447, abs=5e-4)
    mw, sw, ml, sl = rate_1vs1(mu, sigma, mu, sigma, beta=beta, tau=tau, draw_margin=eps)
    np.testing.assert_allclose([mw, sw, ml, sl], [29.396, 7.171, 20.604, 7.171], atol=5e-4)
    m1, s1, m2, s2 = rate_1vs1(mu, sigma, mu, sigma, beta=beta, tau=tau, draw_margin=eps, drawn=True)
    np.testing.assert_allclose([m1, s1, m2, s2], [25.0, 6.458, 25.0, 6.458], atol=5e-4)
    mw, sw, ml, sl = rate_1vs1(mu, sigma, mu, sigma, beta=beta, tau=0.0, draw_margin=0.0)
    np.testing.assert_allclose([mw, sw, ml, sl], [29.205221, 7.194481, 20.794779, 7.194481], atol=5e-7)


def test_trueskill_extreme_inputs_do_not_crash():
    beta, tau = 25 / 6, 25 / 300
    eps = draw_margin(0.10, beta)
    for drawn in (False, True):
        out = rate_1vs1(-323.263, 2.965, -48.441, 2.190, beta=beta, tau=tau, draw_margin=eps, drawn=drawn)
        assert all(np.isfinite(x) for x in out)
        assert out[1] <= math.hypot(2.965, tau) and out[3] <= math.hypot(2.190, tau)
    t = np.array([-1000.0, -300.0, -40.0, -30.0, -10.0, 0.0, 10.0, 40.0, 1000.0])
    for f in (v_win, w_win):
        assert np.all(np.isfinite(f(t, 0.1)))
    for f in (v_draw, w_draw):
        assert np.all(np.isfinite(f(t, 0.1)))
    w = w_win(t, 0.0)
    assert np.all((w >= 0) & (w <= 1))
    assert w_win(-1000.0, 0.0) == pytest.approx(1 - 1 / 1000**2 + 6 / 1000**4, abs=1e-15)
    assert v_win(-1000.0, 0.0) == pytest.approx(1000.001, abs=1e-5)
    wd = w_draw(t, 0.1)
    assert np.all((wd >= 0) & (wd <= 1))


def test_w_win_asymptote_joins_the_direct_formula():
    # either side of the switch at t - e = -30, both forms agree closely
    x = np.array([-29.9, -30.0, -30.1])
    assert np.ptp(w_win(x)) < 2e-4
    direct = v_win(-30.0) * (v_win(-30.0) - 30.0)
    assert w_win(-30.000001) == pytest.approx(direct, abs=1e-10)


def test_trueskill_model_prior_and_summary():
    m = get_model(Hyper(method="trueskill"))
    s = m.init_state(3)
    np.testing.assert_allclose(s["mu"], 0.5)
    np.testing.assert_allclose(s["sigma2"], 1 / 12)
    m.apply(s, [0, 1, 2], [0.9, 0.1, 0.5], [7, 7, 7])
    summ = m.summary(s)
    assert summ.estimate[0] > 0.5 > summ.estimate[1]
    assert np.all(summ.variance < 1 / 12)
    # the interval is mu -+ 1.96 sigma mapped to the bounded scale (easl_toolkit.core.models.aware.scale, noise gamma)
    half = 1.959963984540054 * np.sqrt(s["sigma2"])
    np.testing.assert_allclose(summ.ci_low, expected_score(s["mu"] - half, 0.1))
    np.testing.assert_allclose(summ.ci_high, expected_score(s["mu"] + half, 0.1))
    np.testing.assert_allclose(summ.estimate, expected_score(s["mu"], 0.1))


# ---------------------------------------------------------------------------------------------------
# RA
# ---------------------------------------------------------------------------------------------------


def test_rao_kupper_probabilities_sum_to_one():
    mi = np.array([0.0, 0.3, 0.9, 0.5])
    mj = np.array([1.0, 0.3, 0.1, 0.45])
    w, loss, t = rao_kupper(mi, mj, 0.1)
    np.testing.assert_allclose(w + loss + t, 1.0)
    theta = math.exp(0.1)
    assert w[1] == pytest.approx(1 / (1 + theta))
    assert t[1] == pytest.approx((theta**2 - 1) / (1 + theta) ** 2)


def test_ra_single_pair_updates():
    g, eps = 0.1, 0.1
    m = get_model(Hyper(method="ra"))
    s = m.init_state(2)
    m.apply(s, [0, 1], [0.7, 0.2], [1, 1])  # 0 beats 1, from the prior
    v = 1 / 12
    c = math.sqrt(2 * g * g + 2 * v)
    p = 1 / (1 + math.exp(eps))
    inc = v / c * (1 - p)
    np.testing.assert_allclose(s["alpha"], [1 + inc, 1.0])
    np.testing.assert_allclose(s["beta"], [1.0, 1 + inc])
    # a tie between two near items: all four grow by sigma^2 / c (1 - p_tie)
    s = m.init_state(2)
    m.apply(s, [0, 1], [0.4, 0.4], [1, 1])
    pt = (math.exp(eps) ** 2 - 1) / (1 + math.exp(eps)) ** 2
    inc = v / c * (1 - pt)
    np.testing.assert_allclose(s["alpha"], [1 + inc] * 2)
    np.testing.assert_allclose(s["beta"], [1 + inc] * 2)


def test_ra_far_tie_moves_the_items_together():
    m = get_model(Hyper(method="ra"))
    s = m.init_state(2)
    s["alpha"][:] = [8.0, 2.0]  # item 0 high (mode 7/8), item 1 low (mode 1/8)
    s["beta"][:] = [2.0, 8.0]
    m.apply(s, [0, 1], [0.5, 0.5], [0, 0])
    assert s["alpha"][0] == 8.0 and s["beta"][0] > 2.0  # the higher item's beta (eq 17)
    assert s["alpha"][1] > 2.0 and s["beta"][1] == 8.0  # the lower item's alpha (eq 16)


def _sequential_pairs(item, score, group):
    """Literal order: submissions by first appearance, rows in order, pairs (0,1), (0,2), ..., (1,2), ..."""
    order = []
    seen = {}
    for r, g in enumerate(group):
        seen.setdefault(g, []).append(r)
    for rows in seen.values():  # insertion order = first appearance
        for a in range(len(rows)):
            for b in range(a + 1, len(rows)):
                ra, rb = rows[a], rows[b]
                if item[ra] != item[rb]:
                    order.append((item[ra], item[rb], score[ra], score[rb]))
    return order


def _ra_sequential(n, item, score, group, gamma=0.1, eps=0.1):
    """Independent scalar implementation of eq 12-22, one pair at a time."""
    alpha = [1.0] * n
    beta = [1.0] * n

    def mode(a, b):
        return (a - 1) / (a + b - 2) if a + b - 2 > 0 else 0.5

    def var(a, b):
        return a * b / ((a + b) ** 2 * (a + b + 1))

    theta = math.exp(eps)
    for x, y, sx, sy in _sequential_pairs(item, score, group):
        if sy > sx:
            x, y, sx, sy = y, x, sy, sx
        mi, mj = mode(alpha[x], beta[x]), mode(alpha[y], beta[y])
        vi, vj = var(alpha[x], beta[x]), var(alpha[y], beta[y])
        c = math.sqrt(2 * gamma**2 + vi + vj)
        pi, pj = math.exp(mi), math.exp(mj)
        if sx > sy:
            p = pi / (pi + theta * pj)
            alpha[x] += vi / c * (1 - p)
            beta[y] += vj / c * (1 - p)
        else:
            pt = (theta**2 - 1) * pi * pj / ((pi + theta * pj) * (theta * pi + pj))
            if abs(mi - mj) > eps:
                hi, lo, vh, vl = (x, y, vi, vj) if mi > mj else (y, x, vj, vi)
                alpha[lo] += vl / c * (1 - pt)
                beta[hi] += vh / c * (1 - pt)
            else:
                alpha[x] += vi / c * (1 - pt)
                beta[x] += vi / c * (1 - pt)
                alpha[y] += vj / c * (1 - pt)
                beta[y] += vj / c * (1 - pt)
    return np.array(alpha), np.array(beta)


def _ts_sequential(n, item, score, group, gamma=0.1, eps=0.1):
    mu = [0.5] * n
    s2 = [1 / 12] * n
    for x, y, sx, sy in _sequential_pairs(item, score, group):
        if sy > sx:
            x, y = y, x
        out = rate_1vs1(mu[x], math.sqrt(s2[x]), mu[y], math.sqrt(s2[y]), beta=gamma, draw_margin=eps, drawn=sx == sy)
        mu[x], s2[x], mu[y], s2[y] = float(out[0]), float(out[1]) ** 2, float(out[2]), float(out[3]) ** 2
    return np.array(mu), np.array(s2)


def _random_log(rng, n_items, n_groups, hit_size, ties=True):
    item, score, group = [], [], []
    gids = rng.permutation(n_groups * 3)[:n_groups]  # arbitrary, non-sorted ids
    for g in gids:
        m = int(rng.integers(2, hit_size + 1))
        its = rng.choice(n_items, size=m, replace=m > n_items)
        sc = rng.integers(0, 6, size=m) / 5 if ties else rng.random(m)
        item += list(its)
        score += list(sc)
        group += [int(g)] * m
    return np.array(item), np.array(score, dtype=np.float64), np.array(group)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ra_wave_replay_equals_literal_sequential_loop(seed):
    rng = np.random.default_rng(seed)
    n = 12
    item, score, group = _random_log(rng, n, 60, 6)
    m = get_model(Hyper(method="ra"))
    s = m.init_state(n)
    m.apply(s, item, score, group)
    a, b = _ra_sequential(n, item.tolist(), score.tolist(), group.tolist())
    np.testing.assert_allclose(s["alpha"], a, rtol=0, atol=1e-13)
    np.testing.assert_allclose(s["beta"], b, rtol=0, atol=1e-13)
    np.testing.assert_array_equal(s["count"], np.bincount(item, minlength=n))


@pytest.mark.parametrize("seed", [0, 1])
def test_trueskill_wave_replay_equals_sequential(seed):
    rng = np.random.default_rng(seed)
    n = 10
    item, score, group = _random_log(rng, n, 40, 5)
    m = get_model(Hyper(method="trueskill"))
    s = m.init_state(n)
    m.apply(s, item, score, group)
    mu, s2 = _ts_sequential(n, item.tolist(), score.tolist(), group.tolist())
    np.testing.assert_allclose(s["mu"], mu, rtol=0, atol=1e-13)
    np.testing.assert_allclose(s["sigma2"], s2, rtol=0, atol=1e-13)


def test_pairwise_batches_equal_one_by_one_submissions():
    """Applying a log in one call equals applying its submissions one at a time, in arrival order."""
    rng = np.random.default_rng(5)
    item, score, group = _random_log(rng, 8, 25, 5)
    for method in ("ra", "trueskill"):
        m = get_model(Hyper(method=method))
        whole = m.init_state(8)
        m.apply(whole, item, score, group)
        parts = m.init_state(8)
        _, first = np.unique(group, return_index=True)
        for g in group[np.sort(first)]:
            rows = group == g
            m.apply(parts, item[rows], score[rows], group[rows])
        for k in whole:
            np.testing.assert_allclose(whole[k], parts[k], rtol=0, atol=1e-14)


def test_pair_schedule_order_and_disjoint_steps():
    item = np.array([3, 1, 2, 1, 0, 2])
    score = np.array([0.5, 0.1, 0.9, 0.3, 0.3, 0.8])
    group = np.array([9, 9, 9, 4, 4, 4])
    sched = pair_schedule(item, score, group)
    assert sched.n_pairs == 6
    # step contents are item-disjoint; per-item order of pairs is the sequential one
    b = sched.step_bounds
    for s in range(b.size - 1):
        its = np.concatenate([sched.first[b[s] : b[s + 1]], sched.second[b[s] : b[s + 1]]])
        assert np.unique(its).size == its.size
    seq = [(x, y) for x, y, _, _ in _sequential_pairs(item.tolist(), score.tolist(), group.tolist())]
    assert seq == [(3, 1), (3, 2), (1, 2), (1, 0), (1, 2), (0, 2)]
    got = list(zip(sched.first.tolist(), sched.second.tolist()))
    assert sorted(got) == sorted(seq)
    for it in range(4):
        assert [p for p in got if it in p] == [p for p in seq if it in p]
    out = dict(zip(got, sched.outcome.tolist()))
    assert out[(3, 1)] == 1 and out[(3, 2)] == -1 and out[(1, 0)] == 0


def test_pair_schedule_degenerate_inputs():
    s = pair_schedule([1], [0.5], [0])
    assert s.n_pairs == 0
    s = pair_schedule([1, 2], [0.5, 0.5], [0, 1])  # singleton submissions: no pairs
    assert s.n_pairs == 0
    s = pair_schedule([1, 1], [0.5, 0.7], [0, 0])  # an item with itself: dropped
    assert s.n_pairs == 0
    m = get_model(Hyper(method="ra"))
    st_ = m.init_state(3)
    m.apply(st_, [1, 1], [0.5, 0.7], [0, 0])
    assert np.all(st_["alpha"] == 1.0) and st_["count"][1] == 2


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(["ra", "trueskill"]))
def test_pairwise_monotone_invariants(seed, method):
    """RA: alpha and beta never decrease (1 - p >= 0). TrueSkill: sigma never increases (0 <= w <= 1)."""
    rng = np.random.default_rng(seed)
    item, score, group = _random_log(rng, 6, 8, 4)
    m = get_model(Hyper(method=method))
    s = m.init_state(6)
    _, first = np.unique(group, return_index=True)
    for g in group[np.sort(first)]:
        before = {k: v.copy() for k, v in s.items()}
        rows = group == g
        m.apply(s, item[rows], score[rows], group[rows])
        if method == "ra":
            assert np.all(s["alpha"] >= before["alpha"]) and np.all(s["beta"] >= before["beta"])
        else:
            assert np.all(s["sigma2"] <= before["sigma2"]) and np.all(s["sigma2"] > 0)
        _, var = m.selection_keys(s)
        assert np.all(np.isfinite(var)) and np.all(var > 0)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 100)), min_size=0, max_size=25), st.data())
def test_commutative_models_retract_in_any_order(obs, data):
    """EASL and DA: adding a batch and retracting any subset equals adding the rest."""
    for method in ("easl", "da"):
        m = get_model(Hyper(method=method))
        item = np.array([o[0] for o in obs], dtype=np.int64)
        score = np.array([o[1] / 100 for o in obs])
        group = np.zeros(item.size, dtype=np.int64)
        mask = np.array(data.draw(st.lists(st.booleans(), min_size=item.size, max_size=item.size)), dtype=bool)
        a = m.init_state(5)
        m.apply(a, item, score, group)
        m.apply(a, item[mask], score[mask], group[mask], sign=-1)
        b = m.init_state(5)
        m.apply(b, item[~mask], score[~mask], group[~mask])
        for k in a:
            np.testing.assert_allclose(a[k], b[k], atol=1e-12)
        sa, sb = m.summary(a), m.summary(b)
        for k, va, vb in zip(sa._fields, sa, sb, strict=True):
            np.testing.assert_allclose(va, vb, atol=1e-9, err_msg=k)


# ---------------------------------------------------------------------------------------------------
# The package: every module's examples run, and no module is over ~400 lines
# ---------------------------------------------------------------------------------------------------


def _model_modules():
    import importlib
    import pkgutil

    import easl_toolkit.core.models

    return [
        importlib.import_module(f"easl_toolkit.core.models.{m.name}")
        for m in pkgutil.iter_modules(easl_toolkit.core.models.__path__)
    ]


def test_models_docstring_examples_run():
    import doctest

    for module in _model_modules():
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, raise_on_error=False)
        assert result.failed == 0, f"{module.__name__}: {result.failed} failing example(s)"


def test_models_modules_stay_small():
    from pathlib import Path

    for module in _model_modules():
        n = len(Path(module.__file__).read_text().splitlines())
        assert n <= 420, f"{module.__name__} has {n} lines"
