"""A generated partitioned data set of human ratings and system scores (wide form), for tests and benchmarks.

True scores T ~ N(3.5, 1); each human rating is T + N(0, 0.7) rounded and clipped to 1..6 (the second rating
missing with probability ``missing``); the system score is T + N(0, 0.5) rounded to 2 decimals (so the exact rank
correlations have a bounded table) plus a small offset by subgroup (one of four labels: 0, 0.05, -0.05, 0.02), so
the fairness analyses find an effect. File j uses the generator seeded with
(seed, j), so the data do not depend on how many files are written at once.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


def ratings_frame(n: int, seed: int, part: int = 0, missing: float = 0.0) -> pd.DataFrame:
    """One partition of ``n`` responses (columns h1, h2, model, group)."""
    rng = np.random.default_rng([seed, part])
    t = rng.normal(3.5, 1.0, n)
    h1 = np.clip(np.round(t + rng.normal(0.0, 0.7, n)), 1, 6)
    h2 = np.clip(np.round(t + rng.normal(0.0, 0.7, n)), 1, 6)
    if missing > 0:
        h2[rng.random(n) < missing] = np.nan
    code = rng.integers(0, 4, n)
    model = np.round(t + np.array([0.0, 0.05, -0.05, 0.02])[code] + rng.normal(0.0, 0.5, n), 2)
    group = np.array(["L1", "L2", "L3", "L4"])[code]
    return pd.DataFrame({"h1": h1, "h2": h2, "model": model, "group": group})


def write_partitions(
    directory: str | Path, n_responses: int, n_files: int, *, seed: int = 0, missing: float = 0.0, fmt: str = "parquet"
) -> list[Path]:
    """Write ``n_files`` files ``part-00000.parquet`` (or ``.csv``) holding ``n_responses`` responses in all."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    sizes = np.full(n_files, n_responses // n_files)
    sizes[: n_responses % n_files] += 1
    paths = []
    for j, size in enumerate(sizes.tolist()):
        frame = ratings_frame(size, seed, j, missing)
        path = out / f"part-{j:05d}.{fmt}"
        if fmt == "parquet":
            frame.to_parquet(path, index=False)
        else:
            frame.to_csv(path, index=False)
        paths.append(path)
    return paths
