"""Simulation sweeps on a LocalCluster of 2 worker processes give the single-process numbers (same seed)."""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import pytest

from easl_toolkit.core.distributed.cluster import dask_map
from easl_toolkit.core.simulate import annotation, aware_study, serial_map
from easl_toolkit.core.simulate import prmse as exp
from easl_toolkit.core.simulate.agreement_properties import EXPERIMENTS, PropertySettings, run_experiment
from easl_toolkit.core.simulate.prmse import PrmseSettings, generate_dataset


@pytest.fixture(scope="module")
def map_fn():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit="1GiB",
                      dashboard_address=":0") as lc, Client(lc) as client:  # fmt: skip
        yield dask_map(client)


def _slow_square(x: int, delay: float) -> int:
    import time

    time.sleep(delay)
    return x * x


def test_results_come_back_in_task_order(map_fn):
    tasks = [(i, 0.3 if i == 0 else 0.0) for i in range(6)]  # the first task finishes last
    assert list(map_fn(_slow_square, tasks)) == list(serial_map(_slow_square, tasks)) == [0, 1, 4, 9, 16, 25]


def test_prmse_experiments_equal_the_single_process_run(map_fn):
    s = PrmseSettings(n_responses=600, raters_per_category=6, pairs_per_category=3, systems_per_category=2,
                      sample_system="sys_3", double_scored_percentages=(10, 50, 100))  # fmt: skip
    one = generate_dataset(s)
    many = generate_dataset(s, map_fn=map_fn)
    assert [x.chosen for x in one.searches] == [x.chosen for x in many.searches]
    np.testing.assert_array_equal(one.raters, many.raters)
    steps: list[str] = []
    pd.testing.assert_frame_equal(exp.metric_stability(one), exp.metric_stability(one, steps.append, map_fn))
    pd.testing.assert_frame_equal(exp.double_scoring(one), exp.double_scoring(one, map_fn=map_fn))
    assert steps == [f"4.1: {c}" for c in s.rater_categories]


def test_metric_experiments_equal_the_single_process_run(map_fn):
    s = PropertySettings(n=500, prevalence_sds=(0.5, 1.5, 3.0), marginal_means=(0.0, 4.5, 9.0),
                         range_points=(10, 5, 3))  # fmt: skip
    for name in EXPERIMENTS:
        one = run_experiment(name, s, np.random.default_rng(7))
        many = run_experiment(name, s, np.random.default_rng(7), map_fn)
        pd.testing.assert_frame_equal(one, many)


def test_campaigns_equal_the_single_process_run(map_fn):
    oracle = annotation.synthetic_oracle("beta", 20, np.random.default_rng(1))
    settings = annotation.CampaignSettings(hits_per_iteration=3, iterations=3, runs=2, bootstrap=30)
    model = annotation.AnnotatorModel(noise_sd=0.1)
    one = annotation.compare_methods(oracle, settings, model, np.random.default_rng(5))
    seen: list[tuple[str, int]] = []
    many = annotation.compare_methods(
        oracle, settings, model, np.random.default_rng(5), progress=lambda m, r: seen.append((m, r)), map_fn=map_fn
    )
    pd.testing.assert_frame_equal(one["curves"], many["curves"])
    pd.testing.assert_frame_equal(one["summary"], many["summary"])
    for method in settings.methods:
        np.testing.assert_array_equal(one["final_all"][method], many["final_all"][method])
    assert seen == [(m, r) for m in settings.methods for r in range(settings.runs)]


@pytest.mark.skipif(
    "map_fn" not in inspect.signature(aware_study.run_study).parameters,
    reason="this branch's run_study has no map_fn keyword yet",
)
def test_the_aware_study_equals_the_single_process_run(map_fn):
    design = aware_study.StudyDesign(
        models=("M1",), methods=("da", "aware"), n_seeds=2, truth=aware_study.Truth(n_items=30)
    )
    settings = aware_study.RunSettings(max_per_item=4.0)
    one = aware_study.run_study(design, settings)
    many = aware_study.run_study(design, settings, map_fn=map_fn)
    pd.testing.assert_frame_equal(one["curves"], many["curves"])


def test_the_cli_runs_a_sweep_on_a_local_cluster_with_the_same_tables(tmp_path):
    from easl_toolkit.tui import cli

    args = ["simulate", "metrics", "--quick", "--responses", "300"]
    assert cli.main([*args, "--out", str(tmp_path / "one")]) == 0
    assert cli.main([*args, "--out", str(tmp_path / "many"), "--dask", "local", "--dask-workers", "2"]) == 0
    for table in sorted((tmp_path / "one" / "tables").glob("*.csv")):
        if table.name != "timings.csv":
            assert table.read_bytes() == (tmp_path / "many" / "tables" / table.name).read_bytes(), table.name
