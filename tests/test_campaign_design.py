"""Campaign design (core.campaign.design): Neyman allocation, the uniform floor, the robust uniform share, Poisson
sampling and the probabilities recorded across iterations."""

from __future__ import annotations

import numpy as np
import pytest

from easl_toolkit.core.campaign.design import (
    TAU_MIN,
    allocate,
    apply_iteration,
    check_probabilities,
    choose_iteration,
    neyman,
    poisson_sample,
    pooled,
)


def _world(rng: np.random.Generator, c: int, n: int):
    t = np.clip(rng.normal(3.8, 0.74, (c, n)), 1, 6)
    first = np.clip(np.round(t + rng.normal(0, 0.5, (c, n))), 1, 6)
    second = np.clip(np.round(t + rng.normal(0, 0.5, (c, n))), 1, 6)
    return (t + rng.normal(0, 0.3, (c, n)))[..., None], first, second


def test_neyman_probabilities_spend_the_budget_are_capped_at_one_and_proportional_below_the_cap() -> None:
    values = np.array([[1.0, 2.0, 4.0, 100.0]])
    counts = np.array([[10.0, 10.0, 10.0, 1.0]])
    p = neyman(values, counts, np.array([8.0]))
    assert (counts * p).sum() == pytest.approx(8.0, rel=1e-9)
    assert p[0, 3] == 1.0
    assert p[0, 1] / p[0, 0] == pytest.approx(2.0) and p[0, 2] / p[0, 0] == pytest.approx(4.0)


def test_a_uniform_share_of_one_gives_the_uniform_design_with_the_same_budget() -> None:
    tables = (np.array([[1.0, 3.0]]), np.array([[0.0, 0.0]]))
    counts = (np.array([[50.0, 50.0]]), np.array([[50.0, 50.0]]))
    p1, p2 = allocate(tables, counts, np.array([20.0]), np.array([1.0]))
    np.testing.assert_allclose(p1, 0.2)
    np.testing.assert_allclose(p2, 0.0)


def test_an_iteration_spends_its_budget_with_a_floor_and_probabilities_in_zero_one() -> None:
    rng = np.random.default_rng(0)
    systems, h1, h2 = _world(rng, 4, 3000)
    pilot = rng.random(h1.shape) < 0.05
    first, second = np.where(pilot, h1, np.nan), np.where(pilot, h2, np.nan)
    one = np.ones_like(h1)
    plan = choose_iteration(systems, first, second, one, one, budget=400, targets=("r", "prmse"), rng=rng)
    spent = plan.p_first.sum(axis=1) + plan.p_second.sum(axis=1)
    assert spent == pytest.approx(np.full(4, 400.0), rel=1e-6)
    open_p = plan.p_first[np.isnan(first)]
    check_probabilities(open_p, "p_first")
    assert (plan.tau >= TAU_MIN).all()
    uniform_rate = plan.p_first.sum(axis=1) / np.isnan(first).sum(axis=1)
    assert (plan.p_first.min(axis=1, where=np.isnan(first), initial=1.0) >= TAU_MIN * uniform_rate * 0.999).all()


def test_the_robust_rule_moves_towards_uniform_when_the_spreads_are_deliberately_wrong() -> None:
    rng = np.random.default_rng(1)
    t = rng.uniform(1, 6, (30, 3000))
    h1 = t + rng.normal(0, 1, t.shape) * 0.4 * (t - 1) ** 2  # humans disagree most on high responses
    systems = t[..., None]
    pilot = rng.random(h1.shape) < 0.1
    first, second = np.where(pilot, h1, np.nan), np.full_like(h1, np.nan)
    one = np.ones_like(h1)
    kwargs = {"budget": 600, "targets": ("mean",)}
    right = choose_iteration(systems, first, second, one, one, rng=np.random.default_rng(2), **kwargs)
    wrong = choose_iteration(systems, first, second, one, one, rng=np.random.default_rng(2), invert=True, **kwargs)
    assert right.tau.mean() < 0.3 < 0.7 < wrong.tau.mean()


def test_poisson_sampling_with_the_same_seed_draws_the_same_responses() -> None:
    p = np.full((2, 1000), 0.3)
    a = poisson_sample(p, np.random.default_rng(5).random(p.shape))
    b = poisson_sample(p, np.random.default_rng(5).random(p.shape))
    assert (a == b).all() and 200 < a[0].sum() < 400


def test_probabilities_outside_zero_one_are_refused() -> None:
    with pytest.raises(ValueError, match=r"in \(0, 1\]"):
        check_probabilities(np.array([0.5, 0.0]))


