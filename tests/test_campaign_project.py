"""Evaluation campaigns as projects: ``easl init --systems``, next / ingest / status / verify on a real project file
with simulated annotators (a careful one, one offset by +1, a random clicker), the recorded inclusion
probabilities, the estimates against ``core.campaign.estimators.estimate``, the stopping rule on the interval
width, the system scores kept from annotators, and every refusal of bad input."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pandas as pd
import pytest

from easl_toolkit.core.campaign import project as cp
from easl_toolkit.core.campaign.estimators import estimate
from easl_toolkit.core.campaign.model import cross_fitted_predictions
from easl_toolkit.core.errors import HyperParameterError
from easl_toolkit.core.models import Hyper
from easl_toolkit.core.models.hyper import CAMPAIGN_TARGETS
from easl_toolkit.core.store import Project
from easl_toolkit.core.store.inputs import read_covariates, read_design
from easl_toolkit.tui.cli import main
from easl_toolkit.tui.commands import init as init_command

N = 400
ANNOTATORS = ("careful", "offset", "random")


@pytest.fixture
def world() -> dict:
    """True scores of N responses on 1-6 and two systems: a good one (r about 0.9) and one of pure noise."""
    rng = np.random.default_rng(7)
    truth = np.clip(rng.normal(3.5, 0.9, N), 1, 6)
    return {
        "truth": truth,
        "items": pd.DataFrame(
            {
                "id": [f"r{i:03d}" for i in range(N)],
                "text": [f"response {i}" for i in range(N)],
                "good": np.round(truth + rng.normal(0, 0.4, N), 3),
                "noise": np.round(rng.normal(3.5, 0.9, N), 3),
            }
        ),
    }


def answers(hits: list[dict], truth: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
    """One annotator per HIT, drawn at random: careful (truth + N(0, 0.4), rounded), offset (the same + 1) or a
    random clicker (uniform on 1..6)."""
    rows = []
    for h in hits:
        a = int(rng.integers(3))
        for item in h["items"]:
            t = truth[int(item["item_id"][1:])]
            score = [t + rng.normal(0, 0.4), t + 1 + rng.normal(0, 0.4), rng.integers(1, 7)][a]
            rows.append({"hit_id": h["hit_id"], "item_id": item["item_id"], "annotator": ANNOTATORS[a], "score": score})
    frame = pd.DataFrame(rows)
    frame["score"] = np.clip(np.round(frame["score"].astype(float)), 1, 6)
    return frame


def init(tmp_path, world, *extra: str) -> str:
    items = tmp_path / "responses.csv"
    world["items"].to_csv(items, index=False)
    path = str(tmp_path / "campaign.easl")
    args = ["init", path, "--items", str(items), "--systems", "good", "noise", "--score-range", "1", "6"]
    assert main([*args, "--hits-per-iteration", "12", *extra]) == 0
    return path


def run_iterations(path: str, world: dict, rounds: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    with Project.open(path) as project:
        for _ in range(rounds):
            hits = project.next_hits()
            if not hits:
                break
            project.ingest(answers(hits, world["truth"], rng), source="test")


def test_round_trip_reports_every_metric_with_intervals_and_leaves_the_random_clicker_out(tmp_path, world, capsys):
    path = init(tmp_path, world)
    run_iterations(path, world, 10)
    capsys.readouterr()
    assert main(["status", path, "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    stop = status["stop"]
    assert status["method"] == "campaign" and status["schema_version"] == 4
    assert set(stop["systems"]) == {"good", "noise"}
    assert set(stop["systems"]["good"]) == {"r", "qwk", "rmse", "smd", "prmse"}
    good, noise = stop["systems"]["good"], stop["systems"]["noise"]
    assert good["r"]["ci_low"] < good["r"]["estimate"] < good["r"]["ci_high"]
    assert good["r"]["estimate"] > 0.7 and abs(noise["r"]["estimate"]) < 0.3
    assert stop["human"]["hh_r"]["estimate"] > 0.5
    assert stop["cost_score_all_once"] == N and stop["cost_score_all_twice"] == 2 * N
    assert stop["human_scores_counted"] < stop["human_scores_spent"]
    assert stop["annotators_left_out"] == 1 and stop["ratings_left_out"] > 0
    with Project.open(path, readonly=True) as project:
        table = project.annotator_table().set_index("annotator")
        assert table.loc["random", "flag"] == "random"
        state = project.state()
        ratings = project.ratings()
    # the clicker's ratings are not counted: a response rated by the clicker alone has no human score
    by_clicker = ratings.groupby("item_id")["annotator"].agg(lambda a: set(a) == {"random"})
    alone = [int(i[1:]) for i in by_clicker[by_clicker].index]
    assert alone and np.isnan(state["first"][alone]).all()
    assert main(["status", path]) == 0
    shown = capsys.readouterr().out
    assert "estimates with 95% intervals" in shown and "scoring every response once / twice" in shown
    assert "1 annotator left out as random clickers" in re.sub(r"[│\s]+", " ", shown)


def test_easl_verify_passes_on_a_campaign_also_after_a_new_design_is_recorded(tmp_path, world, capsys):
    path = init(tmp_path, world)
    run_iterations(path, world, 4)
    assert main(["verify", path]) == 0
    assert main(["next", path]) == 0  # a new iteration and its design, no new score
    assert main(["verify", path]) == 0
    assert "ok: the cached state equals the replay" in capsys.readouterr().out


def test_recorded_probabilities_survive_reopening_and_weight_the_estimates(tmp_path, world):
    path = init(tmp_path, world)
    run_iterations(path, world, 3)
    with Project.open(path) as project:
        project.next_hits()  # iteration 4 drawn and recorded with its design
        it = project.iteration()
        design = read_design(project.db.conn)
        estimates = project.model.estimates(project.state())
    with Project.open(path, readonly=True) as project:
        again = read_design(project.db.conn)
        assert set(again) == {"p_first", "p_second", "union_first", "union_second", "tau"}
        for name in design:
            np.testing.assert_array_equal(again[name], design[name])
        assert read_design(project.db.conn, it).keys() == design.keys()
        hits = project.hits(it)
        chosen = {i["item_id"] for h in hits for i in h["items"]}
        probabilities = again["p_first"][[int(i[1:]) for i in chosen]]
        assert (probabilities > 0).all() and (probabilities <= 1).all()
        later = project.model.estimates(project.state())
    np.testing.assert_array_equal(estimates.value, later.value)
    # the unions grow with every iteration: 1 - prod_t (1 - p_t)
    with Project.open(path, readonly=True) as project:
        before = read_design(project.db.conn, it - 1)
    np.testing.assert_allclose(again["union_first"], 1 - (1 - before["union_first"]) * (1 - again["p_first"]))


def test_estimates_equal_the_estimator_on_the_same_arrays(tmp_path, world):
    path = init(tmp_path, world)
    run_iterations(path, world, 5)
    with Project.open(path, readonly=True) as project:
        model, state = project.model, project.state()
        got = model.estimates(state)
        names, systems = read_covariates(project.db.conn, project.n_items)
        design = read_design(project.db.conn)
    assert names == ["good", "noise"]
    np.testing.assert_array_equal(systems[:, 0], world["items"]["good"].to_numpy())
    h = Hyper(score_min=1, score_max=6)
    first, second = h.from_unit(state["first"]), h.from_unit(state["second"])
    p1 = np.where(design["union_first"] > 0, design["union_first"], 1.0)
    p2 = np.where(design["union_second"] > 0, design["union_second"], 1.0)
    s, f, g = systems[None], first[None], second[None]
    metrics = [cp.REPORTED[t] for t in cp.REPORTED]
    want = estimate(s, f, g, p1[None], p2[None], predictions=cross_fitted_predictions(s, f, g), metrics=metrics)
    assert got.labels == want.labels
    np.testing.assert_array_equal(got.value, want.value)
    np.testing.assert_array_equal(got.low, want.low)
    np.testing.assert_array_equal(got.high, want.high)


def test_the_campaign_stops_when_every_target_interval_is_narrower_than_the_width(tmp_path, world, capsys):
    path = init(tmp_path, world, "--target", "mean", "--stop-at-width", "2.5")
    run_iterations(path, world, 1)  # the pilot
    with Project.open(path) as project:
        assert project.next_hits() == []  # stopped: no new iteration
        figures = project.stop_figures()
    assert figures["reached"] and figures["widest_target_width"] < 2.5
    capsys.readouterr()
    assert main(["next", path]) == 0
    assert "stopped: no new iteration" in capsys.readouterr().err


def test_system_scores_are_kept_from_annotators(tmp_path, world, capsys):
    path = init(tmp_path, world)
    capsys.readouterr()
    assert main(["next", path]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert records and all(set(i) == {"item_id", "text"} for r in records for i in r["items"])
    with Project.open(path, readonly=True) as project:
        assert list(project.items().columns) == ["item_id", "text"]
        assert project.catalog.columns == []


def test_short_hits_of_a_campaign_are_recorded_and_written_whole(tmp_path, world):
    path = init(tmp_path, world)
    with Project.open(path) as project:
        hits = project.open_hits()
        sizes = [len(h["items"]) for h in hits]
        assert max(sizes) == 5
        out = tmp_path / "hits.csv"
        assert project.next_hits_file(out, "csv") == len(hits)
        assert len(pd.read_csv(out)) == sum(sizes)


BAD_CELLS = [
    ("", "the response has no score of this system"),
    ("abc", "the system score is not a number ('abc')"),
    ("inf", "the system score is not finite ('inf')"),
]


@pytest.mark.parametrize(("cell", "reason"), BAD_CELLS)
def test_a_bad_system_score_is_one_located_sentence_and_no_file(tmp_path, world, capsys, cell, reason):
    items = world["items"].astype({"noise": object})
    items.loc[6, "noise"] = cell
    path = tmp_path / "responses.csv"
    items.to_csv(path, index=False)
    project = tmp_path / "c.easl"
    assert main(["init", str(project), "--items", str(path), "--systems", "good", "noise"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"error: {path}:8: column 'noise': {reason}."
    assert not os.path.exists(project) and os.listdir(tmp_path) == ["responses.csv"]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--systems", "text"], "column 'text' is both a system column (--systems) and the text column"),
        (["--systems", "id"], "column 'id' is both a system column (--systems) and the id column"),
        (["--systems", "good", "--method", "aware"], "--systems needs an evaluation campaign"),
        (["--target", "r"], "--target needs an evaluation campaign"),
        (["--systems", "good", "--target", "r,kappa"], "--target 'kappa': no such metric"),
        (["--systems", "good", "--stop-at-width", "0"], "--stop-at-width 0: give a positive interval width"),
        (["--systems", "good", "--stop-at-width", "-1"], "--stop-at-width -1: give a positive interval width"),
        (["--systems", "nope"], "system column 'nope' not found"),
        (["--method", "campaign"], "--method campaign needs --systems"),
    ],
)
def test_bad_campaign_flags_are_refused_and_write_nothing(tmp_path, world, capsys, flags, message):
    path = tmp_path / "responses.csv"
    world["items"].to_csv(path, index=False)
    project = tmp_path / "c.easl"
    assert main(["init", str(project), "--items", str(path), *flags]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not os.path.exists(project) and os.listdir(tmp_path) == ["responses.csv"]


def test_hyper_refuses_nonsense_combinations():
    with pytest.raises(HyperParameterError, match="systems"):
        Hyper(method="aware", systems=("a",))
    with pytest.raises(HyperParameterError, match="at least one system"):
        Hyper(method="campaign")
    with pytest.raises(HyperParameterError, match="targets"):
        Hyper(method="campaign", systems=("a",), targets=("kappa",))
    with pytest.raises(HyperParameterError, match="stop_width"):
        Hyper(method="campaign", systems=("a",), stop_width=0.0)
    with pytest.raises(HyperParameterError, match="stop_width"):
        Hyper(method="easl", stop_width=0.1)
    with pytest.raises(HyperParameterError, match="stop_at"):
        Hyper(method="campaign", systems=("a",), stop_at=0.9)
    h = Hyper(method="campaign", systems=("a", "b"), targets=("r",), stop_width=0.05)
    assert Hyper.from_json(h.to_json()) == h
    assert "systems" not in Hyper(method="aware").to_json()


def test_the_cli_names_the_metrics_of_the_engine():
    assert init_command.CAMPAIGN_TARGETS == CAMPAIGN_TARGETS


def test_init_names_the_label_studio_extra_when_the_sdk_is_missing(tmp_path, world, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "label_studio_sdk" else real(name)
    )
    init(tmp_path, world)
    out = capsys.readouterr().out
    assert "pip install 'easl-toolkit[labelstudio]'" in out and "easl ls setup" in out
    monkeypatch.setattr(importlib.util, "find_spec", real)
    items = tmp_path / "responses.csv"
    assert main(["init", str(tmp_path / "b.easl"), "--items", str(items), "--method", "da"]) == 0
    out = capsys.readouterr().out
    assert "pip install" not in out and f"easl ls setup {tmp_path / 'b.easl'} --url URL" in out


def test_the_z_quantile_of_the_intervals_is_the_normal_quantile():
    from scipy.stats import norm

    from easl_toolkit.core.campaign.estimators import Z95

    assert float(norm.ppf(0.975)) == Z95


def test_the_monitor_reads_a_campaign(tmp_path, world):
    from pathlib import Path

    from easl_toolkit.tui.screens.monitor_data import MonitorSource

    path = init(tmp_path, world)
    run_iterations(path, world, 2)
    snapshot = MonitorSource(Path(path)).poll(force=True)
    assert snapshot is not None and snapshot.aware is not None
    assert snapshot.aware.stop["kind"] == "evaluation campaign" and "good" in snapshot.aware.stop["systems"]


def test_the_monitor_screen_shows_a_campaigns_metrics(tmp_path, world):
    import asyncio
    import io

    from rich.console import Console
    from textual.widgets import Static

    from easl_toolkit.tui.app import EaslApp
    from easl_toolkit.tui.screens.monitor import MonitorScreen

    path = init(tmp_path, world)
    run_iterations(path, world, 2)

    async def shown() -> str:
        app = EaslApp(path, start="monitor", poll_interval=0.1)
        async with app.run_test(size=(120, 60)) as pilot:
            for _ in range(300):
                if isinstance(app.screen, MonitorScreen) and app.screen.snapshot is not None:
                    break
                await pilot.pause(0.05)
            panel = app.screen.query_one("#aware", Static)
            console = Console(width=120, record=True, file=io.StringIO())
            console.print(panel.content)
            return console.export_text()

    text = asyncio.run(shown())
    assert "estimate ± half the 95% interval" in text and "good" in text and "every response once / twice" in text


@pytest.mark.parametrize(
    ("records", "where"),
    [
        ('{"id":"a","text":"x","s":1.5}\n{"id":"b","text":"y"}\n', ":2: column 's': the response has no score"),
        ('{"id":"b","text":"y"}\n{"id":"a","text":"x"}\n', ":1: column 's': the response has no score"),
        ('{"id":"a","text":"x","s":1.5}\n{"id":"b","text":"y","s":true}\n', ":2: column 's': the system score is not"),
    ],
)
def test_json_lines_without_a_system_score_are_refused_at_their_line(tmp_path, capsys, records, where):
    items = tmp_path / "responses.jsonl"
    items.write_text(records)
    assert main(["init", str(tmp_path / "c.easl"), "--items", str(items), "--systems", "s", "--hit-size", "2"]) == 1
    assert f"{items}{where}" in capsys.readouterr().err
    assert os.listdir(tmp_path) == ["responses.jsonl"]


def test_every_hit_of_a_campaign_is_whole_once_responses_are_scored_twice(tmp_path, world):
    """A Label Studio task shows a fixed number of responses: the pilot is whole HITs, and a later iteration's short
    HITs are filled with responses scored twice already (a further rating is no first or second score)."""
    path = init(tmp_path, world)
    rng = np.random.default_rng(3)
    n_fillers = 0
    with Project.open(path) as project:
        for _ in range(4):
            hits = project.next_hits()
            assert all(len(h["items"]) == 5 for h in hits)
            state = project.state()
            twice = ~np.isnan(state["first"]) & ~np.isnan(state["second"])
            shown = np.array([int(it["item_id"][1:]) for h in hits for it in h["items"]])
            n_fillers += int(twice[shown].sum())
            project.ingest(answers(hits, world["truth"], rng), source="test")
    assert n_fillers > 0


def test_arrange_fills_the_short_hit_with_responses_scored_twice_and_never_puts_a_response_twice_in_a_hit():
    new1, new2 = np.zeros(30, dtype=bool), np.zeros(30, dtype=bool)
    new1[:7], new2[3:5] = True, True  # 9 slots: one short HIT, responses 3 and 4 drawn for both scores
    for seed in range(20):
        filled = cp.arrange(new1, new2, 5, np.random.default_rng(seed), filler=np.arange(20, 30))
        assert filled.shape == (2, 5) and (filled >= 0).all()
        assert all(len(set(row)) == 5 for row in filled)
        assert sorted(v for v in filled.ravel() if v < 20) == [0, 1, 2, 3, 3, 4, 4, 5, 6]
    short = cp.arrange(new1, new2, 5, np.random.default_rng(0))
    assert (short == -1).sum() == 1 and all(len(set(row[row >= 0])) == (row >= 0).sum() for row in short)


def test_the_pilot_draws_whole_hits_with_the_recorded_probabilities():
    n1, n2 = cp.pilot_hits(400, 12, 5)
    assert (n1, n2) == (50, 10)
    new1, new2 = cp.draw_pilot(400, n1, n2, np.random.default_rng(0))
    assert new1.sum() == n1 and new2.sum() == n2 and not (new2 & ~new1).any()
    design = cp.pilot_design(400, n1, n2)
    assert design["p_first"][0] == n1 / 400 and design["p_second"][0] == n2 / 400
    assert cp.pilot_hits(400, 1, 5) == (5, 0)


def test_evaluate_project_on_a_campaign_adds_the_design_weighted_estimates_of_the_system(tmp_path, world, capsys):
    """`easl evaluate --project` on an evaluation campaign: the unweighted figures of the scored responses, and the
    design-weighted estimates for every response (the same estimator as `easl status`), in JSON and the terminal."""
    path = init(tmp_path, world)
    run_iterations(path, world, 6)
    scores = tmp_path / "good.csv"
    world["items"].rename(columns={"id": "item_id"})[["item_id", "good", "noise"]].to_csv(scores, index=False)
    capsys.readouterr()
    assert main(["evaluate", "--project", path, "--system", str(scores), "good", "noise", "--json"]) == 0
    design = json.loads(capsys.readouterr().out)["raters"]["design_estimates"]
    assert main(["status", path, "--json"]) == 0
    status = json.loads(capsys.readouterr().out)["stop"]
    assert design["n_responses"] == N
    # the same systems, so the same human-score model and the same figures as easl status
    assert design["systems"]["good"]["r"] == pytest.approx(status["systems"]["good"]["r"])
    assert design["systems"]["noise"]["prmse"] == pytest.approx(status["systems"]["noise"]["prmse"])
    assert design["human"]["hh_r"] == pytest.approx(status["human"]["hh_r"])
    assert main(["evaluate", "--project", path, "--system", str(scores), "good"]) == 0
    shown = capsys.readouterr().out
    assert "design-weighted estimates for all 400 responses" in shown and "good: r " in shown
    # a system without a score for every response: said, no estimates
    world["items"].rename(columns={"id": "item_id"})[["item_id", "good"]].head(300).to_csv(scores, index=False)
    assert main(["evaluate", "--project", path, "--system", str(scores), "good", "--json"]) == 0
    design = json.loads(capsys.readouterr().out)["raters"]["design_estimates"]
    assert design["reason"] == "100 of the campaign's 400 responses have no score of a system" and not design["systems"]


def test_reported_figures_stay_within_each_metrics_range():
    from easl_toolkit.core.campaign.estimators import CampaignEstimates

    labels = (("hh_r", None), ("prmse_combined", 0), ("rmse", 0), ("mean", None))
    row = lambda *v: np.array([v], dtype=np.float64)  # noqa: E731
    est = CampaignEstimates(
        labels, row(0.9, 1.2, 0.1, 3.0), row(0, 0, 0, 0), row(0.6, 0.9, -0.2, 2.0), row(1.2, 1.5, 0.4, 4.0),
        row(0, 0, 0, 0), np.array([["", "", "", ""]], dtype=object),
    )  # fmt: skip
    rep = cp.report(est, ["model"], (), None)
    assert rep.overall["hh_r"]["ci_high"] == 1.0 and rep.overall["hh_r"]["estimate"] == 0.9
    assert rep.systems["model"]["prmse"]["estimate"] == 1.0 and rep.systems["model"]["prmse"]["ci_high"] == 1.0
    assert rep.systems["model"]["rmse"]["ci_low"] == 0.0
    assert rep.overall["mean"]["ci_low"] == 2.0 and rep.overall["mean"]["ci_high"] == 4.0


def test_status_counts_the_ratings_of_annotators_too_new_to_be_checked_for_random_clicking(tmp_path, world, capsys):
    path = init(tmp_path, world)
    run_iterations(path, world, 1)  # one iteration: every annotator has fewer ratings than the clicker test needs
    capsys.readouterr()
    assert main(["status", path, "--json"]) == 0
    stop = json.loads(capsys.readouterr().out)["stop"]
    assert stop["annotators_left_out"] == 0 and stop["ratings_left_out"] == 0
    assert stop["ratings_unchecked"] == stop["human_scores_spent"] > 0
    assert stop["annotators_unchecked"] == len(ANNOTATORS)
    assert main(["status", path]) == 0
    shown = re.sub(r"[│\s]+", " ", capsys.readouterr().out)
    assert f"{stop['ratings_unchecked']} counted ratings from 3 annotators with too few ratings yet" in shown


def test_the_stop_width_of_a_campaign_can_be_set_changed_and_removed_later(tmp_path, world, capsys):
    path = init(tmp_path, world)
    assert main(["status", path, "--set-stop-width", "0.2"]) == 0
    assert "stop width: 0.2 (was none)" in capsys.readouterr().err
    with Project.open(path, readonly=True) as project:
        assert project.hyper.stop_width == 0.2
    assert main(["status", path, "--set-stop-width", "none", "--json"]) == 0
    out = capsys.readouterr()
    assert "stop width: none (was 0.2)" in out.err
    assert json.loads(out.out)["stop"]["reason"].startswith("no stop width (set one with easl status")


def test_the_stop_width_is_refused_on_a_project_that_is_no_campaign(tmp_path, capsys):
    items = tmp_path / "items.csv"
    items.write_text("id,text\n" + "".join(f"i{k},text {k}\n" for k in range(20)))
    path = str(tmp_path / "p.easl")
    assert main(["init", path, "--items", str(items)]) == 0
    capsys.readouterr()
    assert main(["status", path, "--set-stop-width", "0.1"]) != 0
    assert "--set-stop-width is refused: it needs the method campaign" in capsys.readouterr().err


def test_the_stop_line_names_the_target_that_has_no_interval_yet(tmp_path, world, capsys):
    path = init(tmp_path, world, "--stop-at-width", "0.2")
    run_iterations(path, world, 1)
    capsys.readouterr()
    assert main(["status", path, "--json"]) == 0
    stop = json.loads(capsys.readouterr().out)["stop"]
    assert not stop["reached"]
    assert stop["reason"].startswith("no interval yet for good prmse (")
    assert "an interval needs at least 50" in stop["reason"]


def test_second_scores_catch_up_to_the_double_scored_responses_an_interval_needs():
    n, budget = 1000, 100.0
    first, second = np.full(n, np.nan), np.full(n, np.nan)
    first[:200] = 0.5
    second[:10] = 0.5  # 10 responses scored twice: 40 short of an interval for PRMSE
    all_first, all_second = np.full(n, 0.1), np.zeros(n)
    with_prmse = cp.second_floor(all_first, all_second, second, budget, ("r", "prmse"))
    assert with_prmse.sum() == pytest.approx(min(cp.MIN_DOUBLE - 10, cp.SECOND_CATCH_UP * budget))
    r_only = cp.second_floor(all_first, all_second, second, budget, ("r",))
    assert r_only.sum() == pytest.approx(cp.PILOT_SECOND_SHARE * budget)
    second[:60] = 0.5  # enough: the design's own probabilities
    assert cp.second_floor(all_first, all_second, second, budget, ("prmse",)).sum() == 0.0
