"""The simulated annotators of the annotator-aware study (:mod:`core.simulate.aware_study`) and its truths.

Annotator models (scores clipped to [0, 1]; the research prototype's M1-M5 plus two the model does not assume):

* ``M1`` noise only, sd 0.2;
* ``M2`` offset ``o_a ~ N(0, 0.1)``, noise 0.15;
* ``M3`` M2 plus slope ``s_a ~ U(0.6, 1.4)``;
* ``M4`` M2 with 10% of the annotators scoring uniformly at random;
* ``M5`` item-dependent noise, sd ``U(0.05, 0.3)`` per item;
* ``IX`` M2 plus an item x annotator interaction ``N(0, 0.1)`` fixed per pair;
* ``DRIFT`` M2 whose offsets drift linearly over the campaign, by ``N(0, 0.15)`` from start to end.

The world of a seed (:class:`World`) is drawn once, so every method of the seed meets the same annotators. Truths:
:func:`beta_oracle` (generated) or :func:`load_oracle` (a CSV file).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

ANNOTATOR_MODELS = ("M1", "M2", "M3", "M4", "M5", "IX", "DRIFT")


def beta_oracle(n_items: int = 150) -> NDArray[Any]:
    """A generated truth: the ``(k + 0.5) / n`` quantiles of Beta(2, 2), rescaled to [0, 1]."""
    return _to_unit(stats.beta(2, 2).ppf((np.arange(n_items) + 0.5) / n_items))


def load_oracle(path: str | Path, column: str = "label") -> NDArray[Any]:
    """A truth from a CSV file with a numeric ``column``, rescaled to [0, 1] (e.g. the paper's 150 political
    statements, which are not shipped: their source has no licence)."""
    import pandas as pd

    return _to_unit(pd.read_csv(path)[column].to_numpy(dtype=np.float64))


def _to_unit(z: NDArray[Any]) -> NDArray[Any]:
    """``z`` rescaled to [0, 1]: ``(z - min) / (max - min)``."""
    out: NDArray[Any] = (z - z.min()) / (z.max() - z.min())
    return out


@dataclass(frozen=True)
class World:
    """The simulated annotators of one seed (module docstring)."""

    offset: NDArray[Any]
    slope: NDArray[Any]
    spam: NDArray[Any]
    item_sd: NDArray[Any]
    interaction: NDArray[Any] | None
    drift: NDArray[Any]

    @classmethod
    def make(cls, model: str, n_items: int, n_annotators: int, rng: np.random.Generator) -> World:
        """Draw the annotators of ``model`` (one of :data:`ANNOTATOR_MODELS`)."""
        if model not in ANNOTATOR_MODELS:
            raise ValueError(f"annotator model must be one of {ANNOTATOR_MODELS}, got {model!r}")
        na = n_annotators
        off: NDArray[Any] = np.zeros(na)
        slope: NDArray[Any] = np.ones(na)
        spam: NDArray[Any] = np.zeros(na, dtype=bool)
        sd: NDArray[Any] = np.full(n_items, 0.2)
        ix: NDArray[Any] | None = None
        drift: NDArray[Any] = np.zeros(na)
        if model != "M1" and model != "M5":
            off, sd = rng.normal(0.0, 0.1, na), np.full(n_items, 0.15)
        if model == "M3":
            slope = rng.uniform(0.6, 1.4, na)
        elif model == "M4":
            spam[rng.choice(na, max(1, round(0.1 * na)), replace=False)] = True
        elif model == "M5":
            sd = rng.uniform(0.05, 0.3, n_items)
        elif model == "IX":
            ix = rng.normal(0.0, 0.1, (n_items, na))
        elif model == "DRIFT":
            drift = rng.normal(0.0, 0.15, na)
        return cls(off, slope, spam, sd, ix, drift)

    def scores(
        self, truth: NDArray[Any], items: NDArray[Any], anns: NDArray[Any], progress: float, rng: np.random.Generator
    ) -> NDArray[Any]:
        """Scores of ``items`` by ``anns`` at ``progress`` (0 to 1) through the campaign."""
        x = (
            0.5
            + self.slope[anns] * (truth[items] - 0.5)
            + self.offset[anns]
            + progress * self.drift[anns]
            + rng.standard_normal(items.size) * self.item_sd[items]
        )
        if self.interaction is not None:
            x += self.interaction[items, anns]
        spam = self.spam[anns]
        x[spam] = rng.random(int(spam.sum()))
        out: NDArray[Any] = np.clip(x, 0.0, 1.0)
        return out
