"""The stopping rule of the aware model is not fooled by random clickers who are the only ones to score some items:
their scores count for nothing in the expected Spearman's draws and in the fewest informative scores per item
(core/models/aware/clickers.py), while a campaign without clickers stops where it did."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from scipy import stats

from easl_toolkit.core.models import Hyper
from easl_toolkit.core.models.aware.clickers import INFORMATIVE_KEY, SHARE_KEY, clicker_probability
from easl_toolkit.core.models.aware.fit import AwareState, Observations, fit
from easl_toolkit.core.models.aware.model import AwareModel
from easl_toolkit.core.models.aware.posterior import rank_figures, stop_decision
from easl_toolkit.tui.cli import main

N_ITEMS, N_FAITHFUL = 150, 18


def concentrated(seed: int, *, share: float, per_item: int = 12, n_clickers: int = 12) -> tuple[Observations, ...]:
    """``share`` of the items scored only by random clickers (uniform scores), the others only by faithful
    annotators (offset N(0, 0.1), noise 0.15), ``per_item`` distinct annotators per item; returns the observations
    (clickers numbered after the faithful) and the truth."""
    rng = np.random.default_rng(seed)
    truth = rng.beta(2, 2, N_ITEMS)
    clicked = np.zeros(N_ITEMS, dtype=bool)
    clicked[rng.permutation(N_ITEMS)[: round(share * N_ITEMS)]] = True
    offset = rng.normal(0, 0.1, N_FAITHFUL)
    items, anns, scores = [], [], []
    for i in range(N_ITEMS):
        if clicked[i]:
            a = N_FAITHFUL + rng.choice(n_clickers, per_item, replace=False)
            x = rng.random(per_item)
        else:
            a = rng.choice(N_FAITHFUL, per_item, replace=False)
            x = np.clip(truth[i] + offset[a] + rng.normal(0, 0.15, per_item), 0, 1)
        items.append(np.full(per_item, i))
        anns.append(a)
        scores.append(x)
    obs = Observations.build(np.concatenate(items), np.concatenate(anns), np.concatenate(scores), n_items=N_ITEMS)
    return obs, truth


def decide(obs: Observations, target: float = 0.9):
    model = AwareModel(Hyper(method="aware", stop_at=target))
    state = model.refit(None, obs.item, obs.annotator, obs.score, n_items=obs.n_items)
    return state, model.stop_decision(state, np.random.default_rng(5))


def test_clickers_alone_on_a_fifth_of_the_items_do_not_stop_the_rule_and_the_figure_is_near_the_truth():
    obs, truth = concentrated(0, share=0.2)
    st = fit(obs)
    true_rho = stats.spearmanr(st.mu, truth).statistic
    assert true_rho < 0.9  # a fifth of the ranks are noise
    # the rule before it doubted clickers: expected Spearman from the fit alone, raw counts; it stopped
    old = stop_decision(st, rank_figures(st, np.random.default_rng(5)).expected_spearman, target=0.9)
    assert old.stop and old.expected_spearman > true_rho + 0.05
    state, d = decide(obs)
    assert d is not None and not d.stop
    assert abs(d.expected_spearman - true_rho) < 0.05
    assert d.min_informative < 0.5 and "no score from an annotator who agrees" in d.reason
    p = clicker_probability(st, obs)
    assert np.all(p[N_FAITHFUL:] > 0.9) and np.all(p[:N_FAITHFUL] == 0.0)


def test_without_clickers_the_rule_decides_as_before():
    obs, truth = concentrated(0, share=0.0)
    state, d = decide(obs)
    st = AwareState.from_arrays(state)
    old = stop_decision(st, rank_figures(st, np.random.default_rng(5)).expected_spearman, target=0.9)
    assert np.array_equal(state[INFORMATIVE_KEY], st.count) and np.all(state[SHARE_KEY] == 1.0)
    assert d is not None and d.stop and old.stop
    assert d.expected_spearman == old.expected_spearman  # the same draws: nothing was doubted


def test_a_state_cached_without_the_informative_counts_is_decided_on_the_raw_counts():
    obs, _ = concentrated(1, share=0.0, per_item=4)
    model = AwareModel(Hyper(method="aware", stop_at=0.9))
    state = fit(obs).to_arrays()  # what an older version cached
    d = model.stop_decision(state, np.random.default_rng(5))
    assert d is not None and d.min_informative == d.min_count == 4


def test_cli_status_of_a_project_whose_clickers_alone_score_some_items_does_not_reach_the_target(tmp_path, capsys):
    obs, truth = concentrated(2, share=0.2)
    ids = [f"it{i}" for i in range(N_ITEMS)]
    pd.DataFrame({"id": ids, "text": ids}).to_csv(tmp_path / "items.csv", index=False)
    names = np.array([f"rater{a}" if a < N_FAITHFUL else f"clicker{a}" for a in range(obs.n_annotators)])
    ratings = pd.DataFrame(
        {"item_id": np.array(ids)[obs.item], "score": np.round(100 * obs.score, 1), "annotator": names[obs.annotator]}
    )
    ratings.to_csv(tmp_path / "ann.csv", index=False)
    project = str(tmp_path / "p.easl")
    args = ["--method", "aware", "--stop-at", "0.9", "--score-range", "0", "100", "--question", "q?"]
    assert main(["init", project, "--items", str(tmp_path / "items.csv"), *args]) == 0
    assert main(["ingest", project, str(tmp_path / "ann.csv")]) == 0
    assert main(["export", project, "--output", str(tmp_path / "est.csv")]) == 0
    capsys.readouterr()
    assert main(["status", project, "--json"]) == 0
    stop = json.loads(capsys.readouterr().out)["stop"]
    est = pd.read_csv(tmp_path / "est.csv").set_index("item_id").loc[ids, "estimate"].to_numpy()
    true_rho = stats.spearmanr(est, truth).statistic
    assert stop["reached"] is False and "no score from an annotator who agrees" in stop["reason"]
    assert abs(stop["expected_spearman"] - true_rho) < 0.06


def test_hit_rate_with_clickers_concentrated_on_some_items_is_at_least_nine_in_ten():
    from easl_toolkit.core.simulate.aware_study import clicker_stopping

    table = clicker_stopping(settings=(("M4", 0.1, 1.0), ("M4", 0.1, 0.9), ("M4", 0.2, 0.9)), seeds=range(2000, 2008))
    rate = {}
    for rule, t in table.groupby("rule"):
        stopped = int(t["stopped"].sum())
        rate[rule] = (float((t["hit_rate"].fillna(0) * t["stopped"]).sum()) / max(stopped, 1), stopped)
    assert rate["before"][0] < 0.9  # the scenario fools the fit alone
    assert rate["after"][1] >= 6 and rate["after"][0] >= 0.9  # the rule still stops where it can, and is right
