"""Build ``core/data/mlqe_pe_roen/ratings.csv`` from the MLQE-PE Romanian-English direct assessments (test set).

Source: the public repository sheffieldnlp/mlqe-pe (CC0 1.0), file
``data/direct-assessments/test/ro-en-test.tar.gz`` (commit 2a670a1140416cf80507b5a829659383c878feb8; the
archive is unchanged since commit 27b2fd533bdf4d05ef318db1e49ad72e0ca8de4f, in release v1.0.0): 1,000 Romanian
Wikipedia sentences translated into English by the data set's own NMT model (fairseq), each translation given
six direct-assessment scores (0-100) by human annotators (the annotation is described in Fomicheva et al.,
"MLQE-PE: A Multilingual Quality Estimation and Post-Editing Dataset", LREC 2022, arXiv:2010.04480), and scored
by the NMT model itself. Fetch the repository first (``git clone`` it or take the archive from a snapshot),
then run, with the archive as it is::

    python bench/build_mlqe_pe_roen.py ro-en-test.tar.gz core/data/mlqe_pe_roen

Human scores: the archive's ``scores`` list (the raw 0-100 scores, in the order the source gives; the source
does not say who gave which). The scoring system: ``model_scores``, the NMT model's mean log-probability of the
tokens of its own translation (the "TP" glass-box estimator of Fomicheva et al., "Unsupervised Quality
Estimation for Neural Machine Translation", TACL 8, 2020; it equals the mean of the archive's ``word_probas``
line of the sentence, end-of-sentence token included), mapped linearly to the human scale by
the least-squares line of the mean human score on it over all responses. No text is written: ids, the article
title the sentence comes from, and scores.
"""

from __future__ import annotations

import ast
import csv
import io
import sys
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd

#: Members of the archive read (the tsv and the article of each sentence).
TSV, DOCS = "ro-en/test20.roen.df.short.tsv", "ro-en/test20.doc_ids"


def read_archive(archive: str) -> tuple[pd.DataFrame, pd.Series]:
    """The archive's sentence table and the article title of each sentence (one line each, after a header)."""
    with tarfile.open(archive) as tar:

        def member(name: str) -> bytes:
            f = tar.extractfile(name)
            if f is None:
                raise SystemExit(f"{archive}: no file {name}")
            return f.read()

        table = pd.read_csv(io.BytesIO(member(TSV)), sep="\t", quoting=csv.QUOTE_NONE)
        docs = pd.read_csv(io.BytesIO(member(DOCS)), sep="\t", quoting=csv.QUOTE_NONE)["doc_id"]
    if len(docs) != len(table):
        raise SystemExit(f"{archive}: {len(table)} sentences but {len(docs)} article titles")
    return table, docs


def build(archive: str, out_dir: str) -> pd.DataFrame:
    """The wide table: one row per translation, its six human scores, the model's score and the calibrated one."""
    table, docs = read_archive(archive)
    scores = table["scores"].map(ast.literal_eval)
    k = int(scores.map(len).max())
    human = np.full((len(table), k), np.nan)
    for i, s in enumerate(scores):
        human[i, : len(s)] = s
    if not np.allclose(np.nanmean(human, axis=1), table["mean"]):
        raise SystemExit(f"{archive}: the scores lists do not average to the 'mean' column")
    model = table["model_scores"].to_numpy(dtype=float)
    slope, intercept = np.polyfit(model, np.nanmean(human, axis=1), 1)
    wide = pd.DataFrame(
        {
            "response_id": [f"s{int(i):04d}" for i in table["index"]],
            "doc": docs.to_numpy(),
            "system": np.round(intercept + slope * model, 4),
            "model_score": np.round(model, 6),
        }
    )
    for j in range(k):
        wide[f"human_{j + 1}"] = pd.array(np.where(np.isnan(human[:, j]), np.nan, human[:, j]), dtype="Int64")
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    wide.to_csv(Path(out_dir) / "ratings.csv", index=False)
    return wide


if __name__ == "__main__":
    frame = build(sys.argv[1], sys.argv[2])
    print(frame.shape)
    print(frame.drop(columns=["response_id", "doc"]).astype(float).corr().round(3))
