"""The column builders of ``easl next --output hits.csv`` against the slower ones they replace: HIT ids built with
numpy (``padded_ids``) against ``hit_ids``, NUL-joined strings (``joined_strings``) against the JSON reader
(``strings``), and the file of a new iteration (built from the HITs chosen, the items read by key when they are few)
against the long form read back from the project and written by pandas' route (``core.tables.write_table``)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.models import Hyper
from core.store import Project
from core.store.arrow_columns import joined_strings, padded_ids, strings
from core.store.hit_rows import hit_id_parts, hit_ids
from core.tables import write_table
from tests.test_next_output import scores, tricky_items


@settings(max_examples=60, deadline=None)
@given(iteration=st.integers(0, 10_000), n_hits=st.integers(0, 2_000), repeat=st.integers(1, 4))
def test_padded_ids_are_the_hit_ids(iteration, n_hits, repeat):
    prefix, digits = hit_id_parts(iteration, n_hits)
    built = padded_ids(prefix, np.arange(n_hits), digits, repeat=repeat).to_pylist()
    assert built == [h for h in hit_ids(iteration, n_hits) for _ in range(repeat)]


def test_padded_ids_refuse_numbers_wider_than_the_digits():
    with pytest.raises(ValueError, match="0..99"):
        padded_ids("it1-", np.array([100]), 2)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",))), max_size=30))
def test_joined_strings_read_what_json_reads(values):
    blob = "\0".join(values).encode() if values else None
    array = joined_strings(blob, len(values))
    if any("\0" in v for v in values):  # more NUL bytes than separators: left to the JSON reader
        assert array is None
        return
    assert array is not None
    assert array.to_pylist() == values
    assert array.equals(strings(json.dumps(values, ensure_ascii=False)))


@pytest.mark.parametrize("per_iteration", [None, 3])  # every item read (a scan), or the few of 3 HITs (by key)
def test_new_iteration_file_equals_the_long_form_read_back(tmp_path, per_iteration):
    items = tricky_items(200)
    items.loc[17, "text"] = "a NUL \0 inside"  # read as JSON, not NUL-joined
    rng = np.random.default_rng(3)
    hyper = Hyper(method="easl", hit_size=5, seed=2, hits_per_iteration=per_iteration)
    with Project.create(tmp_path / "p.easl", items, hyper) as p:
        for it in range(1, 4):
            p.ingest(scores(p.next_hits(), rng), source=f"s{it}")
            written = tmp_path / f"new{it}.csv"
            n_hits = p.next_hits_csv(written)
            assert p.iteration() == it
            reference = tmp_path / f"ref{it}.csv"
            write_table(p.open_hits_frame(), reference)
            assert n_hits == len(p.open_hits()) > 0
            assert written.read_bytes() == reference.read_bytes()
            frame = pd.read_csv(written, dtype=str, keep_default_na=False)
            assert len(frame) == 5 * n_hits
