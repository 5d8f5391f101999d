"""Build ``core/data/wmt23_mqm_ende/ratings.csv`` from Google's WMT23 side-by-side MQM ratings (English-German).

Source: the public repository google/wmt-mqm-human-evaluation (Apache-2.0), file
``generalMT2023/ende/sxs_mqm_generalMT2023_ende.3ratingsPerSegment.tsv.tar.gz`` (commit
cb2424193dfa00e7e94917366c1c72faa3512433): one row per error span marked by a professional translator; every
(system, document, paragraph) was rated by 3 of 10 raters. Run (the tsv extracted from the archive; needs
``sacrebleu``, which is not a dependency of the package)::

    python bench/build_wmt23_mqm.py sxs_mqm_generalMT2023_ende.3ratingsPerSegment.tsv core/data/wmt23_mqm_ende

Human score of a response by a rater: minus the MQM penalty, with the weights of Freitag et al. (2021, section 3.3;
the repository's README): Major 5, Minor 1, Minor Fluency/Punctuation 0.1, Non-translation 25, "Source issue" and
"No-error" 0; rows of the attention checks ("HOTW-test") are left out. The scoring system: sentence chrF
(Popovic 2015; sacrebleu's ``CHRF()`` defaults) of the system's output against the human reference translation
``refA`` of the same paragraph, mapped linearly to the human scale by the least-squares line of the mean human
score on chrF over all responses. The reference's own 104 paragraphs are left out (chrF against itself is 100).
No text is written: ids, scores and chrF only.
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

KEY = ["system", "doc", "docSegId"]


def penalties(tsv: str) -> pd.DataFrame:
    """One row per (system, doc, paragraph, rater): the rater's MQM penalty."""
    d = pd.read_csv(tsv, sep="\t", quoting=csv.QUOTE_NONE, usecols=range(9))
    d = d[d["severity"] != "HOTW-test"]
    sev, cat = d["severity"], d["category"].fillna("")
    w = np.where(sev == "Major", 5.0, np.where(sev == "Minor", 1.0, 0.0))
    w = np.where((sev == "Minor") & (cat == "Fluency/Punctuation"), 0.1, w)
    w = np.where(cat.str.startswith("Non-translation"), 25.0, w)
    w = np.where(cat == "Source issue", 0.0, w)
    out = d.assign(penalty=w).groupby([*KEY, "rater"], as_index=False)["penalty"].sum()
    targets = d.groupby(KEY)["target"].first().map(lambda t: re.sub(r"</?v>", "", str(t)))
    return out.merge(targets.rename("text").reset_index(), on=KEY)


def build(tsv: str, out_dir: str) -> pd.DataFrame:
    """The wide table: one row per MT output, three raters' scores, chrF and the calibrated system score."""
    from sacrebleu.metrics import CHRF

    p = penalties(tsv)
    p["k"] = p.groupby(KEY).cumcount() + 1
    text = p.groupby(KEY)["text"].first()
    ref = text.xs("refA", level="system")
    chrf = CHRF()
    scores = {k: chrf.sentence_score(t, [ref[(k[1], k[2])]]).score for k, t in text.items() if k[0] != "refA"}
    human = p.pivot_table(index=KEY, columns="k", values="penalty").rename(columns=lambda k: f"human_{k}")
    raters = p.pivot_table(index=KEY, columns="k", values="rater", aggfunc="first").rename(
        columns=lambda k: f"rater_{k}"
    )
    wide = (0.0 - human).join(raters).reset_index()
    wide = wide[wide["system"] != "refA"].copy()
    wide["chrf"] = [round(scores[tuple(k)], 4) for k in wide[KEY].to_numpy()]
    mean_h = wide[["human_1", "human_2", "human_3"]].mean(axis=1)
    slope, intercept = np.polyfit(wide["chrf"], mean_h, 1)
    wide = wide.rename(columns={"system": "mt_system"}).assign(system=(intercept + slope * wide["chrf"]).round(4))
    wide = wide.sort_values(["doc", "docSegId", "mt_system"]).reset_index(drop=True)
    wide.insert(0, "response_id", [f"r{i:04d}" for i in range(1, len(wide) + 1)])
    wide = wide.rename(columns={"docSegId": "paragraph"})
    cols = ["response_id", "mt_system", "doc", "paragraph", "system", "chrf"]
    cols += [f"human_{k}" for k in (1, 2, 3)] + [f"rater_{k}" for k in (1, 2, 3)]
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    for k in (1, 2, 3):
        wide[f"human_{k}"] = wide[f"human_{k}"].round(1) + 0.0
    wide[cols].to_csv(Path(out_dir) / "ratings.csv", index=False, float_format="%.4g")
    return wide[cols]


if __name__ == "__main__":
    frame = build(sys.argv[1], sys.argv[2])
    print(frame.shape)
    print(frame[["system", "chrf", "human_1", "human_2", "human_3"]].corr().round(3))
