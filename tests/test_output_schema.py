"""The ``easl evaluate --json`` object: valid against the shipped JSON Schema in every mode, and never a key lost.

Each schema version has a frozen list of its key paths (``tests/schema_keys/evaluate_v<N>.txt``, written when the
version was released); a key renamed, moved or removed without raising ``SCHEMA_VERSION`` makes
``test_no_key_of_the_current_schema_disappears`` fail with the keys that changed. ``--schema 1`` must still give
every key that easl-toolkit 0.1.0 wrote.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest

from easl_toolkit.core.metrics.output_schema import RSMTOOL_NAMES, SCHEMA_VERSION, schema_path
from easl_toolkit.tui.cli import main

KEYS_DIR = Path(__file__).parent / "schema_keys"


@pytest.fixture(scope="module")
def ratings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """60 responses, three human columns on 1..6 (the third half missing), one system, two subgroups."""
    rng = np.random.default_rng(0)
    n = 60
    truth = rng.normal(3, 1, n)
    human = {f"h{k}": np.clip(np.round(truth + rng.normal(0, 0.5, n)), 1, 6) for k in (1, 2, 3)}
    human["h3"][::2] = np.nan
    frame = pd.DataFrame(
        {"id": range(n), **human, "sys": truth + rng.normal(0, 0.4, n), "grp": rng.choice(["a", "b"], n)}
    )
    path = tmp_path_factory.mktemp("schema") / "ratings.csv"
    frame.to_csv(path, index=False)
    return path


def _evaluate(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    capsys.readouterr()
    assert main(["evaluate", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _key_paths(obj: object, prefix: str = "") -> set[str]:
    if not isinstance(obj, dict):
        return set()
    paths = set()
    for key, value in obj.items():
        path = f"{prefix}.{key}"
        paths |= {path} | _key_paths(value, path)
    return paths


def _frozen(version: int) -> set[str]:
    return set((KEYS_DIR / f"evaluate_v{version}.txt").read_text(encoding="utf-8").split())


WIDE = ("--human", "h1", "h2", "--system", "sys", "--id", "id", "--scale", "1", "6")
MODES = {
    "one human column": ("--human", "h1", "--system", "sys", "--scale", "1", "6"),
    "two humans, subgroups, bootstrap": (*WIDE, "--group", "grp", "--bootstrap", "20"),
    "three humans": ("--human", "h1", "h2", "h3", "--system", "sys", "--scale", "1", "6"),
    "constant system": ("--human", "h1", "h2", "--system", "h1", "--scale", "1", "6"),
}


@pytest.mark.parametrize("mode", [m for m in MODES if m != "constant system"])
def test_every_wide_mode_validates_against_the_shipped_schema(ratings: Path, capsys, mode: str) -> None:
    data = _evaluate(capsys, str(ratings), *MODES[mode])
    jsonschema.validate(data, json.loads(schema_path().read_text(encoding="utf-8")))
    assert data["schema_version"] == SCHEMA_VERSION


def test_long_form_and_degenerate_scores_validate_against_the_shipped_schema(ratings: Path, capsys, tmp_path) -> None:
    frame = pd.read_csv(ratings)
    long = frame.melt(id_vars=["id"], value_vars=["h1", "h2", "h3"], var_name="rater", value_name="score").dropna()
    long = pd.concat([long, frame.assign(rater="model", score=3.0)[["id", "rater", "score"]]])  # a constant system
    path = tmp_path / "long.csv"
    long.to_csv(path, index=False)
    data = _evaluate(capsys, str(path), "--long", "id,rater,score", "--system", "model", "--scale", "1", "6")
    jsonschema.validate(data, json.loads(schema_path().read_text(encoding="utf-8")))
    assert data["systems"]["model"]["observed"]["corr"] is None
    assert data["systems"]["model"]["observed"]["corr_reason"]


def test_rsmtool_names_stand_beside_ours_with_the_same_values(ratings: Path, capsys) -> None:
    data = _evaluate(capsys, str(ratings), *WIDE)
    blocks = [data["human_human"], data["systems"]["sys"]["observed"], data["systems"]["sys"]["degradation"]]
    for block in blocks:
        for ours, theirs in RSMTOOL_NAMES.items():
            assert block[theirs] == block[ours], (ours, theirs)
    assert {"kappa", "wtkappa", "SMD", "RMSE", "R2"} <= set(data["systems"]["sys"]["observed"])


def test_no_key_of_the_current_schema_disappears(ratings: Path, capsys) -> None:
    data = _evaluate(capsys, str(ratings), *MODES["two humans, subgroups, bootstrap"])
    missing = _frozen(SCHEMA_VERSION) - _key_paths(data)
    assert not missing, (
        f"keys of schema {SCHEMA_VERSION} are gone (renamed or moved?): {sorted(missing)[:10]}; raise SCHEMA_VERSION "
        "(core/metrics/output_schema.py), freeze the new list in tests/schema_keys and note it in CHANGELOG.md"
    )


def test_schema_1_mode_gives_every_key_that_version_0_1_0_wrote(ratings: Path, capsys) -> None:
    data = _evaluate(capsys, str(ratings), *MODES["two humans, subgroups, bootstrap"], "--schema", "1")
    assert data["schema_version"] == 1
    missing = _frozen(1) - _key_paths(data)
    assert not missing, sorted(missing)[:10]
    observed = data["systems"]["sys"]["observed"]
    assert observed["kappa"] == _evaluate(capsys, str(ratings), *WIDE)["systems"]["sys"]["observed"]["conger_kappa"]
    assert "conger_kappa" not in observed and "scott_pi_quadratic" in observed


def test_schema_1_counts_the_responses_kept_after_the_drops(tmp_path: Path, capsys) -> None:
    path = tmp_path / "gaps.csv"
    pd.DataFrame({"h1": [1, 2, None, 4, 5], "h2": [1, 2, 3, 4, None], "sys": [1, 2, 3, 4, 5.0]}).to_csv(
        path, index=False
    )
    current = _evaluate(capsys, str(path), "--human", "h1", "h2", "--system", "sys", "--scale", "1", "5")
    old = _evaluate(capsys, str(path), "--human", "h1", "h2", "--system", "sys", "--scale", "1", "5", "--schema", "1")
    assert old["n_responses"] == current["n_input"] - sum(current["dropped"].values())
    assert old["n_dropped"] == sum(current["dropped"].values())


def _schema() -> dict:
    return json.loads(schema_path().read_text(encoding="utf-8"))


def test_a_campaign_project_evaluation_validates_against_the_shipped_schema(tmp_path: Path, capsys) -> None:
    """``easl evaluate --project``: the shipped example campaign (four annotators), a system scored per item."""
    examples = Path(__file__).resolve().parent.parent / "examples"
    project = tmp_path / "formality.easl"
    assert main(["init", str(project), "--items", str(examples / "formality.csv")]) == 0
    assert main(["ingest", str(project), str(examples / "formality-scores.csv")]) == 0
    items = pd.read_csv(examples / "formality.csv")
    pd.DataFrame({"item_id": items["id"], "model": np.linspace(10, 90, len(items))}).to_csv(
        tmp_path / "system.csv", index=False
    )
    data = _evaluate(capsys, "--project", str(project), "--system", str(tmp_path / "system.csv"))
    jsonschema.validate(data, _schema())
    assert (data["scale"]["min"], data["scale"]["max"]) == (0, 100) and len(data["human_columns"]) == 4


def test_a_dask_evaluation_validates_against_the_shipped_schema(ratings: Path, capsys) -> None:
    data = _evaluate(capsys, str(ratings), *WIDE, "--dask", "local", "--dask-workers", "1")
    jsonschema.validate(data, _schema())
