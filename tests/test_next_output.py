"""``easl next``'s HIT files are pinned: the same seed and scores give the same bytes as before the speed-ups of
``easl next`` (the expected digests were computed with the code before them, on the commit after 4e896a8).

Iterations 0, 1 and 2 of an EASL project whose items have quotes, commas, line breaks, non-ASCII text and an empty
text, in long CSV form (``Hits.next_hits_long``, as ``easl next --output hits.csv`` writes it) and as HIT records
(``Hits.next_hits``, the JSONL of ``easl next``); and the long form of open HITs spread over several iterations
(streaming top-ups, read back from the file).
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from core.models import Hyper
from core.store import Project
from tests.hit_helpers import N_ITEMS, scores, tricky_items


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def run_iterations(tmp_path, how: str) -> list[str]:
    """Digests of iterations 0, 1, 2: of the long CSV (``how``: ``"csv"``, written by ``Hits.next_hits_file`` as
    ``easl next --output hits.csv`` does; ``"long"``, by ``Hits.next_hits_long``) or of the JSONL records
    (``"records"``: ``json.dumps`` of ``Hits.next_hits``; ``"jsonl"``: the file ``Hits.next_hits_file`` writes, as
    ``easl next`` does)."""
    out = []
    rng = np.random.default_rng(7)
    with Project.create(tmp_path / f"{how}.easl", tricky_items(), Hyper(method="easl", hit_size=5, seed=3)) as p:
        for it in range(3):
            csv = tmp_path / f"hits{it}.csv"
            if how in ("csv", "jsonl"):
                csv = csv.with_suffix(f".{how}")
                assert p.next_hits_file(csv, how) == (-(-N_ITEMS // 5) if it == 0 else N_ITEMS // 5)
            elif how == "long":
                p.next_hits_long().write_csv(csv)
            hits = p.next_hits()
            if how == "records":
                out.append(digest("".join(json.dumps(h, ensure_ascii=False) + "\n" for h in hits).encode()))
            else:
                out.append(digest(csv.read_bytes()))
            assert p.iteration() == it
            p.ingest(scores(hits, rng), source=f"s{it}")
    return out


# computed before the speed-ups (see the module docstring)
EXPECTED_LONG = ["482dee58f3e166b6", "c5653a00373f5e84", "d81dfa710d8af492"]
EXPECTED_RECORDS = ["3ef85a27a35cdd8e", "a4034cf9d2899671", "bf6387118f8d50cb"]
EXPECTED_STREAMING = "22524dcf393608c4"


@pytest.mark.parametrize("how", ["csv", "long"])
def test_long_csv_of_iterations_0_1_2_is_unchanged(tmp_path, how):
    assert run_iterations(tmp_path, how) == EXPECTED_LONG


@pytest.mark.parametrize("how", ["records", "jsonl"])
def test_hit_records_of_iterations_0_1_2_are_unchanged(tmp_path, how):
    assert run_iterations(tmp_path, how) == EXPECTED_RECORDS


def test_long_csv_of_open_hits_of_several_iterations_is_unchanged(tmp_path):
    rng = np.random.default_rng(11)
    with Project.create(tmp_path / "s.easl", tricky_items(), Hyper(method="easl", hit_size=5, seed=5)) as p:
        p.ingest(scores(p.next_hits(), rng), source="s0")
        assert p.top_up_hits(4) == 4
        first = p.open_hits(every_iteration=True)
        p.ingest(scores(first[:2], rng), source="s1")
        assert p.top_up_hits(6) == 4
        csv = tmp_path / "open.csv"
        p.open_hits_long(every_iteration=True).write_csv(csv)
        assert digest(csv.read_bytes()) == EXPECTED_STREAMING
