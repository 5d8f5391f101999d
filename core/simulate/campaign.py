"""One simulated annotation campaign of one method (Sakaguchi & Van Durme 2018, section 5) through the real engine.

Every campaign uses the same code path as a user: :meth:`core.store.Project.create` with the method's
:class:`core.models.Hyper`, then per iteration :meth:`~core.store.Project.next_hits`, simulated annotators
scoring every item of every HIT, :meth:`~core.store.Project.ingest`, and :meth:`~core.store.Project.estimates`.
Only the annotators are simulated.

The settings, the annotators and the oracles are :mod:`core.simulate.annotation`, which compares the methods.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from core.models import Hyper
from core.simulate import measures

if TYPE_CHECKING:
    from core.simulate.annotation import AnnotatorModel, CampaignSettings, Oracle
    from core.store import Project


def match_quality_matrix(
    location: NDArray[Any], variance: NDArray[Any], gamma: float, order: NDArray[Any]
) -> NDArray[Any]:
    """Match quality q(i, j) (eq 11 / 23, :func:`core.selection.match_quality`) for every pair of items, rows and
    columns ordered by ``order`` (the oracle's order, as the paper's Figure 8)."""
    from core.selection import match_quality

    m, v = location[order], variance[order]
    return match_quality(m[:, None], v[:, None], m[None, :], v[None, :], gamma)


def run_campaign(
    oracle: Oracle,
    method: str,
    settings: CampaignSettings,
    annotators: AnnotatorModel,
    rng: np.random.Generator,
    workdir: Path,
    run: int,
    heatmaps: bool = False,
) -> dict[str, Any]:
    """One campaign of one method through the real project file.

    Returns ``{"curve": DataFrame(iteration, n_annotations, annotations_per_item, spearman, pearson),
    "final": final estimates on [0, 1] (item order of the oracle), "heatmaps": {iteration: matrix}}``.
    """
    from core.store import Project

    hyper = Hyper(
        method=method,
        hit_size=settings.hit_size,
        gamma=settings.gamma,
        epsilon=settings.epsilon,
        score_min=0.0,
        score_max=1.0,
        partner_pool=settings.partner_pool,
        hits_per_iteration=settings.hits_per_iteration,
        seed=int(rng.integers(0, 2**31 - 1)),
    )
    items = pd.DataFrame({"item_id": oracle.item_ids, "text": oracle.texts})
    position = pd.Index(oracle.item_ids)
    pool = annotators.draw_pool(rng)
    order = np.argsort(oracle.values, kind="stable")
    path = workdir / f"{method}-run{run}.easl"
    rows, maps = [], {}
    n_scores = 0
    with Project.create(path, items, hyper) as project:
        for it in range(settings.iterations):
            hits = project.next_hits()
            if heatmaps and it in settings.heatmap_iterations and method != "da":
                loc, var = selection_state(project)
                maps[it] = match_quality_matrix(loc, var, settings.gamma, order)
            item_ids = [item["item_id"] for hit in hits for item in hit["items"]]
            hit_ids = [hit["hit_id"] for hit in hits for _ in hit["items"]]
            who = np.repeat(rng.integers(0, annotators.n_annotators, len(hits)), [len(h["items"]) for h in hits])
            latent = oracle.values[position.get_indexer(item_ids)]
            scores = annotators.score(latent, who, pool, rng)
            project.ingest(
                pd.DataFrame(
                    {
                        "item_id": item_ids,
                        "score": scores,
                        "hit_id": hit_ids,
                        "annotator": np.char.add("a", who.astype(str)),
                    }
                ),
                source="simulation",
            )
            n_scores += len(item_ids)
            est = project.estimates().set_index("item_id").loc[oracle.item_ids, "estimate"].to_numpy(dtype=float)
            rows.append(
                {
                    "iteration": it,
                    "n_annotations": n_scores,
                    "annotations_per_item": n_scores / len(oracle.values),
                    "spearman": measures.spearman(oracle.values, est),
                    "pearson": measures.pearson(oracle.values, est),
                }
            )
    return {"curve": pd.DataFrame(rows), "final": est, "heatmaps": maps}


def selection_state(project: Project) -> tuple[NDArray[Any], NDArray[Any]]:
    """The ``(location, variance)`` on [0, 1] that the engine's next selection uses
    (``project.model.selection_keys(project.state())``), per item in the project's item order."""
    location, variance = project.model.selection_keys(project.state())
    return location, variance


def seeded_campaign(
    oracle: Oracle,
    method: str,
    settings: CampaignSettings,
    annotators: AnnotatorModel,
    seed: int,
    workdir: Path | None,
    run: int,
) -> dict[str, Any]:
    """:func:`run_campaign` with its own generator (``seed``) and, without ``workdir``, its own temporary directory
    (so that it can run on another machine)."""
    run_rng = np.random.default_rng(seed)
    if workdir is not None:
        return run_campaign(oracle, method, settings, annotators, run_rng, workdir, run, heatmaps=(run == 0))
    with tempfile.TemporaryDirectory(prefix="easl-sim-") as tmp:
        return run_campaign(oracle, method, settings, annotators, run_rng, Path(tmp), run, heatmaps=(run == 0))
