"""The Monitor's fast paths equal the plain computations they replace: incremental sort orders and ranks
(tui.widgets.ordering, the item table, the live rank stability) and the variance-only ``Project.status``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import rankdata

from easl_toolkit.tui.screens.monitor_data import LiveRanks, centred_ranks
from easl_toolkit.tui.widgets.item_table import ItemColumns, sort_order, sort_values
from easl_toolkit.tui.widgets.ordering import UPDATE_FRACTION, average_ranks, stable_order, update_stable_order
from tests.store_helpers import answer, new_project

# few distinct values (many ties), signed zeros, infinities and NaN
VALUES = st.sampled_from([0.0, -0.0, 0.25, 0.5, 1.0, 2.5, np.nan, np.inf, -np.inf])


@st.composite
def old_and_new(draw):
    old = np.array(draw(st.lists(VALUES, min_size=0, max_size=200)), dtype=np.float64)
    new = old.copy()
    if old.size:
        k = draw(st.integers(0, max(1, int(UPDATE_FRACTION * old.size) + 2)))
        idx = draw(st.lists(st.integers(0, old.size - 1), min_size=k, max_size=k))
        new[idx] = draw(st.lists(VALUES, min_size=k, max_size=k))
    return old, new


@settings(max_examples=300, deadline=None)
@given(old_and_new())
def test_update_stable_order_equals_a_full_stable_sort(pair):
    old, new = pair
    order = update_stable_order(stable_order(old), old, new)
    np.testing.assert_array_equal(order, np.argsort(new, kind="stable"))
    assert order.dtype == np.int64


def test_update_stable_order_on_many_changes_and_length_changes():
    rng = np.random.default_rng(5)
    old = rng.integers(0, 50, 1000).astype(np.float64)
    new = rng.integers(0, 50, 1000).astype(np.float64)  # nearly all changed: full re-sort path
    np.testing.assert_array_equal(update_stable_order(stable_order(old), old, new), np.argsort(new, kind="stable"))
    np.testing.assert_array_equal(
        update_stable_order(stable_order(old), old, new[:10]), np.argsort(new[:10], kind="stable")
    )
    same = update_stable_order(stable_order(old), old, old.copy())
    np.testing.assert_array_equal(same, np.argsort(old, kind="stable"))


@settings(max_examples=200, deadline=None)
@given(old_and_new())
def test_average_ranks_and_live_ranks_equal_rankdata(pair):
    old, new = pair
    ranks = average_ranks(new, stable_order(new))
    finite = np.isfinite(new)
    expected = np.full(new.shape, np.nan)
    if finite.any():
        expected[finite] = rankdata(new[finite])
    np.testing.assert_array_equal(ranks, expected)
    live = LiveRanks()
    np.testing.assert_array_equal(live.ranks(old), centred_ranks(old))
    np.testing.assert_array_equal(live.ranks(new), centred_ranks(new))


@pytest.mark.parametrize("key", ["uncertainty", "estimate", "count"])
@pytest.mark.parametrize("descending", [True, False])
def test_item_table_incremental_order_equals_sort_order(key, descending):
    rng = np.random.default_rng(11)
    n = 500
    ids = np.array([f"i{k}" for k in range(n)], dtype=object)

    def columns(est, var, cnt):
        return ItemColumns(
            item_id=ids, estimate=est, ci_low=est - 1, ci_high=est + 1, variance=var, n_annotations=cnt, text=ids
        )

    est = np.round(rng.random(n) * 10) * 10.0
    var = np.round(rng.random(n) * 4) / 4
    cnt = rng.integers(0, 3, n)
    a = columns(est, var, cnt)
    est2, var2, cnt2 = est.copy(), var.copy(), cnt.copy()
    changed = rng.choice(n, 5, replace=False)
    est2[changed], var2[changed], cnt2[changed] = 55.0, 0.125, cnt[changed] + 1
    b = columns(est2, var2, cnt2)
    order = update_stable_order(
        sort_order(a, key, descending), sort_values(a, key, descending), sort_values(b, key, descending)
    )
    np.testing.assert_array_equal(order, sort_order(b, key, descending))


@pytest.mark.parametrize("method", ["easl", "ra", "trueskill", "da"])
def test_status_variances_equal_the_summary_variances(tmp_path, method):
    rng = np.random.default_rng(4)
    with new_project(tmp_path, n=12, method=method, hit_size=3, seed=2) as p:
        p.ingest(answer(p.open_hits(), rng), source="test")
        p.ingest(answer(p.next_hits()[:2], rng), source="test")
        status = p.status()
        variance = p.model.summary(p.state()).variance
        assert np.ptp(variance) > 0  # the posteriors differ: a real comparison
        assert status["mean_variance"] == pytest.approx(float(np.mean(variance)), rel=1e-15, abs=0)
        assert status["max_variance"] == float(np.max(variance))
        assert status["n_hits_open"] + status["n_hits_complete"] + status["n_hits_retracted"] == len(
            p.hits(status["iteration"])
        )
