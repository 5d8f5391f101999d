"""`easl status` counts live scores from the figures stored with the state when the state reflects the whole log
(no scan of the live index of a large project), and the count is the live table's."""

from __future__ import annotations

import numpy as np
import pytest

from easl_toolkit.core.models import Hyper
from easl_toolkit.core.store import Project
from easl_toolkit.core.store.db import max_seq
from easl_toolkit.core.store.state import stored_figures
from tests.store_helpers import answer, make_items


def _live(p: Project) -> int:
    return int(p.db.conn.execute("SELECT COUNT(*) FROM live").fetchone()[0])


@pytest.mark.parametrize("method", ["easl", "da", "trueskill", "aware"])
def test_status_live_count_equals_the_live_table_after_ingest_supersede_and_retract(tmp_path, method):
    rng = np.random.default_rng(4)
    with Project.create(tmp_path / "p.easl", make_items(30), Hyper(hit_size=3, seed=1, method=method)) as p:
        assert p.status().n_observations == 0 == _live(p)
        hits = p.open_hits()
        p.ingest(answer(hits[:4], rng, with_annotation_id=True), source="a")
        assert p.status().n_observations == _live(p) == 12
        figures = stored_figures(p.db.conn)  # the count status read: stored with the state of the whole log
        assert figures is not None and figures["seq"] == max_seq(p.db.conn) and figures["n_live"] == 12
        item = hits[0]["items"][0]["item_id"]
        again = [
            {
                "item_id": item,
                "score": 3,
                "hit_id": hits[0]["hit_id"],
                "annotator": "ann",
                "annotation_id": f"ann-{hits[0]['hit_id']}",
            }
        ]
        if method in ("easl", "da", "aware"):  # the order-free models take supersedes and retractions
            p.ingest(again, source="a")
            assert p.status().n_observations == _live(p) == 12
            p.retract([f"ann-{hits[1]['hit_id']}"], source="ls")
            assert p.status().n_observations == _live(p) == 9
        p.ingest(answer(hits[4:], rng, annotator="other"), source="b")
        assert p.status().n_observations == _live(p)


def test_a_state_behind_the_log_falls_back_to_counting(tmp_path):
    with Project.create(tmp_path / "p.easl", make_items(12), Hyper(hit_size=3, seed=1)) as p:
        p.ingest(answer(p.open_hits(), np.random.default_rng(0)), source="a")
        with p.transaction():  # the stored figures now describe a log position that is not the last
            p.db.conn.execute("UPDATE meta SET value = json_set(value, '$.n_live', 999) WHERE key = 'state_figures'")
            p.db.conn.execute("UPDATE meta SET value = value - 1 WHERE key = 'state_seq'")
            p.db.conn.execute(
                "UPDATE meta SET value = json_set(value, '$.seq', json_extract(value, '$.seq') - 1) "
                "WHERE key = 'state_figures'"
            )
        assert p.status().n_observations == _live(p) == 12
