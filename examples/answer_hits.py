"""Simulated annotators for the documentation's evaluation campaign (``docs/guides/fewer-human-scores.md``).

Reads the HITs ``easl next --output hits.csv`` wrote and writes what three annotators would answer, for
``easl ingest``: each HIT goes to one of them, drawn at random; ``careful`` scores the response's true score
(``examples/responses-truth.csv``) plus noise (sd 0.5), ``lenient`` the same one point higher, ``clicker`` a
random score. Scores are whole numbers on 1-6. Run: ``python examples/answer_hits.py hits.csv scores.csv``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd


def answer(hits: pd.DataFrame, truth: pd.Series, rng: np.random.Generator) -> pd.DataFrame:
    """One row per (HIT, response): ``hit_id, item_id, annotator, score``."""
    who = pd.Series(
        rng.choice(["careful", "lenient", "clicker"], size=hits["hit_id"].nunique()), index=hits["hit_id"].unique()
    )
    annotator = who[hits["hit_id"]].to_numpy()
    t = truth[hits["item_id"]].to_numpy()
    noisy = t + rng.normal(0, 0.5, t.size)
    score = np.where(
        annotator == "careful", noisy, np.where(annotator == "lenient", noisy + 1, rng.integers(1, 7, t.size))
    )
    return pd.DataFrame(
        {
            "hit_id": hits["hit_id"],
            "item_id": hits["item_id"],
            "annotator": annotator,
            "score": np.clip(np.round(score), 1, 6),
        }
    )


def main(hits_path: str, out_path: str) -> None:
    hits = pd.read_csv(hits_path)
    truth = pd.read_csv(Path(__file__).with_name("responses-truth.csv")).set_index("id")["truth"]
    seed = int(hits["iteration"].iloc[0]) if len(hits) else 0
    answer(hits, truth, np.random.default_rng(seed)).to_csv(out_path, index=False)


if __name__ == "__main__":
    main(*sys.argv[1:3])
