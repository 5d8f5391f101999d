"""Real ratings answering a real project's HITs: the campaign of ``easl demo`` on the shipped study.

A :class:`ProjectReplay` splits the ratings as a replay does (:func:`core.simulate.replay.split`: per item a random
half held out as the truth, the rest the pool) and answers each HIT that :meth:`core.store.Project.next_hits`
issues with real ratings from the pool (:func:`core.simulate.replay.assign`: one real annotator who rated all the
HIT's items, else a random unused rater per item), ingested with the real annotator ids through
:meth:`core.store.Project.ingest`. Should an item's pool run out (a project is never told which ratings exist), the
item draws again from its whole pool; the demo's budget keeps well below that.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core.simulate.replay import assign, correlations, split
from core.simulate.replay_data import Ratings


class ProjectReplay:
    """The ratings of one split, answering a project's HITs (module docstring).

    Parameters
    ----------
    ratings : Ratings
        Real ratings whose items are the project's items (by id).
    item_ids : sequence of str
        The project's item ids, in its order.
    seed : int
        The split and the stream of annotators (two projects replayed with the same seed meet the same ratings
        while they ask for the same items).
    """

    def __init__(self, ratings: Ratings, item_ids: Any, seed: int) -> None:
        self.ratings = ratings
        self.truth, self.pool = split(ratings, seed)
        self.available = ~np.isnan(self.pool)
        self.rng = np.random.default_rng([seed, 11])
        positions = pd.Index(list(item_ids)).get_indexer(ratings.item_ids)
        if (positions < 0).any() or len(item_ids) != ratings.n_items:
            raise ValueError("the project's items must be the ratings' items")
        self.position = positions  # ratings code -> project position
        self.code = np.empty(ratings.n_items, dtype=np.int64)  # project position -> ratings code
        self.code[positions] = np.arange(ratings.n_items)
        self.item_ids = np.asarray(list(item_ids), dtype=object)
        self.index = pd.Index(self.item_ids)
        self.n_scores = 0

    def answer(self, hits: list[dict[str, Any]], score_range: tuple[float, float]) -> pd.DataFrame:
        """Rows to ingest for ``hits`` (records of :meth:`core.store.Project.next_hits`): ``hit_id, item_id, score,
        annotator``, the score on ``score_range``. HIT by HIT, so that an item in two HITs is answered in both."""
        hit_ids, item_codes, annotators = [], [], []
        for hit in hits:
            codes = self.code[self.index.get_indexer([it["item_id"] for it in hit["items"]])]
            spent = codes[~self.available[codes].any(axis=1)]
            self.available[spent] = ~np.isnan(self.pool[spent])  # its pool ran out: draw again from all of it
            items, anns = assign([codes], self.available, self.rng)
            hit_ids += [hit["hit_id"]] * items.size
            item_codes.append(items)
            annotators.append(anns)
        items = np.concatenate(item_codes) if item_codes else np.zeros(0, np.int64)
        anns = np.concatenate(annotators) if annotators else np.zeros(0, np.int64)
        lo, hi = score_range
        self.n_scores += items.size
        return pd.DataFrame(
            {
                "hit_id": hit_ids,
                "item_id": self.item_ids[self.position[items]],
                "score": lo + (hi - lo) * self.pool[items, anns].astype(np.float64),
                "annotator": self.ratings.annotator_ids[anns],
            }
        )

    def spearman(self, estimates: pd.DataFrame) -> float:
        """Spearman correlation of a project's estimates (``item_id, estimate``) with the held-out truth."""
        codes = self.code[self.index.get_indexer(estimates["item_id"])]
        return correlations(estimates["estimate"].to_numpy(dtype=np.float64), self.truth[codes])[0]
