"""The Dask engine of ``easl evaluate`` (core.distributed) against the in-memory evaluation.

Fast tests merge partition statistics in this process (hypothesis: any split of the responses into partitions gives
the in-memory figures); the slow ones run a LocalCluster of 2 worker processes on a generated partitioned data set
of a few million ratings, kill a worker mid-computation, and drive the command line against that cluster.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from easl_toolkit.core.distributed.evaluate import Columns
from easl_toolkit.core.distributed.finish import finish, kendall_from_table, spearman_from_table
from easl_toolkit.core.distributed.partitions import Spec, merge, pair_table, partition_stats
from easl_toolkit.core.distributed.synthetic import ratings_frame, write_partitions
from easl_toolkit.core.errors import EaslError
from easl_toolkit.core.metrics.data import Scale
from easl_toolkit.core.metrics.estimates.association import kendall_taus, spearman_rho
from easl_toolkit.core.metrics.options import EvaluationOptions
from easl_toolkit.core.metrics.pipeline import evaluate
from easl_toolkit.core.metrics.registry import REPORT_WEIGHTS

TOL = 1e-9


def differences(got: Any, want: Any, path: str = "") -> list[str]:
    """Every place where two JSON values differ (numbers: beyond 1e-9 relative and absolute)."""
    if isinstance(got, dict) and isinstance(want, dict):
        out = [f"{path}/{k}: only on one side" for k in set(got) ^ set(want)]
        for k in set(got) & set(want):
            out += differences(got[k], want[k], f"{path}/{k}")
        return out
    if isinstance(got, list) and isinstance(want, list):
        if len(got) != len(want):
            return [f"{path}: {len(got)} vs {len(want)} entries"]
        return [d for i, (a, b) in enumerate(zip(got, want)) for d in differences(a, b, f"{path}[{i}]")]
    if isinstance(got, float) or isinstance(want, float):
        if got is None or want is None or not math.isclose(got, want, rel_tol=TOL, abs_tol=TOL):
            return [f"{path}: {got!r} vs {want!r}"]
        return []
    return [] if got == want else [f"{path}: {got!r} vs {want!r}"]


def compare(ev, ref) -> list[str]:
    """Differences of every figure (the JSON result without the notes) and of every table."""
    got, want = ev.to_json(), ref.to_json()
    got.pop("notes"), want.pop("notes")
    out = differences(got, want)
    tables, ref_tables = ev.tables, ref.tables
    out += [f"table {k}: only on one side" for k in set(tables) ^ set(ref_tables)]
    for name in set(tables) & set(ref_tables):
        a, b = tables[name], ref_tables[name]
        out += differences(
            json.loads(a.to_json(orient="split", double_precision=15)),
            json.loads(b.to_json(orient="split", double_precision=15)),
            f"table {name}",
        )
    return out


def in_memory(frame: pd.DataFrame, scale: Scale | None, groups: bool = True, **kw: Any):
    return evaluate(
        frame[["h1", "h2"]].to_numpy(dtype=float),
        {"model": frame["model"].to_numpy(dtype=float)},
        human_names=["h1", "h2"],
        groups=frame["group"].to_numpy(dtype=object) if groups else None,
        group_name="group",
        options=EvaluationOptions(scale=scale, **kw),
    )


def merged(frame: pd.DataFrame, cuts: list[int], spec: Spec):
    acc = None
    for k, (lo, hi) in enumerate(zip([0, *cuts], [*cuts, len(frame)])):
        part = partition_stats(frame.iloc[lo:hi], spec, k)
        acc = part if acc is None else merge(acc, part, spec.rank_limit)
    return acc


# ---------------------------------------------------------------------------------------------------------------
# In this process: the merge is exact whatever the partitioning.


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(5, 300),
    seed=st.integers(0, 10_000),
    cuts=st.lists(st.floats(0, 1), max_size=5),
    missing=st.sampled_from([0.0, 0.3]),
)
def test_any_partitioning_gives_the_in_memory_figures(n, seed, cuts, missing):
    frame = ratings_frame(n, seed, 0, missing)
    positions = sorted(int(c * n) for c in cuts)
    spec = Spec("x", ("h1", "h2"), ("model",), "group", Scale(1, 6), False, REPORT_WEIGHTS)
    ev = finish(merged(frame, positions, spec), spec, options=EvaluationOptions(), group_name="group")
    assert compare(ev, in_memory(frame, Scale(1, 6))) == []


def test_options_weights_population_and_external_error_variance():
    frame = ratings_frame(400, 9, 0, 0.25)
    frame.loc[::37, "h1"] = 0.0  # zeros: dropped or set to missing under exclude_zeros
    weightings = (*REPORT_WEIGHTS, "ordinal", "radical")
    spec = Spec("x", ("h1", "h2"), ("model",), "group", Scale(1, 6), True, weightings)
    kw = dict(rater_error_variance=0.4, population_size=5000.0, confidence=0.9, base_group="L3")
    ev = finish(merged(frame, [50, 51, 300], spec), spec, options=EvaluationOptions(**kw), group_name="group")
    ref = in_memory(frame, Scale(1, 6), exclude_zeros=True, weights=("ordinal", "radical"), **kw)
    assert compare(ev, ref) == []
    assert ev.human_human.all_raters.figures["gwet_ac2_ordinal"].analytic is not None


def test_one_human_column_and_a_continuous_scale():
    frame = ratings_frame(300, 5, 0, 0.0)
    spec = Spec("x", ("h1",), ("model",), None, Scale(0.5, 6.5, ()), True, REPORT_WEIGHTS)
    ev = finish(merged(frame, [1, 100, 100, 250], spec), spec, options=EvaluationOptions())
    ref = evaluate(
        frame[["h1"]].to_numpy(),
        {"model": frame["model"].to_numpy()},
        human_names=["h1"],
        options=EvaluationOptions(scale=Scale(0.5, 6.5, ()), exclude_zeros=True),
    )
    assert compare(ev, ref) == []


@settings(max_examples=30, deadline=None)
@given(
    a=st.lists(st.integers(1, 5), min_size=0, max_size=60),
    data=st.data(),
)
def test_rank_correlations_from_the_pair_table_equal_scipys(a, data):
    b = data.draw(st.lists(st.sampled_from([0.5, 1.0, 1.25, 3.0, 7.0]), min_size=len(a), max_size=len(a)))
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    table = pair_table(x, y)
    with np.errstate(all="ignore"), pytest.warns() if len(x) < 2 or len(set(a)) < 2 or len(set(b)) < 2 else _none():
        rho = spearman_from_table(table)
        taus = kendall_from_table(table)
    if len(x) >= 2 and len(set(a)) >= 2 and len(set(b)) >= 2:
        assert math.isclose(rho, spearman_rho(x, y), rel_tol=TOL, abs_tol=TOL)
        np.testing.assert_allclose(taus, kendall_taus(x, y), rtol=TOL, atol=TOL)
    else:
        assert math.isnan(rho) and all(math.isnan(t) for t in taus)


class _none:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_ranks_beyond_the_limit_are_not_approximated():
    frame = ratings_frame(200, 1)
    spec = Spec("x", ("h1", "h2"), ("model",), None, Scale(1, 6), False, REPORT_WEIGHTS, rank_limit=50)
    ev = finish(merged(frame, [100], spec), spec, options=EvaluationOptions())
    fig = ev.systems["model"].observed["spearman"]
    assert math.isnan(fig.value) and "not computed exactly at this scale" in fig.reason
    assert any("Spearman and Kendall not computed exactly" in n for n in ev.notes)


# ---------------------------------------------------------------------------------------------------------------
# On a LocalCluster of 2 worker processes.


@pytest.fixture(scope="module")
def cluster():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit="1.5GiB",
                      dashboard_address=":0") as lc, Client(lc) as client:  # fmt: skip
        yield lc, client


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """1.25 million responses in 10 Parquet files: 2.25 million human ratings and 1.25 million system scores."""
    directory = tmp_path_factory.mktemp("ratings")
    paths = write_partitions(directory, 1_250_000, 10, seed=11, missing=0.2)
    frame = pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True)
    return directory, frame


def test_every_metric_on_a_cluster_equals_in_memory(cluster, big):
    from easl_toolkit.core.distributed.evaluate import evaluate_dask

    _, client = cluster
    directory, frame = big
    stages: list[tuple[str, int, int]] = []
    ev = evaluate_dask(
        client,
        str(directory / "*.parquet"),
        Columns(human=("h1", "h2"), system=("model",), group="group"),
        progress=lambda *a: stages.append(a),
    )
    ref = in_memory(frame, None)
    assert compare(ev, ref) == []
    assert ev.n_responses == ref.n_responses == len(frame)
    assert int(ev.human_human.all_raters.value("N_pairable")) == int(frame["h2"].notna().sum())
    assert ("partitions", 10, 10) in stages and stages[0][0] == "scale"  # no --scale: a first pass for the range


def test_a_worker_killed_mid_computation_gives_the_same_result_or_a_clear_error(cluster, tmp_path):
    from easl_toolkit.core.distributed.evaluate import evaluate_dask

    lc, client = cluster
    paths = write_partitions(tmp_path, 300_000, 12, seed=4, missing=0.1)
    frame = pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True)
    pids = list(client.run(os.getpid).values())
    killed = threading.Event()

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "partitions" and done == 1 and not killed.is_set():
            os.kill(pids[0], signal.SIGKILL)  # the nanny restarts it; its tasks run again elsewhere
            killed.set()

    try:
        ev = evaluate_dask(
            client,
            str(tmp_path / "*.parquet"),
            Columns(human=("h1", "h2"), system=("model",), group="group"),
            progress=progress,
            options=EvaluationOptions(scale=Scale(1, 6)),
        )
    except EaslError as exc:
        assert "workers died" in str(exc) and "no result was written" in str(exc)
    else:
        assert killed.is_set()
        assert compare(ev, in_memory(frame, Scale(1, 6))) == []
    client.wait_for_workers(2, timeout=60)


def test_the_bootstrap_merges_poisson_weights_and_is_reproducible(cluster, tmp_path):
    from easl_toolkit.core.distributed.evaluate import evaluate_dask

    _, client = cluster
    paths = write_partitions(tmp_path, 20_000, 4, seed=2)
    frame = pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True)
    columns = Columns(human=("h1", "h2"), system=("model",), group="group")
    options = EvaluationOptions(scale=Scale(1, 6), n_bootstrap=200, seed=3)
    one = evaluate_dask(client, str(tmp_path / "*.parquet"), columns, options=options)
    two = evaluate_dask(client, str(tmp_path / "*.parquet"), columns, options=options)
    ref = in_memory(frame, Scale(1, 6), n_bootstrap=200, seed=3)
    for key in ("corr", "qwk", "rmse", "conger_kappa", "gwet_ac1", "spearman", "kendall_tau_b", "kendall_tau_c"):
        got, want = one.systems["model"].observed[key], ref.systems["model"].observed[key]
        assert got.ci == two.systems["model"].observed[key].ci  # same seed, same partitions: same draws
        assert got.ci.low < got.value < got.ci.high
        width, ref_width = got.ci.high - got.ci.low, want.ci.high - want.ci.low
        assert 0.6 < width / ref_width < 1.6, key  # the Poisson and the multinomial bootstrap agree in spread
    deg = one.systems["model"].degradation["spearman"]  # system minus human-human, resample by resample
    assert deg.ci.low < deg.value < deg.ci.high
    for key in ("osd", "csd"):  # fairness: cell sums of every resample merge too
        got, want = one.fairness["group"]["model"].figures()[key], ref.fairness["group"]["model"].figures()[key]
        assert got.ci == two.fairness["group"]["model"].figures()[key].ci and got.ci_reason is None
        assert got.ci.low <= got.value <= got.ci.high
        assert 0.5 < (got.ci.high - got.ci.low) / (want.ci.high - want.ci.low) < 2.0, key
    prmse = one.systems["model"].true_score["prmse"]
    assert prmse.ci.low < prmse.value < prmse.ci.high
    assert any("Poisson(1)" in n for n in one.notes)


def test_the_command_line_against_a_running_scheduler_writes_the_same_json(cluster, tmp_path, repo_root):
    lc, _ = cluster
    write_partitions(tmp_path / "csv", 30_000, 3, seed=8, missing=0.1, fmt="csv")
    whole = tmp_path / "whole.csv"
    pd.concat([pd.read_csv(p) for p in sorted((tmp_path / "csv").glob("*.csv"))]).to_csv(whole, index=False)
    common = ["--human", "h1", "h2", "--system", "model", "--group", "group", "--scale", "1", "6", "--json"]

    def run(*args: str) -> dict:
        proc = subprocess.run([sys.executable, "-m", "easl_toolkit.tui.cli", "evaluate", *args, *common], cwd=repo_root,
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    got = run(str(tmp_path / "csv" / "*.csv"), "--dask", lc.scheduler_address)
    want = run(str(whole))
    got.pop("notes"), want.pop("notes")
    assert differences(got, want) == []


def test_the_long_form_split_across_files_equals_load_long(cluster, tmp_path):
    from easl_toolkit.core.distributed.evaluate import evaluate_dask
    from easl_toolkit.core.metrics.load import load_long

    _, client = cluster
    wide = ratings_frame(2000, 2, 0, 0.3).assign(item=[f"i{i}" for i in range(2000)])
    rows = [wide[wide[r].notna()].assign(rater="ann_" + r, score=lambda f, r=r: f[r]) for r in ("h1", "h2")] + [
        wide.sample(frac=0.4, random_state=1).assign(rater="ann_x", score=lambda f: np.round(f["model"]).clip(1, 6))
    ]
    rows.append(wide.assign(rater="model", score=wide["model"]))
    long = pd.concat(rows).sample(frac=1, random_state=2)[["item", "rater", "score", "group", "model"]]
    long = long.rename(columns={"model": "m2"}).assign(m2=lambda f: f["m2"] * 0.9)
    long = pd.concat([long, long[long.rater == "ann_h1"].head(30).assign(score=1.0)], ignore_index=True)  # repeats
    long.to_csv(tmp_path / "all.csv", index=False)
    for k, idx in enumerate(np.array_split(np.arange(len(long)), 3)):  # items spread over the files
        long.iloc[idx].to_csv(tmp_path / f"part{k}.csv", index=False)
    columns, systems = ("item", "rater", "score"), ["model", "m2"]
    ev = evaluate_dask(
        client,
        str(tmp_path / "part*.csv"),
        Columns(system=tuple(systems), group="group", long=columns),
        options=EvaluationOptions(scale=Scale(1, 6)),
    )
    data = load_long(tmp_path / "all.csv", columns=columns, system=systems, group_col="group")
    ref = evaluate(
        data.human,
        data.system,
        human_names=data.human_names,
        groups=data.groups,
        group_name="group",
        extra_notes=data.notes,
        options=EvaluationOptions(scale=Scale(1, 6)),
    )
    assert compare(ev, ref) == []
    assert ev.human_columns == ("ann_h1", "ann_h2", "ann_x")
    assert [n for n in ev.notes if n.startswith(("long form", "30 repeated"))] == list(data.notes)


def test_an_unreachable_scheduler_is_one_clear_error(tmp_path, repo_root):
    write_partitions(tmp_path, 100, 1)
    proc = subprocess.run(
        [sys.executable, "-m", "easl_toolkit.tui.cli", "evaluate", str(tmp_path / "*.parquet"), "--human", "h1",
         "--system",
         "model", "--dask", "tcp://127.0.0.1:9"],
        cwd=repo_root, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in proc.stderr


def test_missing_columns_and_repeated_ids_are_one_clear_error(cluster, tmp_path):
    from easl_toolkit.core.distributed.evaluate import evaluate_dask

    _, client = cluster
    paths = write_partitions(tmp_path, 100, 2)
    with pytest.raises(EaslError, match=r"\*\.parquet: no column 'h3' \(columns: h1, h2, model, group\)"):
        evaluate_dask(
            client,
            str(tmp_path / "*.parquet"),
            Columns(human=("h1", "h3"), system=("model",)),
            options=EvaluationOptions(scale=Scale(1, 6)),
        )
    for path in paths:  # ids 0..49 in both files: every id repeated once
        pd.read_parquet(path).assign(id=[f"r{i}" for i in range(50)]).to_parquet(path, index=False)
    with pytest.raises(EaslError, match=r"column 'id' repeats the id 'r\d+' \(2 times\)"):
        evaluate_dask(client, str(tmp_path / "*.parquet"), Columns(human=("h1",), system=("model",), id="id"))
    bad = ratings_frame(20, 3).astype(object)
    bad.loc[7, "model"] = "oops"
    bad.to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(EaslError, match=r"bad\.csv \(partition 0\):row 8: column 'model' has a non-numeric value"):
        evaluate_dask(
            client,
            str(tmp_path / "bad.csv"),
            Columns(human=("h1",), system=("model",)),
            options=EvaluationOptions(scale=Scale(1, 6)),
        )


def _repo() -> Path:
    return Path(__file__).resolve().parent.parent
