"""Benchmark of an evaluation campaign's iteration: choosing the next iteration and computing every interval.

Run with ``make bench`` or ``.venv/bin/python bench/bench_campaign.py [--responses N]``.

* 1,000,000 responses, 3 systems, 2% of them scored in earlier iterations (half of those twice): fit the
  human-score model, choose the next iteration's probabilities with the robust uniform share (targets r and PRMSE
  of every system, the default), draw it, and compute every metric (mean, r, QWK, RMSE, SMD, PRMSE, human-human r
  and QWK) for every system with its 95% interval, with cross-fitted control variates: target <= 5 s.
* The floor, in the same run: one plain numpy mean over the same arrays (systems and first scores), and the ratio.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from easl_toolkit.core.campaign.design import apply_iteration, choose_iteration  # noqa: E402
from easl_toolkit.core.campaign.estimators import estimate  # noqa: E402
from easl_toolkit.core.campaign.model import cross_fitted_predictions  # noqa: E402

TARGET_SECONDS = 5.0
METRICS = ("mean", "r", "qwk", "rmse", "smd", "prmse", "hh_r", "hh_qwk")


def campaign(n: int, rng: np.random.Generator):
    """One campaign of n responses, 3 systems, 2% scored earlier (half twice); returns every array."""
    t = np.clip(rng.normal(3.844, 0.74, (1, n)), 1, 6)
    h1 = np.clip(np.round(t + rng.normal(0, 0.46, (1, n))), 1, 6)
    h2 = np.clip(np.round(t + rng.normal(0, 0.46, (1, n))), 1, 6)
    systems = np.stack([t + rng.normal(0, sd, (1, n)) for sd in (0.25, 0.4, 1.0)], axis=-1)
    earlier = rng.random((1, n)) < 0.02
    first = np.where(earlier, h1, np.nan)
    second = np.where(earlier & (rng.random((1, n)) < 0.5), h2, np.nan)
    return systems, h1, h2, first, second


def iteration(systems, h1, h2, first, second, rng):
    """Choose the next iteration (5% of the responses), draw it, and estimate every metric with its interval."""
    one = np.ones_like(first)
    n = first.shape[1]
    plan = choose_iteration(systems, first, second, one, one, budget=0.05 * n, targets=("r", "prmse"), rng=rng)
    uniforms = (rng.random(first.shape), rng.random(first.shape))
    previous = (np.full(first.shape, 0.02), np.full(first.shape, 0.01))
    (f1, f2), (p1, p2) = apply_iteration(plan, (h1, h2), (first, second), uniforms, previous)
    predictions = cross_fitted_predictions(systems, f1, f2)
    return estimate(systems, f1, f2, p1, p2, predictions=predictions, metrics=METRICS)


def best_of(func, repeat: int = 3) -> tuple[float, object]:
    """Best wall time of ``repeat`` calls and the last result."""
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = func()
        times.append(time.perf_counter() - start)
    return min(times), value


def main(argv: list[str] | None = None) -> int:
    """Print the campaign iteration's time, the floor and the ratio beside the target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    systems, h1, h2, first, second = campaign(args.responses, rng)
    seconds, est = best_of(lambda: iteration(systems, h1, h2, first, second, np.random.default_rng(1)))
    floor, _ = best_of(lambda: (systems.mean(axis=1), np.nanmean(first)))
    print(
        f"campaign iteration, {args.responses:,} responses x 3 systems: {seconds:.2f} s (target <= {TARGET_SECONDS} s)"
        f" {'MET' if seconds <= TARGET_SECONDS else 'MISSED'}"
    )
    print(f"floor (numpy means over the same arrays): {floor:.3f} s; ratio {seconds / floor:.0f}x")
    for t, (name, j) in enumerate(est.labels):
        system = "" if j is None else str(j)
        low, high = est.low[0, t], est.high[0, t]
        print(f"  {name:7s} {system:2s} {est.value[0, t]: .4f} [{low: .4f}, {high: .4f}]")
    return 0 if seconds <= TARGET_SECONDS else 1


if __name__ == "__main__":
    raise SystemExit(main())
