"""Benchmark of the engine (its speed targets), run with `make bench` or
`.venv/bin/python bench/bench_selection.py [--quick]`.

* One iteration's selection (Algorithm 1, k = N / n, n = 5) on realistic mid-campaign posteriors:
  N = 10,000 (target <= 0.2 s) and N = 1,000,000 (target <= 5 s); the literal O(k N) algorithm at
  N = 10,000 for comparison (the authors' Python release needs about 35 s there).
* Replay of 1,000,000 observations (HITs of 5 over 10,000 items) by every model (target <= 10 s).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from easl_toolkit.core.models import METHODS, Hyper, beta_mode, beta_variance, get_model  # noqa: E402
from easl_toolkit.core.selection import (  # noqa: E402
    HitRequest,
    first_iteration_hits,
    select_hits,
    select_hits_literal,
    select_least_annotated,
)


def campaign_keys(n_items: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """EASL posteriors a few iterations into a campaign: each item has 1 + Poisson(3) scores drawn around
    a latent value ~ Beta(2, 2) with annotator noise sd 0.15 (eq 24-25 updates from the uniform prior)."""
    count = rng.poisson(3.0, n_items) + 1
    latent = rng.beta(2.0, 2.0, n_items)
    cap = int(count.max())
    scores = np.clip(latent[:, None] + rng.normal(0.0, 0.15, (n_items, cap)), 0.0, 1.0)
    total = np.where(np.arange(cap)[None, :] < count[:, None], scores, 0.0).sum(axis=1)
    alpha, beta = 1.0 + total, 1.0 + count - total
    return beta_mode(alpha, beta), beta_variance(alpha, beta)


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def verdict(seconds: float, target: float) -> str:
    return f"{seconds:8.3f} s  (target <= {target:g} s: {'PASS' if seconds <= target else 'FAIL'})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="skip N = 1,000,000 and the 1M-row replay")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n, gamma = 5, 0.1
    ok = True

    print("== Selection, one iteration (k = N / n, n = 5, gamma = 0.1)")
    sizes = [10_000] if args.quick else [10_000, 1_000_000]
    for n_items in sizes:
        loc, var = campaign_keys(n_items, rng)
        k = n_items // n
        for pool in ("paper", "all"):
            t = timed(
                lambda loc=loc, var=var, k=k, pool=pool: select_hits(
                    loc, var, HitRequest(hit_size=n, n_hits=k, gamma=gamma, pool=pool), rng
                ),
                repeat=5 if n_items <= 10_000 else 2,
            )
            target = 0.2 if n_items <= 10_000 else 5.0
            ok &= t <= target
            print(f"select_hits          N={n_items:>9,}  pool={pool:<5}  {verdict(t, target)}")
        t = timed(lambda n_items=n_items: first_iteration_hits(n_items, n, rng), repeat=3)
        print(f"first_iteration_hits N={n_items:>9,}               {t:8.3f} s")
        counts = rng.poisson(3.0, n_items)
        t = timed(lambda counts=counts, k=k: select_least_annotated(counts, hit_size=n, n_hits=k, rng=rng), repeat=3)
        print(f"select_least_annot.  N={n_items:>9,}               {t:8.3f} s")
    loc, var = campaign_keys(10_000, rng)
    t = timed(lambda: select_hits_literal(loc, var, HitRequest(hit_size=n, n_hits=2_000, gamma=gamma), rng), repeat=1)
    print(f"select_hits_literal  N={10_000:>9,}  pool=paper  {t:8.3f} s  (O(kN) reference; authors' code ~35 s)")

    if not args.quick:
        print("== Replay of 1,000,000 observations (200,000 HITs of 5 over 10,000 items)")
        n_items, n_obs = 10_000, 1_000_000
        item = np.concatenate([rng.permutation(n_items) for _ in range(n_obs // n_items)]).astype(np.int64)
        score = np.round(rng.random(n_obs) * 100.0) / 100.0  # slider values: ties occur
        group = np.repeat(np.arange(n_obs // n), n)
        for method in (m for m in METHODS if m != "aware"):  # aware is refitted, not replayed (bench_aware.py)
            model = get_model(Hyper(method=method))
            state = model.init_state(n_items)
            t0 = time.perf_counter()
            model.apply(state, item, score, group)
            t = time.perf_counter() - t0
            ok &= t <= 10.0
            print(f"replay {method:<10}                            {verdict(t, 10.0)}")
    print("ALL TARGETS MET" if ok else "SOME TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
