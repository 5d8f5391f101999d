"""How the annotator flags of a replay's ``aware`` campaigns compare with each annotator's agreement over all their
ratings (:func:`core.simulate.replay_data.annotator_agreement`): a flag a project manager can trust names an
annotator whose ratings, taken whole, do not follow the others'.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core.simulate.replay_data import Ratings, annotator_agreement

#: Agreement over all ratings at or above which an annotator should never be flagged ``random``.
TRUSTED_AGREEMENT = 0.6
FLAGS = ("random", "noisy", "collapsed")


def flag_table(r: Ratings, diagnostics: pd.DataFrame) -> pd.DataFrame:
    """One row per annotator: ``annotator`` (id), ``ratings`` (all of theirs), ``agreement_all`` (over all their
    ratings), ``campaign_scores`` (mean scores they gave per ``aware`` campaign), and per flag the share of the
    campaigns (seeds) in which the flag was raised; sorted by agreement. Empty when no ``aware`` run was made."""
    if diagnostics is None or diagnostics.empty:
        return pd.DataFrame()
    n_seeds = max(int(diagnostics["seed"].nunique()), 1)
    ann = diagnostics["annotator"].to_numpy(dtype=np.int64)
    na = r.n_annotators
    out = pd.DataFrame(
        {
            "annotator": r.annotator_ids,
            "ratings": np.bincount(r.annotator, minlength=na),
            "agreement_all": annotator_agreement(r),
            "campaign_scores": np.bincount(ann, diagnostics["n_scores"].to_numpy(dtype=np.float64), na) / n_seeds,
        }
    )
    flag = diagnostics["flag"].astype(str).to_numpy()
    for name in FLAGS:
        out[name] = np.bincount(ann, (flag == name).astype(np.float64), na) / n_seeds
    return out.sort_values("agreement_all", kind="stable").reset_index(drop=True)


def flag_summary(table: pd.DataFrame) -> dict[str, Any]:
    """Counts for the report: annotators flagged ``random`` in at least one campaign, those of them whose agreement
    over all ratings is at least :data:`TRUSTED_AGREEMENT`, and the same for ``noisy``."""
    if table.empty:
        return {}
    trusted = table["agreement_all"] >= TRUSTED_AGREEMENT
    out: dict[str, Any] = {"annotators": len(table), "trusted": int(trusted.sum())}
    for name in FLAGS:
        ever = table[name] > 0
        out[f"{name}_ever"] = int(ever.sum())
        out[f"{name}_trusted"] = int((ever & trusted).sum())
        out[f"{name}_mean_per_campaign"] = float(table[name].sum())
    return out
