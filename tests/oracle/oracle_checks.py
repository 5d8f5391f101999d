"""Oracle test: every overlapping metric against RSMTool, irrCAC and krippendorff on random data, at 1e-9.

Run with ``make test-oracle`` (which builds ``.cache/oracle-venv`` and sets ``EASL_ORACLE_PYTHON``). irrCAC rounds
its output; it is asked for 10 digits, so its numbers are compared at 1e-9.
"""

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import easl_toolkit.core.metrics as M
from easl_toolkit.core.metrics.options import EvaluationOptions
from easl_toolkit.core.metrics.pipeline import evaluate

TOL = 1e-9
PEERS = Path(__file__).with_name("peers.py")


def oracle_python() -> str:
    exe = os.environ.get("EASL_ORACLE_PYTHON", "")
    if not exe or not Path(exe).exists():
        raise RuntimeError("EASL_ORACLE_PYTHON must name the oracle venv's python; run `make test-oracle`")
    return exe


def dataset(seed, n, raters, q):
    rng = np.random.default_rng(seed)
    t = rng.normal((q + 1) / 2, q / 5, n)
    h = np.clip(np.round(t[:, None] + rng.normal(0, 0.7, (n, raters))), 1, q)
    miss = rng.random((n, raters)) < 0.35
    miss[:, 0] = False
    h[miss] = np.nan
    h[: min(5, n), 1] = h[: min(5, n), 0]  # make sure some responses are double-scored
    m = t + rng.normal(0, 0.6, n)
    groups = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    return h, m, np.arange(1.0, q + 1), groups


@pytest.fixture(
    scope="module",
    params=[(11, 400, 2, 4), (12, 300, 3, 6), (13, 250, 4, 5)],
    ids=["2raters-q4", "3raters-q6", "4raters-q5"],
)
def case(request, tmp_path_factory):
    seed, n, raters, q = request.param
    h, m, cats, groups = dataset(seed, n, raters, q)
    d = tmp_path_factory.mktemp(f"oracle{seed}")
    np.savez(d / "data.npz", human=h, system=m, cats=cats, groups=groups.astype(object))
    subprocess.run([oracle_python(), str(PEERS), str(d / "data.npz"), str(d / "peers.json")], check=True)
    peers = json.loads((d / "peers.json").read_text())
    ours = evaluate(h, {"sys": m}, groups=groups, group_name="L1", options=EvaluationOptions(scale=M.Scale(1, q)))
    return h, m, cats, groups, peers, ours


#: Our name of RSMTool's metrics where they differ (one name per coefficient).
OURS = {"kappa": "conger_kappa"}


def close(a, b, tol=TOL):
    if a is None or b is None:
        return a is None and b is None
    return abs(float(a) - float(b)) <= tol


def test_rsmtool_observed(case):
    *_, peers, ours = case
    obs = ours.to_json()["systems"]["sys"]["observed"]
    for key, want in peers["rsmtool"]["sys"].items():
        assert close(obs[OURS.get(key, key)], want), (key, obs[OURS.get(key, key)], want)


def test_rsmtool_human_human(case):
    *_, peers, ours = case
    hh = ours.to_json()["human_human"]
    for key, want in peers["rsmtool"]["hh"].items():
        assert close(hh[OURS.get(key, key)], want), (key, hh[OURS.get(key, key)], want)


def test_rsmtool_true_score(case):
    *_, peers, ours = case
    ts = ours.to_json()["systems"]["sys"]["true_score"]
    for key, want in peers["rsmtool"]["true"].items():
        assert close(ts[key], want), (key, ts[key], want)


def test_rsmtool_dsm_and_fairness(case):
    h, m, cats, groups, peers, ours = case
    g0 = groups[0]
    assert close(ours.to_json()["subgroups"]["L1"][g0]["sys"]["dsm"], peers["rsmtool"]["dsm"])
    fair = ours.to_json()["fairness"]["L1"]["sys"]
    for key in ("osa", "osd", "csd"):
        assert close(fair[key]["value"], peers["rsmtool"]["fairness"][key]["value"]), key
        assert close(fair[key]["p_value"], peers["rsmtool"]["fairness"][key]["p_value"], 1e-7), key
        for name, est in peers["rsmtool"]["fairness_estimates"][key].items():
            ours_name = "Intercept" if name.startswith("Intercept") else name
            assert close(fair[key]["estimates"][ours_name], est), (key, name)


@pytest.mark.parametrize("which", ["pair", "multi"])
def test_irrcac(case, which):
    h, m, cats, _, peers, _ = case
    data = np.column_stack([h[:, 0], np.clip(np.round(m), cats[0], cats[-1])]) if which == "pair" else h
    for w, per in peers[f"irrcac_{which}"].items():
        res = M.chance_corrected_agreement(data, cats, weights=w)
        se = M.gwet_standard_errors(data, cats, weights=w)
        for name, rec in per.items():
            assert close(res[name], rec["value"]), (w, name, res[name], rec["value"])
            if name in se:
                assert close(se[name], rec["se"]), (w, name, "se")
            if name != "krippendorff":
                assert close(res["pa"], rec["pa"]), (w, name, "pa")
                assert close(res["pe_" + name], rec["pe"]), (w, name, "pe")


@pytest.mark.parametrize("which", ["pair", "multi"])
def test_krippendorff_package(case, which):
    h, m, cats, _, peers, ours = case
    data = np.column_stack([h[:, 0], np.clip(np.round(m), cats[0], cats[-1])]) if which == "pair" else h
    for level, want in peers[f"kripp_{which}"].items():
        assert close(M.krippendorff_alpha(data, level=level), want), (level,)
    if which == "pair":
        obs = ours.to_json()["systems"]["sys"]["observed"]
        for level in ("nominal", "ordinal", "interval"):
            assert close(obs["krippendorff_alpha_" + level], peers["kripp_pair"][level]), level