def test_scores_of_earlier_iterations_get_probability_one_or_their_union_probability() -> None:
    rng = np.random.default_rng(3)
    systems, h1, h2 = _world(rng, 2, 2000)
    pilot = rng.random(h1.shape) < 0.1
    first, second = np.where(pilot, h1, np.nan), np.full_like(h1, np.nan)
    one = np.ones_like(h1)
    plan = choose_iteration(systems, first, second, one, one, budget=300, targets=("r",), rng=rng, tau=1.0)
    uniforms = (rng.random(h1.shape), rng.random(h1.shape))
    (f1, _), (p1, _) = apply_iteration(plan, (h1, h2), (first, second), uniforms)
    assert (p1[pilot] == 1.0).all()
    assert np.allclose(p1[~np.isnan(f1) & ~pilot], plan.p_first[~np.isnan(f1) & ~pilot])
    previous = (np.full(h1.shape, 0.1), np.zeros(h1.shape))
    (_, _), (u1, _) = apply_iteration(plan, (h1, h2), (first, second), uniforms, previous)
    np.testing.assert_allclose(u1, 1 - 0.9 * (1 - plan.all_first))


def test_a_budget_that_is_not_positive_is_refused() -> None:
    rng = np.random.default_rng(4)
    systems, h1, h2 = _world(rng, 1, 100)
    one = np.ones_like(h1)
    with pytest.raises(ValueError, match="positive"):
        choose_iteration(systems, h1, h2, one, one, budget=0, targets=("r",), rng=rng)


def heteroscedastic_pilot() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """30 campaigns of 3,000 responses whose human noise grows with the true score, a 10% pilot of first scores:
    ``(systems, first, second, ones)``."""
    rng = np.random.default_rng(1)
    t = rng.uniform(1, 6, (30, 3000))
    h1 = t + rng.normal(0, 1, t.shape) * 0.4 * (t - 1) ** 2
    pilot = rng.random(h1.shape) < 0.1
    return t[..., None], np.where(pilot, h1, np.nan), np.full_like(h1, np.nan), np.ones_like(h1)


def test_with_a_margin_the_robust_rule_keeps_the_uniform_design_unless_the_gain_is_clear() -> None:
    systems, first, second, one = heteroscedastic_pilot()
    kwargs = {"budget": 600, "targets": ("mean",), "margin": 1.0}
    right = choose_iteration(systems, first, second, one, one, rng=np.random.default_rng(2), **kwargs)
    wrong = choose_iteration(systems, first, second, one, one, rng=np.random.default_rng(2), invert=True, **kwargs)
    assert right.tau.mean() < 0.5
    assert (wrong.tau == 1.0).mean() > 0.9


def test_the_robust_rule_returns_exactly_the_uniform_design_with_inverted_spreads() -> None:
    systems, first, second, one = heteroscedastic_pilot()
    kwargs = {"budget": 600, "targets": ("mean", "r")}
    wrong = choose_iteration(systems, first, second, one, one, rng=np.random.default_rng(2), invert=True, **kwargs)
    uniform = choose_iteration(systems, first, second, one, one, rng=np.random.default_rng(2), tau=1.0, **kwargs)
    assert (wrong.tau == 1.0).all()
    np.testing.assert_array_equal(wrong.p_first, uniform.p_first)


def test_the_robust_rule_stays_uniform_when_one_target_cannot_gain_and_leaves_it_when_every_target_gains() -> None:
    rng = np.random.default_rng(3)
    t = rng.normal(3.8, 0.74, (30, 3000))
    systems = (t + rng.normal(0, 0.74 * np.sqrt(1 / 0.3**2 - 1), t.shape))[..., None]  # a weak system
    h1 = t + rng.normal(0, 0.5, t.shape)  # the same rater noise everywhere: the mean has nothing to gain
    pilot = rng.random(h1.shape) < 0.1
    first, second = np.where(pilot, h1, np.nan), np.full_like(h1, np.nan)
    one = np.ones_like(h1)
    kwargs = {"budget": 600, "rng": np.random.default_rng(4)}
    both = choose_iteration(systems, first, second, one, one, targets=("mean", "r", "qwk"), **kwargs)
    assert (both.tau == 1.0).all()  # r and QWK would gain from the tails, the mean would lose
    h1 = t + rng.normal(0, 1, t.shape) * 0.4 * (t - 1) ** 2  # humans disagree most on high responses
    first = np.where(pilot, h1, np.nan)
    systems = t[..., None]
    gain = choose_iteration(systems, first, second, one, one, targets=("mean",), **kwargs)
    assert (gain.tau < 1.0).mean() > 0.9


def test_second_scores_wanted_more_than_first_pool_both_slots_and_spend_the_budget() -> None:
    s1, s2 = np.array([[1.0, 3.0]]), np.array([[2.0, 1.0]])
    a, b = pooled(s1, s2)
    np.testing.assert_allclose(a, [[np.sqrt(2.5), 3.0]])
    np.testing.assert_allclose(b, [[np.sqrt(2.5), 1.0]])
    counts = (np.array([[100.0, 100.0]]), np.array([[100.0, 100.0]]))
    p1, p2 = allocate((s1, s2), counts, np.array([60.0]), np.array([0.0]))
    assert (p2 <= p1 + 1e-12).all()
    assert (counts[0] * p1).sum() + (counts[1] * p2).sum() == pytest.approx(60.0, rel=1e-9)
