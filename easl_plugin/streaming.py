"""Streaming mode: keep ``N`` HITs open in Label Studio and top them up as annotations arrive.

Batch mode waits for every HIT of an iteration before selecting the next (Algorithm 1 of Sakaguchi & Van Durme
2018). Streaming mode instead re-selects as soon as a HIT completes, from the current posterior: each new HIT is
Algorithm 1 with one anchor (the highest-variance item not in an open HIT; partners by match quality, eq 11/23),
drawn by ``core.selection.select_hits(..., n_hits=1, exclude=mask)`` where ``mask`` marks every item of every open
HIT, so no item is ever in two open HITs. DA projects use ``select_least_annotated`` the same way.

Each top-up is recorded as a new (small) iteration of the project file so that the engine's HIT bookkeeping,
validation and ``easl verify`` apply unchanged. The iteration is written with ``Project.add_hits`` inside the same
``Project.transaction()`` as the selection, so the state read, the open-item mask and the new HITs are consistent.
"""
from __future__ import annotations

import contextlib

import numpy as np

from core import selection
from core.store import Project
from easl_plugin.client import LabelStudioClient
from easl_plugin.push import push
from label_config.layouts import Layout


def open_item_mask(project: Project) -> tuple[np.ndarray, int]:
    """``(mask, n_open)``: items in any open HIT (all iterations) and the number of open HITs."""
    conn = project.connection
    idx = np.asarray([r[0] for r in conn.execute(
        "SELECT hi.item_idx FROM hit_items hi JOIN hits h ON h.hit_id = hi.hit_id WHERE h.status = 'open'")],
        dtype=np.int64)
    n_open = int(conn.execute("SELECT COUNT(*) FROM hits WHERE status = 'open'").fetchone()[0])
    mask = np.zeros(project.n_items, dtype=bool)
    mask[idx] = True
    return mask, n_open


def select_top_up(project: Project, n_target: int) -> int:
    """Add HITs until ``n_target`` are open (or too few free items remain); returns how many were added.

    One transaction; the generator is ``default_rng([seed, iteration])`` of the new iteration, as in batch mode.
    """
    hyper = project.hyper
    with project.transaction():
        mask, n_open = open_item_mask(project)
        need = n_target - n_open
        if need <= 0 or project.n_items == 0:
            return 0
        iteration = project.iteration() + 1
        rng = np.random.default_rng([hyper.seed, iteration])
        state = project.state()
        rows = []
        for _ in range(need):
            if int((~mask).sum()) < hyper.hit_size:
                break
            if hyper.method == "da":
                hit = selection.select_least_annotated(state["count"], hit_size=hyper.hit_size, n_hits=1, rng=rng,
                                                       exclude=mask)
            else:
                location, variance = project.model.selection_keys(state)
                hit = selection.select_hits(location, variance, hit_size=hyper.hit_size, n_hits=1,
                                            gamma=hyper.gamma, pool=hyper.partner_pool, rng=rng, exclude=mask)
            hit = np.asarray(hit, dtype=np.int64)
            if hit.ndim != 2 or hit.shape[0] == 0 or hit.shape[1] != hyper.hit_size:
                break  # too few free items for a full HIT
            rows.append(hit[0])
            mask[hit[0]] = True
        if not rows:
            return 0
        project.add_hits(np.vstack(rows))
        return len(rows)


def push_streaming(project: Project, client: LabelStudioClient, ls_project_id: int, layout: Layout,
                   n_target: int, gate=None) -> int:
    """Top up to ``n_target`` open HITs and push every open HIT without a task; returns tasks created.
    ``gate`` (the service's write gate) is held while the new HITs are selected."""
    with gate if gate is not None else contextlib.nullcontext():
        select_top_up(project, n_target)
    return push(project, client, ls_project_id, layout, open_hit_records(project))


def open_hit_records(project: Project) -> list[dict]:
    """HIT records of every open HIT, whatever its iteration."""
    iterations = [int(r[0]) for r in project.connection.execute(
        "SELECT DISTINCT iteration FROM hits WHERE status = 'open' ORDER BY iteration")]
    return [h for it in iterations for h in project.hits(it) if h["status"] == "open"]
