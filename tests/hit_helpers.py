"""Shared helpers of the HIT-file tests (``tests/test_next_output.py``, ``tests/test_next_columns.py``): items whose
ids and texts need CSV quoting and JSON escapes, and random scores for a set of HITs."""

from __future__ import annotations

import numpy as np
import pandas as pd

N_ITEMS = 503  # not a multiple of the HIT size: iteration 0's last HIT is padded


def tricky_items(n: int = N_ITEMS) -> pd.DataFrame:
    """Items whose ids and texts need CSV quoting and JSON escapes."""
    texts = []
    for k in range(n):
        kind = k % 7
        if kind == 0:
            texts.append(f'say "hello" {k}')
        elif kind == 1:
            texts.append(f"a, b and c {k}")
        elif kind == 2:
            texts.append(f"two\nlines {k}")
        elif kind == 3:
            texts.append(f"größer — 東京 {k} \\ backslash")
        elif kind == 4:
            texts.append("" if k == 4 else f"plain {k}")
        elif kind == 5:
            texts.append(f"tab\there {k}\r\n")
        else:
            texts.append(f"{k}")
    ids = [f'id"{k}' if k % 11 == 0 else f"i,{k}" if k % 13 == 0 else f"item{k}" for k in range(n)]
    return pd.DataFrame({"item_id": ids, "text": texts})


def scores(hits: list[dict], rng: np.random.Generator) -> list[dict]:
    return [
        {"hit_id": h["hit_id"], "item_id": item["item_id"], "score": float(rng.integers(0, 101)), "annotator": "a"}
        for h in hits
        for item in item_list(h)
    ]


def item_list(hit: dict) -> list[dict]:
    items: list[dict] = hit["items"]
    return items
