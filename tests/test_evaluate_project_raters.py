"""``easl evaluate --project`` through the campaign's model: a random clicker left out and named, annotator-corrected
scores, ratings without an annotator as ``(none)``, repeated ratings averaged, ``--against estimates``, and a project
without annotator terms evaluated as before (``core/metrics/project_raters.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest

from easl_toolkit.core import metrics as M
from easl_toolkit.core.metrics.output_schema import SCHEMA_VERSION, schema_path
from easl_toolkit.core.metrics.project_raters import NO_ANNOTATOR, ProjectRatings, rater_table
from easl_toolkit.core.store import Project
from easl_toolkit.tui.cli import main

N_ITEMS = 30


def _campaign(folder: Path, method: str | None = None) -> tuple[Path, np.ndarray]:
    """A 30-item 1-5 project: a careful annotator, one offset by +1, one clicking uniformly at random (62 ratings
    each: every item twice, two items a third time), one rating without an annotator. Returns the project and the
    items' true scores."""
    rng = np.random.default_rng(7)
    truth = rng.uniform(1.2, 4.8, N_ITEMS)
    ids = [f"i{k:02d}" for k in range(N_ITEMS)]
    pd.DataFrame({"id": ids, "text": [f"response {k}" for k in range(N_ITEMS)]}).to_csv(
        folder / "items.csv", index=False
    )
    rows = []
    for who, shift in (("careful", 0.0), ("offset", 1.0), ("random", None)):
        for k in np.concatenate([rng.permutation(N_ITEMS), rng.permutation(N_ITEMS), rng.permutation(N_ITEMS)[:2]]):
            raw = rng.integers(1, 6) if shift is None else truth[k] + shift + rng.normal(0, 0.35)
            rows.append({"item_id": ids[k], "annotator": who, "score": float(np.clip(np.rint(raw), 1, 5))})
    rows.append({"item_id": ids[3], "annotator": None, "score": float(np.rint(truth[3]))})
    ratings = pd.DataFrame(rows).assign(annotation_id=[f"a{j}" for j in range(len(rows))])
    ratings.to_csv(folder / "ratings.csv", index=False)
    project = folder / "p.easl"
    init = ["init", str(project), "--items", str(folder / "items.csv"), "--score-range", "1", "5"]
    assert main(init + (["--method", method] if method else [])) == 0
    assert main(["ingest", str(project), str(folder / "ratings.csv")]) == 0
    return project, truth


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, np.ndarray]:
    """The aware campaign and a system file: ``careful_level`` at r 0.88 with the careful annotator's scores, on
    their level; ``pool_level`` the same shifted to the level of the annotators kept (careful and offset)."""
    folder = tmp_path_factory.mktemp("raters")
    project, truth = _campaign(folder)
    ratings = pd.read_csv(folder / "ratings.csv")
    careful = ratings[ratings["annotator"] == "careful"].groupby("item_id")["score"].mean()
    ids = [f"i{k:02d}" for k in range(N_ITEMS)]
    z = careful.reindex(ids).to_numpy()
    z = (z - z.mean()) / z.std()
    noise = np.random.default_rng(0).normal(0, 1, N_ITEMS)
    noise -= z * (noise @ z) / (z @ z)
    system = 3 + 0.9 * (0.88 * z + np.sqrt(1 - 0.88**2) * noise / noise.std())
    pd.DataFrame({"item_id": ids, "careful_level": system, "pool_level": system + 0.46}).to_csv(
        folder / "system.csv", index=False
    )
    return project, folder / "system.csv", truth


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    capsys.readouterr()
    assert main(["evaluate", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_random_clicker_is_left_out_and_named_with_the_models_reason(campaign, capsys) -> None:
    project, system, _ = campaign
    d = _json(capsys, "--project", str(project), "--system", str(system))
    assert d["schema_version"] == SCHEMA_VERSION
    assert "random" not in d["human_columns"] and {"careful", "offset"} <= set(d["human_columns"])
    (left,) = d["raters"]["excluded"]
    assert left["annotator"] == "random" and left["flag"] == "random" and "no better than chance" in left["reason"]
    assert any("left out of the human raters" in n and "random" in n for n in d["notes"])
    jsonschema.validate(d, json.loads(schema_path().read_text(encoding="utf-8")))


def test_a_rating_without_an_annotator_is_the_rater_none_never_nan(campaign, capsys) -> None:
    project, system, _ = campaign
    d = _json(capsys, "--project", str(project), "--system", str(system))
    assert NO_ANNOTATOR in d["human_columns"] and not any(c.lower() == "nan" for c in d["human_columns"])


def test_repeated_ratings_are_averaged_not_dropped(campaign, capsys) -> None:
    project, system, _ = campaign
    d = _json(capsys, "--project", str(project), "--system", str(system), "--raw-ratings")
    # careful and offset: 62 ratings each of 30 items, so 32 repeats each; the random clicker's are left out
    assert d["raters"]["repeated_ratings"] == {"n": 64, "rule": "mean"}
    assert not any("left out (the first" in n for n in d["notes"])
    with Project.open(project, readonly=True) as p:
        ratings = p.ratings()
    careful = ratings[ratings["annotator"] == "careful"].groupby("item_id")["score"].mean()
    assert d["human_columns"][0] == "careful"
    assert d["systems"]["careful_level"]["observed"]["h_mean"] == pytest.approx(careful.mean(), abs=1e-12)


def test_the_scores_are_annotator_corrected_with_the_models_offset_and_slope(campaign) -> None:
    project, _, _ = campaign
    with Project.open(project, readonly=True) as p:
        source = ProjectRatings(p.ratings(), p.items(), (1.0, 5.0), p.annotator_table())
    table = rater_table(source)
    assert table.summary.calibration == "annotator-aware"
    terms = source.annotators.set_index(source.annotators["annotator"].fillna(NO_ANNOTATOR))
    kept = source.ratings[source.ratings["annotator"].isin(["careful", "offset"]) | source.ratings["annotator"].isna()]
    name = kept["annotator"].fillna(NO_ANNOTATOR).to_numpy()
    o, s = terms["offset"].reindex(name).to_numpy(), terms["slope"].reindex(name).to_numpy()
    corrected = np.clip(3 + s.mean() * (kept["score"].to_numpy() - 3 - o) / s + o.mean(), 1, 5)
    expected = pd.DataFrame({"item_id": kept["item_id"], "annotator": name, "score": corrected})
    expected = expected.groupby(["item_id", "annotator"])["score"].mean()
    got = table.scores.set_index(["item_id", "annotator"])["score"]
    assert np.allclose(got.reindex(expected.index).to_numpy(), expected.to_numpy(), rtol=0, atol=1e-12)


def test_prmse_against_the_corrected_raters_is_near_the_prmse_against_the_truth(campaign, capsys) -> None:
    """A system on the level of the annotators kept: its PRMSE against the corrected raters is within 0.1 of the
    PRMSE it has against the items' true scores (the simulation's), where the raw ratings (the annotators' offset
    counted as rater error) overstate it."""
    project, system, truth = campaign
    corrected = _json(capsys, "--project", str(project), "--system", str(system))
    raw = _json(capsys, "--project", str(project), "--system", str(system), "--raw-ratings")
    m = pd.read_csv(system)["pool_level"].to_numpy() - 0.46
    oracle = 1 - np.mean((m - truth) ** 2) / truth.var()
    prmse = corrected["systems"]["pool_level"]["true_score"]["prmse"]
    assert abs(prmse - oracle) < 0.1
    assert raw["systems"]["pool_level"]["true_score"]["prmse"] > oracle + 0.1


def test_against_estimates_compares_the_system_with_the_projects_own_estimates(campaign, capsys) -> None:
    project, system, _ = campaign
    d = _json(capsys, "--project", str(project), "--system", str(system), "--against", "estimates")
    assert d["human_columns"] == ["estimate"] and d["raters"]["against"] == "estimates"
    with Project.open(project, readonly=True) as p:
        est = p.estimates().set_index("item_id")["estimate"]
    scores = pd.read_csv(system).set_index("item_id")["careful_level"]
    r = np.corrcoef(scores.to_numpy(), est.reindex(scores.index).to_numpy())[0, 1]
    assert d["systems"]["careful_level"]["observed"]["corr"] == pytest.approx(r, abs=1e-12)
    assert d["all_raters"] is None and d["human_human"].get("corr") is None
    capsys.readouterr()
    assert main(["evaluate", "--project", str(project), "--system", str(system), "--against", "estimates"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "True scores (PRMSE)" not in out and "no human-human or PRMSE figures" in out


def test_against_estimates_and_raw_ratings_need_a_project(campaign, capsys) -> None:
    _, system, _ = campaign
    for flags in (["--against", "estimates"], ["--raw-ratings"]):
        assert main(["evaluate", str(system), "--human", "careful_level", "--system", "pool_level", *flags]) == 1
        assert "give --project PROJECT" in capsys.readouterr().err


def test_the_report_names_the_raters_left_out_under_human_raters(campaign, tmp_path, capsys) -> None:
    project, system, _ = campaign
    assert main(["evaluate", "--project", str(project), "--system", str(system), "--output", str(tmp_path / "r")]) == 0
    report = (tmp_path / "r" / "report.md").read_text()
    section = report.split("## Human raters", 1)[1].split("\n## ", 1)[0]
    assert "annotator-corrected" in section and "left out: random, flagged random" in section
    assert json.loads((tmp_path / "r" / "evaluation.json").read_text())["raters"]["calibration"] == "annotator-aware"


def test_a_project_without_annotator_terms_is_evaluated_on_its_ratings_as_given(tmp_path, capsys) -> None:
    project, _ = _campaign(tmp_path, method="da")
    ids = [f"i{k:02d}" for k in range(N_ITEMS)]
    pd.DataFrame({"item_id": ids, "model": np.linspace(1, 5, N_ITEMS)}).to_csv(tmp_path / "s.csv", index=False)
    d = _json(capsys, "--project", str(project), "--system", str(tmp_path / "s.csv"))
    assert d["raters"]["calibration"] == "none" and d["raters"]["excluded"] == []
    assert sorted(d["human_columns"]) == sorted(["careful", "offset", "random", NO_ANNOTATOR])
    assert any("no calibration applied" in n for n in d["notes"])
    ratings = pd.read_csv(tmp_path / "ratings.csv")
    ratings["annotator"] = ratings["annotator"].fillna(NO_ANNOTATOR)
    h = ratings.groupby(["item_id", "annotator"])["score"].mean().unstack()[d["human_columns"]]
    system = pd.read_csv(tmp_path / "s.csv").set_index("item_id")["model"].reindex(h.index)
    assert d["systems"]["model"]["true_score"]["prmse"] == pytest.approx(M.prmse(system, h.to_numpy()), abs=1e-12)


def test_the_long_form_names_a_row_without_a_rater_none(tmp_path, capsys) -> None:
    path = tmp_path / "long.csv"
    pd.DataFrame(
        {"item": ["a", "a", "b", "b", "c", "c"], "rater": ["x", "", "x", "", "x", None], "score": [1, 2, 3, 3, 4, 5]}
    ).assign(model=[1.5, 1.5, 3.0, 3.0, 4.5, 4.5]).to_csv(path, index=False)
    d = _json(capsys, str(path), "--long", "item,rater,score", "--system", "model", "--scale", "1", "5")
    assert sorted(d["human_columns"]) == sorted(["x", NO_ANNOTATOR])


def test_an_annotator_whose_slope_is_not_positive_is_left_out_of_the_corrected_raters() -> None:
    ratings = pd.DataFrame(
        {"item_id": ["a", "b", "a", "b"], "annotator": ["x", "x", "y", "y"], "score": [1.0, 5.0, 2.0, 4.0]}
    )
    annotators = pd.DataFrame(
        {"annotator": ["x", "y"], "offset": [0.5, 0.0], "slope": [-0.2, 1.0], "flag": ["", ""], "reason": ["", ""]}
    )
    source = ProjectRatings(ratings, pd.DataFrame({"item_id": ["a", "b"]}), (1.0, 5.0), annotators)
    corrected = rater_table(source)
    assert [(e.name, e.flag) for e in corrected.summary.excluded] == [("x", "slope")]
    assert set(corrected.scores["annotator"]) == {"y"}
    raw = rater_table(source, raw=True)
    assert raw.summary.excluded == () and set(raw.scores["annotator"]) == {"x", "y"}
