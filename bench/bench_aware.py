"""Benchmark of the annotator-aware model (its speed target), run with `make bench` or
`.venv/bin/python bench/bench_aware.py [--quick]`.

One iteration of a campaign that has passed its uniform passes (every item has 3 + Poisson(1) scores from a
pool of 200 annotators with offsets, slopes and noise, M3-like): the warm-started fit after a new batch of
N / 5 HITs of 5, plus the selection of the next batch (N / 5 HITs). Targets: N = 10,000 <= 0.2 s,
N = 1,000,000 <= 5 s (median of the repeats). The cold fit is shown for information, and so is the iteration as a
project's store runs it (``easl ingest`` then ``easl next`` on the default method): its refit is cold up to
``core.store.derived.COLD_REFIT_UPTO`` live scores (so at 10,000 items), warm above.

The stopping statistic of ``easl status`` (the expected Spearman, :func:`rank_figures` without reading the rank
intervals; on a subset of items above 20,000) is timed against ``--status-target`` (0.5 s, leaving the rest of the
1 s status budget to loading the project), with its difference from the figure on all items (20 draws); the rank
intervals (export) are timed for information.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from easl_toolkit.core.models.aware.alloc import select_batch  # noqa: E402
from easl_toolkit.core.models.aware.fit import Observations, fit  # noqa: E402
from easl_toolkit.core.models.aware.posterior import expected_spearman, rank_figures  # noqa: E402
from easl_toolkit.core.store.derived import COLD_REFIT_UPTO  # noqa: E402

STATUS_TARGET = 0.5


def campaign(n_items: int, rng: np.random.Generator, n_annotators: int = 200):
    """Scores of a campaign after its uniform passes, and a new batch of N / 5 HITs of 5."""
    truth = rng.beta(2.0, 2.0, n_items)
    off, slope = rng.normal(0, 0.1, n_annotators), rng.uniform(0.6, 1.4, n_annotators)

    def scores(items, anns):
        x = 0.5 + off[anns] + slope[anns] * (truth[items] - 0.5) + rng.normal(0, 0.15, items.size)
        return np.clip(x, 0.0, 1.0)

    count = 3 + rng.poisson(1.0, n_items)
    items = np.repeat(np.arange(n_items), count)
    anns = rng.integers(n_annotators, size=items.size)
    new_items = rng.integers(n_items, size=n_items // 5 * 5)
    new_anns = np.repeat(rng.integers(n_annotators, size=n_items // 5), 5)
    return (items, anns, scores(items, anns)), (new_items, new_anns, scores(new_items, new_anns))


def bench(n_items: int, repeats: int, target: float) -> None:
    rng = np.random.default_rng(0)
    (i, a, x), (ni, na_, nx) = campaign(n_items, rng)
    t0 = time.perf_counter()
    obs = Observations.build(i, a, x, n_items=n_items)
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    state = fit(obs)
    t_cold = time.perf_counter() - t0
    times, sweeps = [], []
    for r in range(repeats):
        t0 = time.perf_counter()
        obs2 = obs.extend(ni, na_, nx)
        st2 = fit(obs2, warm=state)
        select_batch(st2, n_hits=n_items // 5, hit_size=5, rng=np.random.default_rng(r))
        times.append(time.perf_counter() - t0)
        sweeps.append(st2.sweeps)
    med = statistics.median(times)
    store_times = []  # as the store refits: cold up to COLD_REFIT_UPTO live scores
    for r in range(repeats):
        t0 = time.perf_counter()
        obs2 = obs.extend(ni, na_, nx)
        st3 = fit(obs2, warm=state if obs2.size > COLD_REFIT_UPTO else None)
        select_batch(st3, n_hits=n_items // 5, hit_size=5, rng=np.random.default_rng(r))
        store_times.append(time.perf_counter() - t0)
    store_med = statistics.median(store_times)
    t_status = []
    for r in range(3):
        t0 = time.perf_counter()
        figs = rank_figures(st2, np.random.default_rng(r))
        rho = figs.expected_spearman
        t_status.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    figs.rank_low  # noqa: B018  (the rank intervals, drawn when first read)
    t_rank = time.perf_counter() - t0
    t0 = time.perf_counter()
    rho_all = expected_spearman(st2, np.random.default_rng(2), max_items=n_items, n_draws=20)
    t_all = time.perf_counter() - t0
    verdict = "ok" if med <= target else "MISSED"
    status_med = statistics.median(t_status)
    status_verdict = "ok" if status_med <= STATUS_TARGET else "MISSED"
    print(
        f"N = {n_items:>9,}  scores {obs2.size:>9,}  fit + selection per iteration {med:7.3f} s "
        f"(target <= {target:g} s: {verdict}; warm sweeps {max(sweeps)})"
    )
    print(f"{'':14}  build {t_build:.3f} s, cold fit {t_cold:.3f} s ({state.sweeps} sweeps)")
    how = "cold" if obs2.size <= COLD_REFIT_UPTO else "warm"
    print(
        f"{'':14}  as the store runs it ({how} refit, {obs2.size:,} live scores): fit + selection {store_med:.3f} s "
        f"(target <= {target:g} s: {'ok' if store_med <= target else 'MISSED'})"
    )
    print(
        f"{'':14}  expected Spearman (status) {status_med:.3f} s (target <= {STATUS_TARGET:g} s: {status_verdict}): "
        f"{rho:.4f}; on all items {rho_all:.4f} ({t_all:.2f} s), difference {rho - rho_all:+.4f}; "
        f"rank intervals (export) {t_rank:.3f} s ({figs.n_draws} draws)"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="10,000 items only")
    args = p.parse_args()
    bench(10_000, 5, 0.2)
    if not args.quick:
        bench(1_000_000, 3, 5.0)


if __name__ == "__main__":
    main()
