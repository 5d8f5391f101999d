"""Annotator flags of the annotator-aware model that a project manager can trust: ``random`` only for annotators
whose scores are indistinguishable from chance (checked on real lab raters of the shipped AGH TV study and on
simulated random clickers), ``noisy`` apart, ``collapsed`` as before, and no flag from undefined agreement."""

from __future__ import annotations

import numpy as np
import pytest

from easl_toolkit.core.models.aware.diagnostics import RANDOM_MIN_SCORES, annotator_diagnostics
from easl_toolkit.core.models.aware.fit import Observations, fit
from easl_toolkit.core.simulate.replay_data import TRUSTED_AGREEMENT, annotator_agreement, shipped_ratings


@pytest.fixture(scope="module")
def study():
    """The shipped study's ratings and each rater's agreement over all their ratings (with the others' item
    means)."""
    r = shipped_ratings()
    return r, annotator_agreement(r)


def per_item_subset(r, per_item: int, seed: int) -> np.ndarray:
    """Rows of ``per_item`` ratings drawn at random per item (a campaign without HITs)."""
    rng = np.random.default_rng(seed)
    order = np.lexsort((rng.random(r.size), r.item))
    counts = r.per_item()
    rank = np.empty(r.size, dtype=np.int64)
    rank[order] = np.arange(r.size) - np.repeat(np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
    return rank < per_item


def diagnostics_of(item, ann, x, n_items, n_annotators):
    obs = Observations.build(item, ann, x, n_items=n_items, n_annotators=n_annotators)
    return annotator_diagnostics(fit(obs), obs)


def test_real_rater_is_not_random_beside_a_random_clicker_on_the_same_items(study):
    """The rater of the study with the lowest agreement at or above the trusted level scores 60 of their items
    in a campaign of 4 ratings per item; a simulated clicker scores the same 60 items uniformly at random."""
    r, agreement = study
    trusted = np.flatnonzero(agreement >= TRUSTED_AGREEMENT)
    rater = int(trusted[np.argmin(agreement[trusted])])
    rng = np.random.default_rng(0)
    theirs = rng.choice(np.flatnonzero(r.annotator == rater), 60, replace=False)
    rows = per_item_subset(r, 4, seed=0) & (r.annotator != rater)
    rows[theirs] = True
    clicker = r.n_annotators
    d = diagnostics_of(
        np.concatenate([r.item[rows], r.item[theirs]]),
        np.concatenate([r.annotator[rows], np.full(theirs.size, clicker)]),
        np.concatenate([r.score[rows], rng.integers(0, 5, theirs.size) / 4]),  # the 1-5 scale on [0, 1]
        r.n_items,
        r.n_annotators + 1,
    )
    assert d.n_scores[rater] == d.n_scores[clicker] == 60
    assert d.flag[clicker] == "random" and d.p_random[clicker] > 0.01
    assert "no better than chance" in d.reason[clicker]
    assert d.flag[rater] != "random" and d.p_random[rater] < 1e-4
    assert (d.flag[: r.n_annotators] != "random").all()


def test_no_trusted_rater_is_flagged_random_in_campaign_sized_subsets(study):
    """Random subsets of 3, 4 and 6 ratings per item, and the replay's campaigns (HITs of 5 items from one real
    rater, the engine's allocation) at 12 per item, where many raters reach the scores ``random`` needs (seed 10:
    a trusted rater with 30 scores and agreement 0.32, flagged when ``random`` needed 30 scores)."""
    from easl_toolkit.core.simulate.replay import run_one

    r, agreement = study
    for per_item in (3, 4, 6):
        for seed in (0, 1):
            rows = per_item_subset(r, per_item, seed)
            d = diagnostics_of(r.item[rows], r.annotator[rows], r.score[rows], r.n_items, r.n_annotators)
            random = np.flatnonzero(d.flag == "random")
            assert (agreement[random] < TRUSTED_AGREEMENT).all(), (per_item, seed, agreement[random])
    eligible = 0
    for per_item, seed in ((12.0, 10), (12.0, 1)):
        d = run_one(r, "aware", seed, max_per_item=per_item)["annotators"]
        random = d.loc[d["flag"] == "random", "annotator"].to_numpy(dtype=np.int64)
        assert (agreement[random] < TRUSTED_AGREEMENT).all(), (per_item, seed, agreement[random])
        eligible += int((d["n_scores"] >= RANDOM_MIN_SCORES).sum())
    assert eligible >= 50  # the test bites: many raters could have been flagged


def test_simulated_random_clickers_are_flagged_random_with_few_false_flags():
    """The study's M4 annotators (2 of 20 click at random), counted among annotators with >= 30 scores; the 20+
    seed figures are in the module docstring of core.models.aware.diagnostics."""
    from easl_toolkit.core.simulate.aware_study import run_one
    from easl_toolkit.core.simulate.aware_world import beta_oracle

    truth = beta_oracle(150)
    caught = total = false = honest = 0
    for seed in range(5):
        row = run_one(truth, "M4", "aware", seed)[-1]
        caught, total = caught + row["spam_flagged"], total + row["spam_total"]
        false, honest = false + row["false_flags"], honest + row["honest_total"]
    assert total >= 8 and caught / total >= 0.9
    assert false / honest <= 0.02


def test_annotators_who_all_give_the_same_score_are_not_flagged_random():
    rng = np.random.default_rng(2)
    item = np.repeat(np.arange(100), 5)
    ann = rng.integers(8, size=item.size)
    d = diagnostics_of(item, ann, np.full(item.size, 0.75), 100, 8)
    assert np.isnan(d.agreement).all() and np.isnan(d.p_random).all()
    assert (d.flag != "random").all()


def test_an_annotator_repeating_one_score_is_collapsed_not_random():
    rng = np.random.default_rng(3)
    truth = rng.beta(2, 2, 150)
    item = np.repeat(np.arange(150), 4)
    ann = rng.integers(10, size=item.size)
    x = np.clip(truth[item] + rng.normal(0, 0.1, item.size), 0, 1)
    x[ann == 4] = 0.6
    d = diagnostics_of(item, ann, x, 150, 10)
    assert d.flag[4] == "collapsed" and np.isnan(d.p_random[4])
    assert (np.delete(d.flag, 4) == "").all()


def test_a_clicker_with_too_few_scores_is_noisy_not_random():
    """Below RANDOM_MIN_SCORES the test cannot tell a clicker from a weak rater: the clicker shows as noisy, and
    the reason says what ``random`` needs."""
    rng = np.random.default_rng(4)
    truth = rng.beta(2, 2, 200)
    item = np.repeat(np.arange(200), 4)
    ann = rng.integers(10, size=item.size)
    x = np.clip(truth[item] + rng.normal(0, 0.1, item.size), 0, 1)
    clicker = np.flatnonzero(ann == 9)
    ann[clicker[20:]] = rng.integers(9, size=clicker.size - 20)  # the clicker keeps 20 scores
    x[clicker[:20]] = rng.random(20)
    d = diagnostics_of(item, ann, x, 200, 10)
    assert d.n_scores[9] == 20 and d.flag[9] == "noisy"
    assert f"`random` needs {RANDOM_MIN_SCORES}" in d.reason[9]
    assert (d.flag[:9] == "").all()
