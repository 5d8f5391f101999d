"""The annotator-aware study through a custom map (``map_fn``), and the large-project expected Spearman.

A distributed map must give the numbers of the serial one: every (model, method, seed) run is one task with its
seed fixed, so neither the worker nor the order of execution matters.
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd

from easl_toolkit.core.models.aware.fit import Observations, fit
from easl_toolkit.core.models.aware.posterior import EAGER_MAX_ITEMS, expected_spearman, rank_figures
from easl_toolkit.core.simulate.aware_study import (
    Calibration,
    RunSettings,
    StudyDesign,
    calibrate_stopping,
    run_study,
    run_task,
)

SMALL = (StudyDesign(models=("M2", "M4"), methods=("da", "da-z", "aware"), n_seeds=2), RunSettings(max_per_item=4.0))


def process_pool_map(fn, tasks):
    with ProcessPoolExecutor(max_workers=2) as pool:
        return list(pool.map(fn, *zip(*tasks)))


def reversed_map(fn, tasks):
    """Runs the tasks last first, returns them in task order: the order of execution must not matter."""
    out = [fn(*t) for t in reversed(tasks)]
    return out[::-1]


def _same(a: dict, b: dict) -> None:
    for key in ("curves", "budget", "coverage", "stopping", "flags"):
        pd.testing.assert_frame_equal(a[key], b[key])


def test_a_process_pool_map_gives_the_serial_numbers():
    serial = run_study(*SMALL)
    _same(serial, run_study(*SMALL, map_fn=process_pool_map))
    assert set(serial["curves"]["method"]) == {"da", "da-z", "aware"} and len(serial["curves"]) == 2 * 3 * 2 * 8


def test_the_order_of_execution_does_not_matter_and_progress_counts_runs():
    seen = []
    _same(run_study(*SMALL), run_study(*SMALL, map_fn=reversed_map, progress=lambda d, t: seen.append((d, t))))
    assert seen == [(k, 12) for k in range(1, 13)]


def test_calibrate_stopping_through_a_process_pool():
    grid = Calibration(models=("M2",), n_seeds=2, targets=(0.9,), relative_margins=(0.6,), min_scores=(3,))
    a = calibrate_stopping(grid, RunSettings(max_per_item=5.0))
    b = calibrate_stopping(grid, RunSettings(max_per_item=5.0), map_fn=process_pool_map)
    pd.testing.assert_frame_equal(a, b)
    assert a["runs"].tolist() == [2]


def test_run_task_is_one_seeded_run():
    truth = np.linspace(0, 1, 30)
    a = run_task(truth, "M2", "aware", 5, RunSettings(max_per_item=4.0))
    b = run_task(truth, "M2", "aware", 5, RunSettings(max_per_item=4.0))
    assert a == b and len(a) == round(4.0 * 30 / 75)  # batches of 15 HITs of 5


def _large_state(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    truth = rng.beta(2, 2, n)
    item = np.repeat(np.arange(n), 4)
    ann = rng.integers(30, size=item.size)
    x = np.clip(truth[item] + rng.normal(0, 0.15, item.size), 0, 1)
    return fit(Observations.build(item, ann, x, n_items=n))


def test_expected_spearman_on_a_subset_is_close_to_all_items():
    st = _large_state(6000)
    full = expected_spearman(st, np.random.default_rng(0), max_items=6000, n_draws=40)
    subs = [expected_spearman(st, np.random.default_rng(s), max_items=1500, n_draws=40) for s in range(5)]
    # sd about (1 - rho^2) / sqrt(1500), i.e. 0.004 here; the mean of 5 subsets within 0.006
    assert abs(np.mean(subs) - full) < 0.006 and max(abs(s - full) for s in subs) < 0.015


def test_large_projects_draw_rank_intervals_only_when_read_and_in_any_order():
    st = _large_state(EAGER_MAX_ITEMS + 500, seed=1)
    a = rank_figures(st, np.random.default_rng(3), n_draws=50)
    assert a._lazy is None  # the expected Spearman alone draws no rank intervals
    b = rank_figures(st, np.random.default_rng(3), n_draws=50)
    low_b = b.rank_low.copy()
    assert a.expected_spearman == b.expected_spearman
    np.testing.assert_array_equal(a.rank_low, low_b)
    assert np.mean((a.rank_low <= a.rank) & (a.rank <= a.rank_high)) > 0.9
    assert 0.8 < a.expected_spearman < 1.0


def test_small_projects_keep_one_set_of_draws():
    st = _large_state(300, seed=2)
    f = rank_figures(st, np.random.default_rng(4), n_draws=100)
    assert f._lazy is not None
    assert abs(f.expected_spearman - expected_spearman(st, np.random.default_rng(9), n_draws=100)) < 0.01
